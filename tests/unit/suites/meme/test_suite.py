from __future__ import annotations

import pytest

from pytest_lens.records.results import QuestionResult
from pytest_lens.suites.base import SuiteReport, summarize_suite
from pytest_lens.suites.meme.suite import BEFORE_UNJUDGED, MEME_SUITE, meme_metrics, pair_probes


def result(qid: str, task: str, phase: str, entity: str, passed: bool, scope: str = "s1", adapter: str = "bm25") -> QuestionResult:
    return QuestionResult(
        adapter=adapter,
        scope_id=scope,
        checkpoint=3 if phase == "before" else 5,
        question_id=qid,
        question_type=task,
        category="other",
        budget="16k",
        agent="offline",
        suite="meme",
        prompt="?",
        metrics={"meme_pass": float(passed)},
        composite=float(passed),
        gated=False,
        scorer_details={"meme": {"task": task, "phase": phase, "entity": entity, "passed": passed}},
    )


def run() -> list[QuestionResult]:
    return [
        # Cascade: before pass + after pass -> real; before fail + after pass -> trivial.
        result("c1b", "cascade", "before", "reviewer", True),
        result("c1a", "cascade", "after", "reviewer", True),
        result("c2b", "cascade", "before", "approver", False),
        result("c2a", "cascade", "after", "approver", True),
        # Absence: knew but failed, never knew.
        result("a1b", "absence", "before", "grocer", True),
        result("a1a", "absence", "after", "grocer", False),
        result("a2b", "absence", "before", "trainer", False),
        result("a2a", "absence", "after", "trainer", False),
        # Deletion without its before-probe (e.g. deselected by -k): unpaired, not credited.
        result("d1a", "deletion", "after", "pet", True),
        result("er", "exact_recall", "after", "payload", True),
        result("tr", "tracking", "after", "car", False),
        result("agg", "aggregation", "after", "hobby", True),
    ]


def test_pairing_classifies_each_filtered_after_probe() -> None:
    kinds = {p.after.question_id: (p.pass_type, p.before_passed) for p in pair_probes(run())}
    assert kinds == {
        "c1a": ("real", True),
        "c2a": ("trivial", False),
        "a1a": ("knew_but_failed", True),
        "a2a": ("never_knew", False),
        "d1a": ("trivial", None),
    }


def test_pairing_never_crosses_scopes_or_adapters() -> None:
    results = [
        result("b", "cascade", "before", "reviewer", True, scope="s1"),
        result("a", "cascade", "after", "reviewer", True, scope="s2"),
        result("b2", "cascade", "before", "reviewer", True, adapter="other"),
    ]
    assert [p.before_passed for p in pair_probes(results)] == [None]


def test_headline_credits_only_real_passes_for_filtered_tasks() -> None:
    metrics = meme_metrics(run())
    assert metrics["meme_cas"] == 0.5  # real 1 of 2; the trivial pass earns nothing
    assert metrics["meme_cas_raw"] == 1.0
    assert metrics["meme_abs"] == 0.0
    assert metrics["meme_del"] == 0.0
    assert metrics["meme_del_unpaired"] == 1.0
    assert (metrics["meme_er"], metrics["meme_tr"], metrics["meme_agg"]) == (1.0, 0.0, 1.0)
    assert metrics["meme_overall"] == pytest.approx((0.5 + 0 + 0 + 1 + 0 + 1) / 6)
    assert metrics["meme_before_pass"] == 0.5
    assert (metrics["meme_cas_real"], metrics["meme_cas_trivial"]) == (1.0, 1.0)
    assert (metrics["meme_abs_knew_but_failed"], metrics["meme_abs_never_knew"]) == (1.0, 1.0)


