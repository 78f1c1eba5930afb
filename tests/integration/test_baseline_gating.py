"""Saved runs, baselines and gates, end to end through pytester (the verdict a pull request gets)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_lens.plugin import options
from pytest_lens.records.rows import read_artifact_json
from tests.support import assert_answered

NO_CACHE = ("-p", "no:cacheprovider")
DEGRADED = "bm25=lens_fixtures.adapters.degraded:DropsBestBM25Adapter"
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "jasper", "krypton", "lagoon"]


def needle_dataset(path: Path, count: int = 12, scope_id: str = "needles") -> Path:
    """``count`` questions, each answered by one episode that BM25 ranks first; the other episodes share only filler words.

    Losing the best search result therefore loses every question's evidence.
    """
    words = WORDS[:count]
    episodes = [
        {
            "episode_id": f"n{i:02d}",
            "scope_id": scope_id,
            "timestamp": f"2025-02-{i + 1:02d}T08:00:00",
            "text": f"## 2025-02-{i + 1:02d} Maintenance log\n- Sensor {word} logged fault code {word.upper()}-{i}{i} at the {word} site.",
            "meta": {},
        }
        for i, word in enumerate(words)
    ]
    questions = [
        {
            "question_id": f"needle_{word}",
            "scope_id": scope_id,
            "checkpoint_after": len(words),
            "question_type": "longitudinal",
            "prompt": f"Which fault code did the {word} sensor log?",
            "ground_truth": {
                "canonical_answer": f"{word.upper()}-{i}{i}",
                "required_evidence_refs": [f"n{i:02d}"],
                "key_facts": [f"{word.upper()}-{i}{i}"],
            },
        }
        for i, word in enumerate(words)
    ]
    path.write_text(json.dumps({"version": "0.1.0", "scopes": [{"scope_id": scope_id, "episodes": episodes}], "questions": questions}))
    return path


@pytest.fixture
def needles(pytester: pytest.Pytester) -> str:
    """Twelve needle questions: a degraded adapter regresses on all of them (exact one-sided p = 2**-12)."""
    return f"{options.DATASET}={needle_dataset(pytester.path / 'needles.json')}"


@pytest.fixture
def few_needles(pytester: pytest.Pytester) -> str:
    """Six needle questions: still a significant regression (p = 2**-6 = 0.016), half the run time."""
    return f"{options.DATASET}={needle_dataset(pytester.path / 'few.json', count=6)}"


def comparison_row(text: str) -> str:
    """The first adapter row of the baseline comparison table."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("adapter") and " baseline " in line)
    return lines[header + 1]


def saved_runs(pytester: pytest.Pytester) -> list[Path]:
    return sorted((pytester.path / ".lens").glob("*/*.json"))


