from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.options import ADAPTER, DATASET, JSON, SUITE


def test_meme_suite_runs_offline_and_prints_its_section_with_the_trivial_pass_breakdown(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=meme", f"{JSON}=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=52)
    result.stdout.fnmatch_lines(
        [
            "MEME: multi-entity and evolving memory [suite meme]",
            "adapter *n *score *ER *Agg *Tr *Del *Cas *Abs *before*",
            "bm25 *52 *",
            "trivial-pass filter*",
            "adapter *task *n *real *trivial *knew_but_failed *never_knew *raw pass *credited *no before",
            "bm25 *Cas *8 *",
            "bm25 *Abs *8 *",
            "LENS verdict: PASS",
        ]
    )
    assert "no LENS results were recorded" not in result.stdout.str()
    artifact = json.loads((pytester.path / "out.json").read_text())
    assert artifact["summary"] == {}
    meme = artifact["suite_summaries"]["meme"]["bm25"]
    assert meme["metrics"]["meme_overall"] == meme["composite"]
    assert {r["suite"] for r in artifact["results"]} == {"meme"}
    counts = sum(meme["metrics"][f"meme_cas_{kind}"] for kind in ("real", "trivial", "knew_but_failed", "never_knew"))
    assert counts == 8


def test_mab_suite_runs_offline_and_prints_its_section(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=mab", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=21)
    result.stdout.fnmatch_lines(
        [
            "MemoryAgentBench: accurate retrieval, test-time learning, long-range understanding, conflict resolution [[]suite mab[]]",
            "adapter *n *score *AR *TTL *LRU *CR *CR strict *SubEM *EM *recall*",
            "bm25 *21 *",
            "accurate_retrieval *6 *",
            "conflict_resolution *6 *",
            "LENS verdict: PASS",
        ]
    )


def test_lens_and_a_sibling_suite_keep_separate_tables(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=lens", f"{SUITE}=mab", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6 * 24 + 21)
    result.stdout.fnmatch_lines(["bm25 *144 *pass", "composite by question type:", "MemoryAgentBench: * [[]suite mab[]]", "bm25 *21 *"])


def test_a_suite_without_bundled_data_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=locomo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lens-suite: no bundled data for suite 'locomo'*lens import locomo PATH --out FILE*"])


def test_suite_filter_on_datasets_that_hold_none_of_it(pytester: pytest.Pytester) -> None:
    from lens_fixtures.datasets import bundled_suite_paths

    (meme,) = bundled_suite_paths("meme")
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{DATASET}={meme}", f"{SUITE}=mab")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*none of the datasets belongs to suite(s) mab (their suites: meme)*"])


def test_ini_selects_suites(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nlens_adapters = bm25\nlens_suites = mab\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=21)


def test_parallel_suite_summary_equals_the_serial_one(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    args = [f"{ADAPTER}=bm25", f"{SUITE}=meme", "-p", "no:cacheprovider"]
    pytester.runpytest(*args, f"{JSON}=serial.json").assert_outcomes(passed=52)
    pytester.runpytest(*args, "-n", "2", f"{JSON}=parallel.json").assert_outcomes(passed=52)
    serial = json.loads((pytester.path / "serial.json").read_text())["suite_summaries"]
    parallel = json.loads((pytester.path / "parallel.json").read_text())["suite_summaries"]
    assert parallel == serial


def test_real_locomo_conversation_runs_directly_and_reports_evidence_coverage(pytester: pytest.Pytester, locomo_path: Path) -> None:
    result = pytester.runpytest(
        f"{ADAPTER}=bm25", f"{DATASET}={locomo_path}", "-k", "conv-30", f"{JSON}=out.json", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=105)
    result.stdout.fnmatch_lines(["LoCoMo: very long-term conversational memory (imported) [suite locomo]", "adapter *F1 *ev.coverage*"])
    summary = json.loads((pytester.path / "out.json").read_text())["suite_summaries"]["locomo"]["bm25"]
    assert summary["n_questions"] == 105
    assert 0.0 < summary["metrics"]["evidence_coverage"] <= 1.0
