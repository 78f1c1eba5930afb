"""``--lens-judge-check``: a second judge grades a seeded sample of answers again; kappa and positional bias reported."""

from __future__ import annotations

from typing import Any

import pytest

from lens_fixtures.openai_server import JudgePolicy, LensPolicy, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")


def run(
    pytester: pytest.Pytester, judge: JudgePolicy, *extra: str, check: bool = True
) -> tuple[pytest.RunResult, dict[str, Any], OpenAITestServer]:
    with OpenAITestServer(LensPolicy(judge=judge)) as server:
        result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            "--lens-judge=llm",
            *(["--lens-judge-check=3"] if check else []),
            f"--lens-llm-base-url={server.base_url}",
            "--lens-llm-cache-mode=off",
            "--lens-json=out.json",
            *QUIET,
            *extra,
        )
    assert_answered(result, 8)
    return result, read_artifact_json(pytester.path / "out.json"), server


def checked(artifact: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in artifact["results"] if "judge_check" in r["scorer_details"]["judge"]]


def test_a_judge_that_reads_the_answers_agrees_with_its_swapped_self(pytester: pytest.Pytester) -> None:
    result, artifact, _ = run(pytester, JudgePolicy())
    sampled = checked(artifact)
    assert len(sampled) == 3  # the seeded sample of --lens-judge-check=3 answers
    pairs = [pair for r in sampled for pair in r["scorer_details"]["judge"]["judge_check"]]
    assert all(pair["first_position"] != pair["second_position"] for pair in pairs)
    agreement = artifact["judge_agreement"]
    assert agreement["answers"] == 3 and agreement["comparisons"] == len(pairs) > 3
    assert agreement["kappa"] == pytest.approx(1.0)
    assert agreement["positional_bias"] == 0.0
    assert agreement["warning"] is None
    result.stdout.fnmatch_lines(
        [
            f"judge check: {len(pairs)} judgments of 3 answers graded again by llm (*positions swapped*); Cohen's kappa 1.00, "
            "exact agreement 100%, positional bias 0% of *"
        ]
    )
    result.stdout.no_fnmatch_line("*WARNING judge check*")


def test_a_judge_that_always_answers_a_is_caught_flipping_with_the_positions(pytester: pytest.Pytester) -> None:
    result, artifact, server = run(pytester, JudgePolicy(always="A"))
    agreement = artifact["judge_agreement"]
    assert agreement["kappa"] < 0.4
    assert agreement["positional_bias"] == 1.0
    assert agreement["positional_comparisons"] == agreement["comparisons"]  # "A" is never a TIE
    assert "below 0.4" in agreement["warning"]
    result.stdout.fnmatch_lines(
        [
            "judge check: * judgments of 3 answers graded again by *; Cohen's kappa -*, exact agreement 0%, positional bias 100% of *",
            "WARNING judge check: Cohen's kappa -* is below 0.4: the judge's verdicts do not reproduce, and 100% of its decided "
            "verdicts follow the position rather than the content",
        ]
    )
    # the second judge's requests: another seed, the other position, sent to the same model
    assert server.count(kind="judge") > agreement["comparisons"]


def test_another_model_checks_the_judge_and_workers_draw_the_same_sample(pytester: pytest.Pytester) -> None:
    result, artifact, server = run(pytester, JudgePolicy(), "--lens-judge-check-model=second-judge", "-n", "2")
    agreement = artifact["judge_agreement"]
    assert agreement["answers"] == 3  # each worker draws the same seeded sample, so the run grades 3 answers again, not 6
    second = [r.body for r in server.requests if r.kind == "judge" and r.body["model"] == "second-judge"]
    assert len(second) == agreement["comparisons"] > 0
    assert {body["seed"] for body in second} == {43}  # the run's seed is 42
    assert "second-judge" in agreement["check"] and agreement["warning"] is None
    result.stdout.fnmatch_lines(["judge check: * graded again by llm (second-judge at *); Cohen's kappa 1.00, *"])


def test_the_check_needs_the_pairwise_llm_judge(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-judge=offline", "--lens-judge-check=5", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lens-judge-check=5: a second judge checks the pairwise LLM judge; it needs --lens-judge=llm*"])


def test_a_plain_run_says_when_its_judge_names_one_position_whatever_was_shown_there(pytester: pytest.Pytester) -> None:
    # Issue 33: a judge that replied "A" to all 60 verdicts it gave went unnoticed in a plain run. The candidate's
    # position is seeded per comparison, so "A" every time while the candidate was shown in A about half the time is
    # the position, not the answers; no second judge is needed to see it.
    result, artifact, _ = run(pytester, JudgePolicy(always="A"), check=False)
    assert artifact["judge_agreement"] is None
    judgments = [j for r in artifact["results"] for j in r["scorer_details"]["judge"]["judgments"] if "winner" in j]
    shown_in_a = sum(j["candidate_position"] == "A" for j in judgments)
    result.stdout.fnmatch_lines(
        [
            f"WARNING judge: {len(judgments)} of the judge's {len(judgments)} decided verdicts named position A, while the "
            f"candidate was shown in A in {shown_in_a} of them: the verdicts follow the position, not the answers, and the "
            "judged metrics measure the judge; check it with --lens-judge-check=N"
        ]
    )


def test_a_plain_run_with_a_judge_that_reads_the_answers_warns_of_nothing(pytester: pytest.Pytester) -> None:
    result, _, _ = run(pytester, JudgePolicy(), check=False)
    result.stdout.no_fnmatch_line("*WARNING judge*")
