from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from pytest_lens.plugin.options import ADAPTER, DATASET, JSON, SUITE
from pytest_lens.records.rows import read_artifact_json
from tests.support import assert_answered


def test_meme_suite_runs_offline_and_prints_its_section_with_the_trivial_pass_breakdown(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=meme", f"{JSON}=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=52)
    result.stdout.fnmatch_lines(
        [
            "MEME: multi-entity and evolving memory [suite meme]",
            "adapter *n *retrieval score *MEME overall *ER *Agg *Tr *Del *Cas *Abs *before*",
            "bm25 *52 *",
            "trivial-pass filter*",
            "adapter *task *n *real *trivial *knew_but_failed *never_knew *raw pass *credited *no before",
            "bm25 *Cas *8 *",
            "bm25 *Abs *8 *",
            "LENS verdict: PASS",
        ]
    )
    assert "no LENS results were recorded" not in result.stdout.str()
    artifact = read_artifact_json(pytester.path / "out.json")
    assert artifact["summary"] == {}
    meme = artifact["suite_summaries"]["meme"]["bm25"]
    assert meme["metrics"]["meme_overall"] == meme["composite"]
    assert {r["suite"] for r in artifact["results"]} == {"meme"}
    counts = sum(meme["metrics"][f"meme_cas_{kind}"] for kind in ("real", "trivial", "knew_but_failed", "never_knew"))
    assert counts == 8


