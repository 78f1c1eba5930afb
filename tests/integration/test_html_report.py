"""--lens-html through pytester: the report of a real run, the worst questions in the summary, failures that lose nothing."""

from __future__ import annotations

import json

import pytest

from pytest_lens.records.rows import read_artifact_json
from pytest_lens.runs.storage import load_run
from tests.support import COLD_CHAIN_DEMO

NO_CACHE = ("-p", "no:cacheprovider")
DEGRADED = "lens_fixtures.adapters.degraded:DropsBestBM25Adapter"


def test_html_report_and_worst_questions(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        "--lens-adapter=null",
        f"--lens-dataset={COLD_CHAIN_DEMO}",
        "--lens-json=run.json",
        "--lens-html=out/report.html",
        *NO_CACHE,
    )
    assert result.ret == 1  # null is gated
    result.stdout.fnmatch_lines(
        [
            "*LENS verdict: FAIL*",
            "run artifact: run.json",
            "html report: out/report.html (* MB, * s)",
            "",
            "worst questions (transcripts: open out/report.html; lens show run.json ID (or --worst 6)):",
            "  bm25:",  # ranked by the headline (the retrieval score): its least well ranked evidence first
            "    0.452 ok     bm25-cold_chain_demo-cp010-ccd_q02_distractor_resistance  *first_search_mrr 0.33",
            "*",
            "*",
            "  null:",
            "    0.000 gated  null-cold_chain_demo-cp*  evidence_grounding 0.000 < 0.5",
        ]
    )
    html = (pytester.path / "out" / "report.html").read_text()
    artifact = load_run(pytester.path / "run.json")
    assert '<p class="verdict fail">LENS verdict: FAIL</p>' in html
    views = json.loads(html.split('id="lens-transcripts">')[1].split("</script>")[0])
    assert len(views) == len(artifact.results) == 16
    assert artifact.verdict is not None and artifact.verdict.exit_code == 1
    assert artifact.verdict.gates[0].startswith("FAIL  hard gates")


def test_report_against_the_baseline_shows_every_drop(pytester: pytest.Pytester) -> None:
    first = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-save=main", *NO_CACHE)
    assert first.ret == 0
    second = pytester.runpytest(
        f"--lens-adapter=bm25={DEGRADED}", f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-baseline=main", "--lens-html=r.html", *NO_CACHE
    )
    assert second.ret == 0
    html = (pytester.path / "r.html").read_text()
    assert "Per-question deltas against 0001_main (largest drops first)" in html
    assert "Compared with <strong>0001_main</strong>" in html


def test_a_report_that_cannot_be_written_loses_nothing(pytester: pytest.Pytester) -> None:
    (pytester.path / "blocked").write_text("a file, not a directory")
    result = pytester.runpytest(
        "--lens-adapter=bm25", f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-json=run.json", "--lens-html=blocked/report.html", *NO_CACHE
    )
    result.stdout.fnmatch_lines(["*LENS verdict: PASS*", "could not write the HTML report blocked/report.html: File exists"])
    assert result.ret == 1  # asked for a report and did not get one
    assert len(read_artifact_json(pytester.path / "run.json")["results"]) == 8


def test_without_the_report_libraries_the_option_says_what_to_install(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "markupsafe" else real(name, *a))
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-html=r.html", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--lens-html needs the html extra (markupsafe is not installed): pip install 'pytest-lens[html]'" in result.stderr.str()


def test_parallel_run_reports_every_question_once(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={COLD_CHAIN_DEMO}", "-n", "2", "--lens-html=r.html", *NO_CACHE)
    assert result.ret == 0
    html = (pytester.path / "r.html").read_text()
    views = json.loads(html.split('id="lens-transcripts">')[1].split("</script>")[0])
    assert len({view["test_id"] for view in views}) == len(views) == 8
    assert all(view["calls"] and view["outcome"] == "ok" for view in views)