def test_a_degraded_adapter_fails_against_the_healthy_baseline_and_the_healthy_one_passes(pytester: pytest.Pytester, needles: str) -> None:
    saved = pytester.runpytest("--lens-adapter=bm25", needles, f"{options.SAVE}=healthy", *NO_CACHE)
    assert saved.ret == 0
    [path] = saved_runs(pytester)
    assert re.fullmatch(r".*-64bit/0001_healthy\.json|.*bit/0001_healthy\.json", str(path))
    saved.stdout.fnmatch_lines([f"saved run: {path}"])
    stored = read_artifact_json(path)
    assert stored["machine"]["python_version"] and stored["run"]["datasets"][0]["sha256"]
    assert len(stored["results"]) == 12 and stored["statistics"]["adapters"]["bm25"]["composite"]["low"] is not None

    degraded = pytester.runpytest(f"--lens-adapter={DEGRADED}", needles, f"{options.BASELINE}=healthy", options.COMPARE_FAIL, *NO_CACHE)
    assert_answered(degraded, 12)  # every question ran; the gate fails the session
    assert degraded.ret == pytest.ExitCode.TESTS_FAILED
    degraded.stdout.fnmatch_lines(
        [
            f"compared with baseline 0001_healthy ({path}; saved *",
            "  one-sided paired t-test over 12 questions (t(11)) of the mean drop, paired by question, Holm over 1 adapter(s), "
            "alpha 0.05; MDE*",
            "adapter * n * baseline * this run * delta [[]CI[]] * MDE * drop <= * p (Holm) * effect r * changed * result",
            # The retrieval score (the headline without a judge): the needle was ranked first, now it is never returned.
            "bm25 * 12 * 1.000 * 0.000 * -1.000 [[]-1.000, -1.000[]] * 2.4e-04 * -1.00 * 12▼ 0▲ * ▼ regression",
            "  bm25: largest drops: needle_amber -1.000, needle_basalt -1.000, needle_cobalt -1.000",
            "LENS gates:",
            "  FAIL  --lens-compare-fail: vs baseline 0001_healthy: bm25 retrieval_score 1.000 -> 0.000 (-1.000): "
            "regression p=2.4e-04 (one-sided paired t-test over 12 questions (t(11)), Holm) < alpha 0.05*",
            "LENS verdict: FAIL - --lens-compare-fail: *regression p=2.4e-04*",
        ]
    )

    healthy = pytester.runpytest("--lens-adapter=bm25", needles, f"{options.BASELINE}=healthy", options.COMPARE_FAIL, *NO_CACHE)
    assert healthy.ret == pytest.ExitCode.OK
    healthy.stdout.fnmatch_lines(
        [
            "bm25 * 12 * 1.000 * 1.000 * +0.000 [[]+0.000, +0.000[]] * 1.000 * +0.00 * 0▼ 0▲ * no significant change",
            "  pass  --lens-compare-fail: no significant regression vs baseline 0001_healthy (alpha 0.05; 1 adapter(s) compared)*",
            "LENS verdict: PASS",
        ]
    )
    assert "warning:" not in healthy.stdout.str()


def test_on_the_real_scope_a_small_drop_is_not_significant_but_max_drop_catches_it(
    pytester: pytest.Pytester, lens_scope_path: Path
) -> None:
    # About the paper's composite: dropping the top hit, rarely evidence on this scope, moves it on a few questions.
    data, composite = f"{options.DATASET}={lens_scope_path}", "--lens-headline=composite"
    baseline = pytester.path / "main.json"
    assert pytester.runpytest("--lens-adapter=bm25", data, composite, f"--lens-json={baseline}", *NO_CACHE).ret == 0
    gate = (f"{options.BASELINE}={baseline.name}", options.COMPARE_FAIL, f"{options.ALPHA}=0.01")

    result = pytester.runpytest(f"--lens-adapter={DEGRADED}", data, composite, *gate, f"{options.MAX_DROP}=0.005", *NO_CACHE)
    text = result.stdout.str()
    row = comparison_row(text)
    # The t-test of the mean drop (one-sided p about 0.05) is not significant at alpha 0.01 ...
    assert row.endswith("▼ drop over --lens-max-drop (no significant change)")
    changed = int(re.search(r"(\d+)▼ 0▲", row).group(1))  # type: ignore[union-attr]
    assert 0 < changed < 5  # losing the top hit costs BM25 a required ref on only a few of the 24 questions
    # ... the signed-rank line beside it says how few moved (it could not go below 2**-changed).
    assert f"  bm25: {changed} question(s) fell, 0 rose (Wilcoxon signed-rank, one-sided p={0.5**changed:.3f}" in text
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... but the composite fell by more than --lens-max-drop
    result.stdout.fnmatch_lines(
        ["LENS verdict: FAIL - --lens-compare-fail: vs baseline main.json: bm25 composite 0.813 -> 0.* > --lens-max-drop=0.005*"]
    )


def test_the_gate_runs_on_the_xdist_controller(pytester: pytest.Pytester, few_needles: str) -> None:
    pytest.importorskip("xdist")
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    args = ("-n", "2", f"--lens-adapter={DEGRADED}", few_needles, f"{options.BASELINE}=main", options.COMPARE_FAIL, *NO_CACHE)
    result = pytester.runpytest(*args)
    assert_answered(result, 6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["bm25 * 6 * 1.000 * 0.000 * -1.000 * 0.016 *▼ regression", "LENS verdict: FAIL - --lens-compare-fail:*"])
    assert len(saved_runs(pytester)) == 1  # no save asked: none written, by the controller or a worker