def test_mab_suite_runs_offline_and_prints_its_section(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{ADAPTER}=oracle", f"{SUITE}=mab", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=42)
    result.stdout.fnmatch_lines(
        [
            "MemoryAgentBench: accurate retrieval, test-time learning, long-range understanding, conflict resolution [[]suite mab[]]",
            "adapter *n *retrieval score *MAB overall *AR *TTL *LRU *CR *CR strict *SubEM *EM *recall*",
            "bm25 *21 * pass",
            "oracle *21 *1.000 * control",  # a control in the suite's table too: shown, never gating
            "accurate_retrieval *6 *",
            "conflict_resolution *6 *",
            "LENS verdict: PASS",
        ]
    )


def test_lens_and_a_sibling_suite_keep_separate_tables(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=lens", f"{SUITE}=mab", "-p", "no:cacheprovider")
    assert_answered(result, 6 * 24 + 21)  # a few LENS questions are gated (bm25 cites no grounded ref for them)
    result.stdout.fnmatch_lines(
        ["bm25 *144 *pass", "retrieval score by question type:", "MemoryAgentBench: * [[]suite mab[]]", "bm25 *21 *"]
    )


def test_a_suite_without_bundled_data_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=locomo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lens-suite: no bundled data for suite 'locomo'*lens import locomo PATH --out FILE*"])


def test_suite_filter_on_datasets_that_hold_none_of_it(pytester: pytest.Pytester) -> None:
    from pytest_lens.datasets.bundled import bundled_suite_paths

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
    serial = read_artifact_json(pytester.path / "serial.json")["suite_summaries"]
    parallel = read_artifact_json(pytester.path / "parallel.json")["suite_summaries"]
    assert parallel == serial


def test_real_locomo_conversation_runs_directly_and_reports_evidence_coverage(pytester: pytest.Pytester, locomo_path: Path) -> None:
    result = pytester.runpytest(
        f"{ADAPTER}=bm25", f"{DATASET}={locomo_path}", "-k", "conv-30", f"{JSON}=out.json", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=105)
    result.stdout.fnmatch_lines(
        ["LoCoMo: very long-term conversational memory (imported) [suite locomo]", "adapter *retrieval score *LoCoMo F1 *ev.coverage*"]
    )
    summary = read_artifact_json(pytester.path / "out.json")["suite_summaries"]["locomo"]["bm25"]
    assert summary["n_questions"] == 105
    assert 0.0 < summary["metrics"]["evidence_coverage"] <= 1.0


def test_suite_sections_show_score_cis_and_compare_adapters(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        f"{ADAPTER}=bm25",
        f"{ADAPTER}=null",
        f"{SUITE}=meme",
        f"{SUITE}=mab",
        f"{JSON}=out.json",
        "-p",
        "no:cacheprovider",
        "--lens-headline=composite",  # each suite's own score heads its section
    )
    result.assert_outcomes(passed=146)
    result.stdout.fnmatch_lines(
        [
            "MEME: multi-entity and evolving memory [[]suite meme[]]",
            "adapter *n *score [[]95% CI[]] *retrieval *ER *Agg*",
            "adapters compared (paired by question; two-sided paired t-test over * questions (t(*)) of the mean difference, "
            "Holm over 1 pair(s)*",
            "MemoryAgentBench: *",
            "adapter *n *score [[]95% CI[]] *retrieval *AR *TTL*",
            "bm25 *21 *0.667 [[]0.*, 0.*[]] *1.000 *",
            "bm25 vs null *21 *0.667 *0.000 *-0.667 [[]*[]] *",
        ]
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    for suite in ("meme", "mab"):
        statistics = artifact["suite_statistics"][suite]
        for adapter in ("bm25", "null"):
            score = artifact["suite_summaries"][suite][adapter]["composite"]
            assert statistics["adapters"][adapter]["composite"]["value"] == pytest.approx(score, abs=1e-6)
        (pair,) = statistics["pairs"]
        assert (pair["first"], pair["second"]) == ("bm25", "null")
    # MEME's paired test runs over the credited after-probes (32), not all 52 probes.
    assert artifact["suite_statistics"]["meme"]["pairs"][0]["composite"]["n_pairs"] == 32


def test_offline_suite_sections_are_headed_by_the_retrieval_score(pytester: pytest.Pytester) -> None:
    """Under the offline agent the suite's own score (answer text) cannot tell a memory from chance; the retrieval score can."""
    result = pytester.runpytest(f"{ADAPTER}=bm25", f"{ADAPTER}=random", f"{SUITE}=mab", f"{JSON}=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=42)
    result.stdout.fnmatch_lines(
        [
            "MemoryAgentBench: * [[]suite mab[]]",
            "  headline: retrieval score = 0.5 x first-search nDCG@10 + 0.5 x first-search MRR*",
            "  beside it: MAB overall = mean over competencies*",
            "adapter *n *retrieval score [[]95% CI[]] *MAB overall *AR *TTL*",
            "retrieval score / MAB overall by question type:",
            "bm25 vs random *21 *random lower",
            "worst questions *",
            "  mab:bm25:",
        ]
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    assert artifact["run"]["suite_headlines"]["mab"]["name"] == "retrieval_score"
    summaries, statistics = artifact["suite_summaries"]["mab"], artifact["suite_statistics"]["mab"]
    assert statistics["score"] == "retrieval_score"
    for adapter in ("bm25", "random"):
        assert summaries[adapter]["headline_name"] == "retrieval_score"
        assert statistics["adapters"][adapter]["composite"]["value"] == pytest.approx(summaries[adapter]["headline"], abs=1e-6)
    bm25, chance = summaries["bm25"]["headline"], summaries["random"]["headline"]
    assert chance < bm25 - 0.15  # MAB's scopes hold few episodes: chance is high, and still well below bm25
    # The paired test is of the headline: its per-question deltas are retrieval scores.
    (pair,) = statistics["pairs"]
    assert pair["composite"]["delta"]["value"] == pytest.approx(chance - bm25, abs=1e-6)
    # The worst questions are ranked by the headline: the first listed is bm25's lowest retrieval score.
    lines = result.stdout.lines
    first = lines[lines.index("  mab:bm25:") + 1].split()
    lowest = min(
        0.5 * r["metrics"]["first_search_ndcg@10"] + 0.5 * r["metrics"]["first_search_mrr"]
        for r in artifact["results"]
        if r["adapter"] == "bm25"
    )
    assert float(first[0]) == pytest.approx(lowest, abs=5e-4)


DEGRADED_BM25 = "bm25=lens_fixtures.adapters.degraded:DropsBestBM25Adapter"


def test_a_suite_regression_against_the_saved_baseline_fails_the_run(pytester: pytest.Pytester) -> None:
    from pytest_lens.cli.main import main

    own = "--lens-headline=composite"  # MemoryAgentBench's own score heads its section
    common = (f"{SUITE}=mab", "-p", "no:cacheprovider", "--lens-compare-fail", own)
    saved = pytester.runpytest(f"{ADAPTER}=bm25", f"{SUITE}=mab", "-p", "no:cacheprovider", "--lens-save=main", f"{JSON}=healthy.json", own)
    assert saved.ret == pytest.ExitCode.OK

    healthy = pytester.runpytest(f"{ADAPTER}=bm25", "--lens-baseline=main", *common)
    assert healthy.ret == pytest.ExitCode.OK
    healthy.stdout.fnmatch_lines(
        ["bm25 *21 *0.667 *0.667 *+0.000 *no significant change", "  pass  --lens-compare-fail [[]suite mab[]]: *"]
    )
    assert "  FAIL  --lens-compare-fail:" not in healthy.stdout.str()  # no LENS question ran: LENS's own gate is left out

    degraded = pytester.runpytest(
        f"{ADAPTER}={DEGRADED_BM25}", "--lens-adapter-option=drop_best=2", "--lens-baseline=main", f"{JSON}=degraded.json", *common
    )
    assert degraded.ret == pytest.ExitCode.TESTS_FAILED
    degraded.stdout.fnmatch_lines(
        [
            "compared with baseline 0001_main *",
            "bm25 *21 *0.667 *0.257 *-0.410 [[]*[]] *regression",
            "  FAIL  --lens-compare-fail [[]suite mab[]]: vs baseline 0001_main: bm25 score 0.667 -> 0.257 (-0.410): "
            "regression p=* (one-sided paired t-test over 21 questions (t(*)), Holm) < alpha 0.05*",
        ]
    )
    artifact = read_artifact_json(pytester.path / "degraded.json")
    assert artifact["suite_comparisons"]["mab"]["adapters"][0]["status"] == "regression"

    # `lens compare` gives the same verdict outside pytest.
    with pytester.path.joinpath("compare.txt").open("w") as out, contextlib.redirect_stdout(out):
        code = main(["compare", str(pytester.path / "healthy.json"), str(pytester.path / "degraded.json"), "--fail"])
    assert code == 1
    text = (pytester.path / "compare.txt").read_text()
    assert "FAIL  --fail [suite mab]: vs baseline healthy.json: bm25 score 0.667 -> 0.257 (-0.410)" in text