def test_suite_summary_and_section() -> None:
    results = run()
    summaries = summarize_suite(MEME_SUITE, results)
    summary = summaries["bm25"]
    assert summary.composite == pytest.approx((0.5 + 0 + 0 + 1 + 0 + 1) / 6, abs=1e-6)
    assert summary.by_type["cascade"].composite == 0.5
    assert summary.by_type["cascade (before)"].composite == 0.5
    lines = SuiteReport(MEME_SUITE, summaries, results).lines
    text = "\n".join(lines)
    assert "trivial-pass filter" in text
    cas = next(line for line in lines if line.split()[:2] == ["bm25", "Cas"])
    assert cas.split() == ["bm25", "Cas", "2", "1", "1", "0", "0", "1.000", "0.500", "0"]


def unjudged(qid: str, task: str, phase: str, entity: str) -> QuestionResult:
    """A probe whose LLM judgment failed: no MEME metric, a scoring failure."""
    return result(qid, task, phase, entity, False).model_copy(
        update={
            "metrics": {},
            "composite": 0.0,
            "scorer_details": {"meme": {"task": task, "phase": phase, "entity": entity, "judge": "llm", "error": "no usable verdict"}},
            "scoring_failures": ["meme: meme_pass: no usable verdict"],
        }
    )


def test_an_after_probe_whose_before_probe_was_not_judged_is_neither_credited_nor_penalised() -> None:
    results = [
        result("c1b", "cascade", "before", "reviewer", True),
        result("c1a", "cascade", "after", "reviewer", True),
        unjudged("c2b", "cascade", "before", "approver"),
        result("c2a", "cascade", "after", "approver", True),  # would be "trivial" if the failure counted as a fail
        unjudged("c3a", "cascade", "after", "owner"),  # unjudged itself: not an after-probe of the table at all
        result("c3b", "cascade", "before", "owner", True),
    ]
    kinds = {p.after.question_id: (p.pass_type, p.before_passed, p.before_judged) for p in pair_probes(results)}
    assert kinds == {"c1a": ("real", True, True), "c2a": (BEFORE_UNJUDGED, None, False)}
    metrics = meme_metrics(results)
    assert metrics["meme_cas"] == 1.0  # 1 real of the 1 scored pair
    assert (metrics["meme_cas_real"], metrics["meme_cas_trivial"], metrics["meme_cas_before_unjudged"]) == (1.0, 0.0, 1.0)
    assert metrics["meme_cas_unpaired"] == 0.0
    assert metrics["meme_before_pass"] == 1.0  # over the two judged before-probes
    summaries = summarize_suite(MEME_SUITE, results)
    assert summaries["bm25"].scoring_failures == 2
    lines = SuiteReport(MEME_SUITE, summaries, results).lines
    cas = next(line for line in lines if line.split()[:2] == ["bm25", "Cas"])
    assert cas.split() == ["bm25", "Cas", "1", "1", "0", "0", "0", "1.000", "1.000", "0"]
    assert lines[-1] == "  left out, their before-probe's judgment failed (neither credited nor penalised): bm25 Cas 1"


def test_a_task_whose_every_pair_is_left_out_has_no_score() -> None:
    results = [unjudged("c2b", "cascade", "before", "approver"), result("c2a", "cascade", "after", "approver", True)]
    metrics = meme_metrics(results)
    assert "meme_cas" not in metrics and "meme_overall" not in metrics
    assert metrics["meme_cas_before_unjudged"] == 1.0
    summaries = summarize_suite(MEME_SUITE, results)
    assert "cascade" not in summaries["bm25"].by_type
    lines = SuiteReport(MEME_SUITE, summaries, results).lines
    assert not any(line.split()[:2] == ["bm25", "Cas"] for line in lines)
    assert lines[-1].endswith("bm25 Cas 1")


def test_the_section_names_the_judge_that_scored_it() -> None:
    results = run()
    lines = SuiteReport(MEME_SUITE, summarize_suite(MEME_SUITE, results), results, agent="offline", judge="llm (m at u)").lines
    assert "  agent: offline; judge: llm (m at u)" in lines
    assert (
        "  agent: offline; judge: mechanical (offline)"
        in SuiteReport(MEME_SUITE, summarize_suite(MEME_SUITE, results), results, agent="offline").lines
    )