def test_fail_under_sets_the_exit_status(pytester: pytest.Pytester, few_needles: str) -> None:
    # The threshold is on the headline: the retrieval score without a judge, the composite when asked for.
    passing = pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.FAIL_UNDER}=0.2", *NO_CACHE)
    assert passing.ret == 0
    passing.stdout.fnmatch_lines(["  pass  --lens-fail-under=0.2: every retrieval_score >= 0.2 (lowest: bm25 1.000)"])
    failing = pytester.runpytest(f"--lens-adapter={DEGRADED}", few_needles, f"{options.FAIL_UNDER}=0.2", *NO_CACHE)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines(
        [
            "  FAIL  --lens-fail-under=0.2: bm25 retrieval_score 0.000 < 0.2",
            "LENS verdict: FAIL - --lens-fail-under=0.2: bm25 retrieval_score 0.000 < 0.2",
        ]
    )
    composite = pytester.runpytest(
        f"--lens-adapter={DEGRADED}", few_needles, f"{options.FAIL_UNDER}=0.9", "--lens-headline=composite", *NO_CACHE
    )
    assert composite.ret == pytest.ExitCode.TESTS_FAILED
    composite.stdout.fnmatch_lines(["  FAIL  --lens-fail-under=0.9: bm25 composite 0.758 < 0.9"])


def test_a_baseline_measured_differently_is_refused_unless_the_difference_is_accepted(pytester: pytest.Pytester, few_needles: str) -> None:
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    # pytest.exit from pytest_configure ends an in-process pytester run with an internal error: a real process shows it.
    refused = pytester.runpytest_subprocess("--lens-adapter=bm25", few_needles, "--lens-budget=4k", f"{options.BASELINE}=main", *NO_CACHE)
    assert refused.ret == 2  # before any question ran
    refused.stderr.fnmatch_lines(
        [
            f"*{options.BASELINE}=main: refused, the runs are unlike: budget differs: this run 4k (*), baseline 16k (*)*"
            f"pass {options.ACCEPT_UNLIKE}=budget to compare anyway*"
        ]
    )
    assert "passed" not in refused.stdout.str()
    result = pytester.runpytest(
        "--lens-adapter=bm25", few_needles, "--lens-budget=4k", f"{options.BASELINE}=main", f"{options.ACCEPT_UNLIKE}=budget", *NO_CACHE
    )
    result.stdout.fnmatch_lines(
        [
            "  warning: budget differs: this run 4k (*), baseline 16k (*) - compared only because this difference was accepted",
            "bm25 * 0 * - * not in baseline",
            "  in the baseline but not in this run: bm25",
            "  (this comparison does not gate the run; add --lens-compare-fail to fail on a regression)",
            f"LENS verdict: PASS ?compared with an unlike baseline 0001_main, accepted by {options.ACCEPT_UNLIKE}=budget: "
            "budget differs: *]",
        ]
    )
    assert result.ret == 0  # not gating


