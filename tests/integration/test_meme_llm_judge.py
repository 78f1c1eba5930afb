"""MEME judged by the LLM judge (``--lens-judge=llm``) through pytest and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.openai_server import ChatRequest, LensPolicy, MemeJudgePolicy, OpenAITestServer, Reply
from lens_fixtures.openai_server.policies import MemePrompt
from pytest_lens.records.rows import read_artifact_json

#: The inner runs need neither the cache provider nor hypothesis (whose import costs seconds per in-process run).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
#: The bundled MEME data: 4 episodes, 52 probes (20 before-probes, 4 of them Exact Recall after-probes).
PROBES, LLM_JUDGED = 52, 48


def meme_args(server: OpenAITestServer, *extra: str, json_name: str = "out.json") -> list[str]:
    return [
        "--lens-suite=meme",
        "--lens-adapter=bm25",
        "--lens-judge=llm",
        "--lens-judge-model=scripted",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-retries=0",
        f"--lens-json={json_name}",
        *QUIET,
        *extra,
    ]


def meme_section(stdout: str) -> list[str]:
    """The MEME section of the summary, from its title to the gates."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("MEME: "))
    end = next(i for i, line in enumerate(lines) if line == "LENS gates:")
    return lines[start:end]


def meme_scores(path: Path) -> dict[str, Any]:
    artifact = read_artifact_json(path)
    return {
        "results": {r["question_id"]: (r["answer"], r["metrics"], r["scorer_details"]["meme"], r["judge"]) for r in artifact["results"]},
        "summary": artifact["suite_summaries"]["meme"],
    }


def test_record_then_replay_gives_identical_meme_tables_without_any_request(pytester: pytest.Pytester) -> None:
    with OpenAITestServer() as server:
        base_url = server.base_url
        record = pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=record", json_name="record.json"))
        record.assert_outcomes(passed=PROBES)
        assert server.count(kind="meme_judge") == server.count() == LLM_JUDGED  # exact recall is a substring match
        server.reset()
        replay = pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=replay", json_name="replay.json"))
        replay.assert_outcomes(passed=PROBES)
        assert server.count() == 0
    assert record.ret == replay.ret == pytest.ExitCode.OK
    section = meme_section(record.stdout.str())
    assert section == meme_section(replay.stdout.str())
    agent = next(line for line in section if line.startswith("  agent: "))
    assert agent.endswith(
        "; judge: llm (scripted at " + base_url + "; MEME per-task prompts, JSON verdicts at temperature 0; ER by substring match)"
    )
    # The suite's answers are judged by a model: its own score heads the section, the retrieval score beside it.
    assert section[1].startswith("  headline: MEME overall = ") and section[2].startswith("  beside it: retrieval = ")
    record.stdout.fnmatch_lines(
        [
            "agent: offline *; judge: meme llm (see each suite's section)",
            f"judge failures (questions with a metric left absent): meme:bm25 0/{PROBES}",
            f"llm requests: {LLM_JUDGED} (cache record, *: 0 hits, {LLM_JUDGED} misses); http requests {LLM_JUDGED}, *",
        ]
    )
    replay.stdout.fnmatch_lines([f"llm requests: {LLM_JUDGED} (cache replay, *: {LLM_JUDGED} hits, 0 misses); http requests 0, *"])
    recorded, replayed = meme_scores(pytester.path / "record.json"), meme_scores(pytester.path / "replay.json")
    assert replayed == recorded
    details = [meme for _, _, meme, _ in recorded["results"].values()]
    assert {d["judge"] for d in details if d["task"] != "exact_recall"} == {"llm"}
    assert {d["judge"] for d in details if d["task"] == "exact_recall"} == {"mechanical"}
    assert {judge for *_, judge in recorded["results"].values()} == {"llm"}
    run = read_artifact_json(pytester.path / "record.json")["run"]
    assert run["suite_judges"]["meme"]["name"] == "llm"


