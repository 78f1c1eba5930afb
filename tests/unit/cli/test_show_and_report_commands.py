from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.views.transcript import transcripts
from pytest_lens.runs.storage import RunStore, write_run
from tests.support import run_lens_session


@pytest.fixture
def run_file(tmp_path: Path, example_run: RunArtifact) -> Path:
    path = tmp_path / "run.json"
    write_run(path, example_run)
    return path


def test_show_one_question(run_file: Path, example_run: RunArtifact, capsys: pytest.CaptureFixture[str]) -> None:
    item = transcripts(example_run)[2]
    assert main(["show", str(run_file), item.test_id]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == item.test_id
    assert item.result.prompt in out and "tool calls (" in out and "evidence (R required" in out
    # A question id alone shows that question for every adapter.
    assert main(["show", str(run_file), item.result.question_id]) == 0
    ids = [line for line in capsys.readouterr().out.splitlines() if line.endswith(item.result.question_id) and "-cold_chain_demo-" in line]
    assert [line.split("-")[0] for line in ids] == ["bm25", "drops", "null"]


def test_show_by_keyword_and_worst(run_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(run_file), "-k", "null and temporal"]) == 0
    out = capsys.readouterr().out
    assert out.count("outcome: gated") == out.count("\n====") + 1 >= 1
    assert main(["show", str(run_file), "--worst", "1"]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.startswith("outcome:")]
    # Ranked by the run's headline (the retrieval score): drops' worst is the question whose evidence it lost, which its
    # composite (0.758) would have put behind others; bm25's worst is its least well ranked evidence.
    assert len(heads) == 3
    assert heads[0].startswith("outcome: ok, headline 0.452 (composite 1.000)")
    assert heads[1].startswith("outcome: ok, headline 0.000 (composite 0.758)")
    assert heads[2].startswith("outcome: gated")  # null's
    assert main(["show", str(run_file), "-k", "drops", "--worst", "2", "--episodes"]) == 0
    assert capsys.readouterr().out.count("\n--- cold_chain_demo_0") >= 1
    assert main(["show", str(run_file), "-k", "null", "--worst", "8"]) == 0
    assert capsys.readouterr().out.count("outcome: gated, headline 0.000") == 8


def test_show_lists_when_nothing_or_too_much_is_selected(run_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(run_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run.json: 24 of 24 questions\n") and "show one with: lens show RUN QUESTION" in out
    assert main(["show", str(run_file), "-k", "bm25 or drops"]) == 0
    assert "16 of 24 questions match" in capsys.readouterr().out
    assert main(["show", str(run_file), "-k", "bm25 or drops", "--all"]) == 0
    assert capsys.readouterr().out.count("outcome:") == 16


def test_show_errors(run_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(run_file), "no_such_question"]) == 1
    assert "no question of run.json matches 'no_such_question' (24 questions in the run)" in capsys.readouterr().out
    assert main(["show", str(run_file), "-k", "bm25 and"]) == 2
    assert "-k 'bm25 and': the expression ends where a name or '(' was expected" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["show", str(run_file), "--worst", "0"]) == 2


def test_show_finds_saved_runs_by_name(tmp_path: Path, example_run: RunArtifact, capsys: pytest.CaptureFixture[str]) -> None:
    RunStore(tmp_path / ".lens").save(example_run, "main")
    assert main(["show", "main", "--storage", str(tmp_path / ".lens"), "-k", "null and q01"]) == 0
    assert "null-cold_chain_demo-" in capsys.readouterr().out


def test_report_writes_one_file(run_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "report.html"
    assert main(["report", str(run_file), "--html", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out} (")
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "artifact run.json" in html


def test_report_against_a_baseline_and_of_merged_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy = tmp_path / "healthy.json"
    write_run(healthy, run_lens_session(tmp_path / "a", {"bm25": "bm25"}).artifact())
    degraded = tmp_path / "degraded.json"
    target = "lens_fixtures.adapters.degraded:DropsBestBM25Adapter"
    write_run(degraded, run_lens_session(tmp_path / "b", {"bm25": target}).artifact())
    null = tmp_path / "null.json"
    write_run(null, run_lens_session(tmp_path / "c", {"null": "null"}).artifact())

    out = tmp_path / "compared.html"
    assert main(["report", str(degraded), "--baseline", str(healthy), "--html", str(out)]) == 0
    html = out.read_text()
    assert "Per-question deltas against healthy.json (largest drops first)" in html
    assert "Compared with <strong>healthy.json</strong>" in html

    merged = tmp_path / "merged.html"
    assert main(["report", str(healthy), str(null), "--html", str(merged)]) == 0
    html = merged.read_text()
    assert "merged from" in html and 'id="pairs"' in html
    views = json.loads(html.split('<script type="application/json" id="lens-transcripts">')[1].split("</script>")[0])
    assert {view["adapter"] for view in views} == {"bm25", "null"}

    assert main(["report", str(healthy), str(healthy), "--html", str(merged)]) == 2
    assert "is in both healthy.json and healthy.json" in capsys.readouterr().err


#: A single-file artifact (schema 1, every result inline) written by pytest-lens before rows streamed: bm25 on the demo.
OLD_FORMAT = Path(__file__).parents[2] / "data" / "artifact_v1.json"


def test_an_old_single_file_artifact_shows_compares_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert json.loads(OLD_FORMAT.read_text())["schema_version"] == 1
    assert main(["show", str(OLD_FORMAT)]) == 0
    assert capsys.readouterr().out.startswith("artifact_v1.json: 8 of 8 questions\n")
    assert main(["show", str(OLD_FORMAT), "ccd_q03_longitudinal"]) == 0
    out = capsys.readouterr().out
    assert "bm25-cold_chain_demo-cp013-ccd_q03_longitudinal" in out and "tool calls (" in out
    # The same run today, in the streamed format, against it: every question paired, nothing changed.
    today = tmp_path / "today.json"
    write_run(today, run_lens_session(tmp_path / "run", {"bm25": "bm25"}).artifact())
    assert json.loads(today.read_text())["schema_version"] == 2 and (tmp_path / "today.rows.jsonl").exists()
    for baseline, current in ((OLD_FORMAT, today), (today, OLD_FORMAT)):
        assert main(["compare", str(baseline), str(current), "--fail"]) == 0
        out = capsys.readouterr().out
        assert "bm25     8     0.701     0.701  +0.000 [+0.000, +0.000]" in out and "no significant change" in out
    assert main(["report", str(OLD_FORMAT), "--baseline", str(today), "--html", str(tmp_path / "old.html")]) == 0
    assert "8 questions" in capsys.readouterr().out