def test_a_difference_that_does_not_change_scores_is_warned_about_not_refused(pytester: pytest.Pytester, few_needles: str) -> None:
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    result = pytester.runpytest("--lens-adapter=bm25", few_needles, "--lens-seed=7", f"{options.BASELINE}=main", *NO_CACHE)
    result.stdout.fnmatch_lines(["  warning: seed differs: this run 7, baseline 42 (the seed draws another sample*", "LENS verdict: PASS"])
    assert result.ret == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((options.COMPARE_FAIL,), "*--lens-compare-fail needs a baseline: add --lens-baseline=NAME|PATH*"),
        (
            (f"{options.BASELINE}=nosuch",),
            "*--lens-baseline: no saved run 'nosuch' under * (saved: none); save one with --lens-save=nosuch*",
        ),
        ((f"{options.BASELINE}=missing.json",), "*--lens-baseline: baseline file 'missing.json' does not exist*"),
        ((f"{options.SAVE}=../up",), "*--lens-save: '../up': use letters, digits*"),
        ((f"{options.ALPHA}=1",), "*--lens-alpha: must lie strictly between 0 and 1, got '1'*"),
        ((f"{options.FAIL_UNDER}=2",), "*--lens-fail-under: must be a number between 0 and 1, got '2'*"),
    ],
)
def test_bad_gate_options_are_usage_errors(pytester: pytest.Pytester, few_needles: str, args: tuple[str, ...], message: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", few_needles, *args, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_junit_xml_carries_per_question_scores_with_the_default_family(pytester: pytest.Pytester, few_needles: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", few_needles, "--junitxml=junit.xml", *NO_CACHE)
    assert result.ret == 0
    root = ET.parse(pytester.path / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 6
    properties = {p.get("name"): p.get("value") for p in cases[0].iter("property")}
    assert properties["lens.question"] == "needle_amber" and properties["lens.composite"] == "1"
    assert properties["lens.metric.evidence_coverage"] == "1" and properties["lens.gated"] == "false"
    assert "lens_result" not in properties  # the full record stays in --lens-json, not in the XML
    assert "junit_family" not in result.stdout.str() + result.stderr.str()  # no xunit2 incompatibility warning


def test_two_adapters_are_compared_pairwise_with_kendalls_w_across_scopes(pytester: pytest.Pytester, few_needles: str) -> None:
    more = needle_dataset(pytester.path / "more.json", count=6, scope_id="needles_2")
    result = pytester.runpytest(
        "--lens-adapter=bm25", f"--lens-adapter=worse={DEGRADED.split('=')[1]}", "--lens-adapter=null", few_needles,
        f"{options.DATASET}={more}", *NO_CACHE,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # null is hard-gated
    result.stdout.fnmatch_lines(
        [
            "adapters compared (paired by question; two-sided paired t-test over 12 questions (t(11)) of the mean difference, "
            "Holm over 3 pair(s); *",
            "pair * n * first * second * delta [[]CI[]] * MDE * p (Holm) * effect r * changed * result",
            "bm25 vs worse * 12 * 1.000 * 0.000 * -1.000 * -1.00 * 12▼ 0▲ * ▼ worse lower",
            "bm25 vs null * 12 * 1.000 * 0.000 *▼ null lower",
            # Returning everything but the evidence ranks no required episode, as returning nothing does.
            "worse vs null * 12 * 0.000 * 0.000 * +0.000 *no significant difference",
            "Kendall's W across 2 scopes (16k, 3 adapters): W=1.00, Friedman chi2=4.00, df=2, p=0.135 - no significant agreement*",
        ]
    )


def _run_colour(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data: str, env: dict[str, str]) -> str:
    monkeypatch.delenv("PY_COLORS", raising=False)  # pytester sets PY_COLORS=0
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest(f"--lens-adapter={DEGRADED}", data, f"{options.BASELINE}=main", *NO_CACHE)
    return result.stdout.str()


def test_regressions_are_red_unless_no_color(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, few_needles: str) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    coloured = _run_colour(pytester, monkeypatch, few_needles, {"FORCE_COLOR": "1"})
    row = next(line for line in coloured.splitlines() if "bm25 " in line and "regression" in line)
    assert row.startswith("\x1b[31m")  # red
    plain = _run_colour(pytester, monkeypatch, few_needles, {"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "▼ regression" in plain  # the arrow and the word carry the meaning without colour


def test_the_same_code_under_another_hash_seed_is_no_change(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline comparison is only as good as the agent is deterministic: set order must not change any score.

    (The offline agent once summed sentence scores in set order; on the bundled data two hash seeds
    then picked different sentences and fact_recall moved between identical runs.)
    """
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    assert pytester.runpytest_subprocess("--lens-adapter=bm25", f"{options.SAVE}=one", *NO_CACHE).ret == 0
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    other = pytester.runpytest_subprocess(
        "--lens-adapter=bm25", f"{options.BASELINE}=one", options.COMPARE_FAIL, f"{options.MAX_DROP}=0", "--lens-json=two.json", *NO_CACHE
    )
    assert other.ret == 0
    [saved] = saved_runs(pytester)
    first = {r["question_id"]: (r["answer"], r["metrics"]) for r in read_artifact_json(saved)["results"]}
    second = {r["question_id"]: (r["answer"], r["metrics"]) for r in read_artifact_json(pytester.path / "two.json")["results"]}
    assert first == second


INTERRUPTING_MEMORY = """
import os
import signal
import time

from lens_fixtures.adapters.bm25 import BM25Adapter


class InterruptedAtEmber(BM25Adapter):
    # Ctrl-C while the fifth needle question (ember) is answered (a KeyboardInterrupt the adapter raises itself is
    # its fault, not an interrupt).

    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(2)
        return super().search(query, filters, limit)
"""


def test_an_interrupted_save_does_not_become_the_baseline(pytester: pytest.Pytester, few_needles: str, ctrl_c: None) -> None:
    # Issue 15, defect 3: Ctrl-C during --lens-save=main wrote 0002_main with the questions answered so far, which then
    # *was* main: the next --lens-compare-fail compared those few questions and passed.
    pytester.makepyfile(interrupting_memory=INTERRUPTING_MEMORY)
    pytester.syspathinsert()
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    interrupted = pytester.runpytest(
        "--lens-adapter=bm25=interrupting_memory:InterruptedAtEmber",
        few_needles,
        f"{options.SAVE}=main",
        "--lens-json=run.json",
        *NO_CACHE,
        no_reraise_ctrlc=True,  # the interrupt ends the inner run only
    )
    assert interrupted.ret == pytest.ExitCode.INTERRUPTED
    interrupted.stdout.fnmatch_lines(
        ["could not save the run (main): not saved as 'main': the run is incomplete (2 of 6 selected questions have no result)*"]
    )
    assert [path.name for path in saved_runs(pytester)] == ["0001_main.json"]
    assert len(read_artifact_json(pytester.path / "run.json")["results"]) == 4  # what did run survives in the artifact
    # main is still the complete run: every question is compared.
    compared = pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.BASELINE}=main", options.COMPARE_FAIL, *NO_CACHE)
    assert compared.ret == 0
    compared.stdout.fnmatch_lines(["*pass  --lens-compare-fail: no significant regression vs baseline 0001_main*1 adapter(s) compared)*"])


def test_a_comparison_covering_fewer_questions_than_either_run_fails_the_gate(pytester: pytest.Pytester, few_needles: str) -> None:
    # A baseline of 2 questions against a run of 6 (and the other way round) compares 2 questions: without
    # --lens-compare-partial that is not a pass.
    two = ("-k", "amber or basalt")
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, *two, f"{options.SAVE}=two", *NO_CACHE).ret == 0
    assert pytester.runpytest("--lens-adapter=bm25", few_needles, f"{options.SAVE}=six", *NO_CACHE).ret == 0
    for baseline, args, gap in [
        ("two", (), "4 question(s) of this run not in the baseline"),
        ("six", two, "4 baseline question(s) not in this run"),
    ]:
        run = pytester.runpytest(
            "--lens-adapter=bm25", few_needles, *args, f"{options.BASELINE}={baseline}", options.COMPARE_FAIL, *NO_CACHE
        )
        assert run.ret == pytest.ExitCode.TESTS_FAILED
        run.stdout.fnmatch_lines(
            [f"*FAIL  --lens-compare-fail: vs baseline 0*_{baseline}: partial comparison, bm25: {gap} (pass --lens-compare-partial *)"]
        )
        allowed = pytester.runpytest(
            "--lens-adapter=bm25",
            few_needles,
            *args,
            f"{options.BASELINE}={baseline}",
            options.COMPARE_FAIL,
            options.COMPARE_PARTIAL,
            *NO_CACHE,
        )
        assert allowed.ret == 0
        allowed.stdout.fnmatch_lines([f"*pass  --lens-compare-fail: *partial comparison allowed by --lens-compare-partial: bm25: {gap})"])