def test_the_mechanical_policy_scores_exactly_like_the_mechanical_judges(pytester: pytest.Pytester) -> None:
    with OpenAITestServer() as server:
        pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=off", json_name="llm.json")).assert_outcomes(passed=PROBES)
    offline = pytester.runpytest("--lens-suite=meme", "--lens-adapter=bm25", "--lens-json=offline.json", *QUIET)
    offline.stdout.fnmatch_lines(
        ["agent: offline *; judge: meme mechanical (see each suite's section)", "  agent: offline *; judge: mechanical (offline)"]
    )
    by_llm, mechanical = meme_scores(pytester.path / "llm.json"), meme_scores(pytester.path / "offline.json")
    assert by_llm["summary"]["bm25"]["metrics"] == mechanical["summary"]["bm25"]["metrics"]
    assert {qid: r[1] for qid, r in by_llm["results"].items()} == {qid: r[1] for qid, r in mechanical["results"].items()}


def test_the_trivial_pass_filter_applies_to_llm_verdicts(pytester: pytest.Pytester) -> None:
    def never_knew_before(request: ChatRequest) -> Reply:
        """Every before-probe fails, every after-probe passes: all filtered passes are trivial."""
        prompt = MemePrompt.parse(request.first_user)
        if prompt.kind == "aggregation":
            results = [{"value": value, "present": True} for value in prompt.values["Values that must all be present"]]
            return Reply(content=json.dumps({"results": results, "correct": True, "reason": "All there."}))
        return Reply(content=json.dumps({"correct": prompt.kind != "before", "reason": "Scripted."}))

    with OpenAITestServer(LensPolicy(meme_judge=never_knew_before)) as server:
        result = pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=off"))
    result.assert_outcomes(passed=PROBES)
    result.stdout.fnmatch_lines(
        [
            "adapter *n *score *ER *Agg *Tr *Del *Cas *Abs *before*",
            "bm25 *52 *0.500 *1.000 *1.000 *1.000 *0.000 *0.000 *0.000 *0.000 *",  # Del/Cas/Abs: raw 1.0, credited 0
            "bm25 *Del *4 *0 *4 *0 *0 *1.000 *0.000 *0",
            "bm25 *Cas *8 *0 *8 *0 *0 *1.000 *0.000 *0",
            "bm25 *Abs *8 *0 *8 *0 *0 *1.000 *0.000 *0",
        ]
    )


def test_unusable_verdicts_are_recorded_failures_that_flag_the_run(pytester: pytest.Pytester) -> None:
    # Every before-probe's verdict is prose, also after the repair request: 20 probes stay unjudged.
    with OpenAITestServer(LensPolicy(meme_judge=MemeJudgePolicy(flaw="prose", flawed_kinds=("before",)))) as server:
        result = pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=off"))
        assert server.count(kind="meme_judge") == LLM_JUDGED + 20  # one repair request each
    result.assert_outcomes(passed=PROBES)  # the answers were given; their MEME verdicts are what is missing
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "judge failures (questions with a metric left absent): meme:bm25 20/52",
            "bm25 *52 *0.333 *1.000 *0.000 *0.000 *- *- *- *- *",  # no before-probe judged: Del/Cas/Abs cannot be credited
            "  left out, their before-probe's judgment failed (neither credited nor penalised): bm25 Del 4, bm25 Cas 8, bm25 Abs 8",
            "LENS verdict: FAIL - --lens-judge-max-failures=0.05: meme:bm25: judge failed on 20 of 52 questions (38%)*",
        ]
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    failed = [r for r in artifact["results"] if r["scoring_failures"]]
    assert len(failed) == 20
    assert all(r["question_id"].endswith("_before") and "meme_pass" not in r["metrics"] for r in failed)
    assert all(r["scoring_failures"][0].startswith("meme: meme_pass: no usable MEME verdict after 2 attempts") for r in failed)
    assert artifact["suite_summaries"]["meme"]["bm25"]["scoring_failures"] == 20

    with OpenAITestServer(LensPolicy(meme_judge=MemeJudgePolicy(flaw="prose", flawed_kinds=("before",)))) as server:
        tolerant = pytester.runpytest(*meme_args(server, "--lens-llm-cache-mode=off", "--lens-judge-max-failures=50%"))
    assert tolerant.ret == pytest.ExitCode.OK
