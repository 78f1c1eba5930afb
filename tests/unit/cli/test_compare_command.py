from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_lens.cli.main import main
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.runs.storage import RunStore, write_run
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate
from pytest_lens.scoring.headline import gates_of
from tests.unit.analysis.factory import result, tier1

RUN = {"weights": dict(DEFAULT_WEIGHTS), "gates": ["evidence_grounding < 0.5"], "seed": 42, "agent": {"name": "offline"}}


def write(path: Path, results: list[QuestionResult]) -> Path:
    write_run(path, RunArtifact(pytest_lens_version="0", created="c", run=RUN, results=results, summary={}))
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    healthy = write(tmp_path / "healthy.json", [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(10)])
    degraded = write(tmp_path / "degraded.json", [result(f"q{i:02d}", tier1(1.0, 0.0)) for i in range(10)])
    return healthy, degraded


def test_compare_prints_the_comparison_and_fails_only_when_asked(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    healthy, degraded = runs
    assert main(["compare", str(healthy), str(degraded)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"degraded.json ({degraded}) against healthy.json"
    row = next(line for line in out.splitlines() if line.startswith("bm25 "))
    assert row.split()[1:5] == ["10", "1.000", "0.758", "-0.242"] and row.endswith("regression")
    assert "add --fail to fail on a regression" in out

    assert main(["compare", str(healthy), str(degraded), "--fail"]) == 1
    assert (
        "FAIL  --fail: vs baseline healthy.json: bm25 composite 1.000 -> 0.758 (-0.242): "
        "regression p=9.8e-04 (one-sided paired t-test over 10 questions (t(9)), Holm) < alpha 0.05" in capsys.readouterr().out
    )
    assert main(["compare", str(healthy), str(healthy), "--fail"]) == 0
    assert "pass  --fail: no significant regression vs baseline healthy.json" in capsys.readouterr().out


def test_compare_finds_saved_runs_by_name(tmp_path: Path, runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_lens.runs.storage import load_run

    store = RunStore(tmp_path / ".lens")
    store.save(load_run(runs[0]), "main")
    assert main(["compare", "main", str(runs[1]), "--storage", str(tmp_path / ".lens"), "--max-drop", "0.1", "--fail"]) == 1
    assert "drop 0.242 > --lens-max-drop=0.1" in capsys.readouterr().out


def test_compare_reports_unusable_input_with_status_2(tmp_path: Path, runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "nosuchrun", str(runs[1]), "--storage", str(tmp_path)]) == 2
    assert "lens compare: no saved run 'nosuchrun'" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{")
    assert main(["compare", str(tmp_path / "junk.json"), str(runs[1])]) == 2
    assert "junk.json: not a pytest-lens run artifact" in capsys.readouterr().err
    assert main(["compare", str(runs[0]), str(runs[1]), "--alpha", "1.5"]) == 2


def test_gates_are_read_back_from_the_run_identity() -> None:
    identity = RunIdentity.model_validate({"gates": ["evidence_grounding < 0.5", "budget_compliance < 0.5"]})
    assert gates_of(identity) == [HardGate("evidence_grounding", 0.5), HardGate("budget_compliance", 0.5)]
    assert identity.model_dump(mode="json") == {"gates": ["evidence_grounding < 0.5", "budget_compliance < 0.5"]}  # as on disk
    assert gates_of(RunIdentity()) == list(DEFAULT_GATES)
    with pytest.raises(ValidationError, match="cannot read hard gate 'grounding >= 1'"):
        RunIdentity.model_validate({"gates": ["grounding >= 1"]})


def test_an_artifact_with_an_unreadable_gate_is_refused_naming_the_gate(
    tmp_path: Path, runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(runs[1].read_text().replace('"evidence_grounding < 0.5"', '"grounding >= 1"'))
    assert main(["compare", str(runs[0]), str(broken)]) == 2
    assert "cannot read hard gate 'grounding >= 1'" in capsys.readouterr().err


def test_lens_compare_fails_a_partial_comparison_unless_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A baseline saved from an interrupted run (4 of 10 questions, marked incomplete): --fail compared 4 and passed.
    everything = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(10)]
    current = write(tmp_path / "current.json", everything)
    partial = tmp_path / "partial.json"
    incomplete = ["incomplete: 6 questions missing from groups bm25:s1:16k (6)"]
    artifact = RunArtifact(pytest_lens_version="0", created="c", run=RUN, results=everything[:4], summary={}, incomplete=incomplete)
    write_run(partial, artifact)
    assert main(["compare", str(partial), str(current), "--fail"]) == 1
    out = capsys.readouterr().out
    assert "warning: baseline partial.json is an incomplete run (incomplete: 6 questions missing" in out
    assert (
        "FAIL  --fail: vs baseline partial.json: partial comparison, bm25: 6 question(s) of this run not in the baseline "
        "(pass --partial to gate on the questions both runs have)" in out
    )
    assert main(["compare", str(partial), str(current), "--fail", "--partial"]) == 0
    assert "partial comparison allowed by --partial: bm25: 6 question(s) of this run not in the baseline" in capsys.readouterr().out


def judged_by(path: Path, model: str, results: list[QuestionResult]) -> Path:
    run = {**RUN, "judge": {"name": "llm"}, "llm": {"base_url": "http://127.0.0.1:8080/v1", "agent_model": "m", "judge_model": model}}
    write_run(path, RunArtifact(pytest_lens_version="0", created="c", run=run, results=results, summary={}))
    return path


def test_compare_refuses_a_baseline_judged_by_another_model_unless_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(10)]
    baseline = judged_by(tmp_path / "judge_a.json", "judge-a", results)
    current = judged_by(tmp_path / "judge_b.json", "judge-b", results)
    assert main(["compare", str(baseline), str(current), "--fail"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith(
        "lens compare: refused, judge_b.json and judge_a.json are unlike runs: "
        "judge differs: this run llm judge-b (local), baseline llm judge-a (local). "
    )
    assert "pass --accept-unlike=judge to compare anyway" in out.err

    assert main(["compare", str(baseline), str(current), "--fail", "--accept-unlike", "judge"]) == 0
    lines = capsys.readouterr().out.splitlines()
    accepted = "judge differs: this run llm judge-b (local), baseline llm judge-a (local)"
    assert lines[1] == f"unlike runs compared, accepted by --accept-unlike=judge: {accepted}"
    assert lines[-1].startswith("pass  --fail: no significant regression vs baseline judge_a.json")
    assert lines[-1].endswith(f"; unlike runs compared, accepted by --accept-unlike: {accepted}")
    # Alike runs need no such line; an unknown field is unusable input.
    assert main(["compare", str(baseline), str(baseline)]) == 0
    assert "unlike" not in capsys.readouterr().out
    assert main(["compare", str(baseline), str(current), "--accept-unlike", "seed"]) == 2
    assert "--accept-unlike: 'seed': name the comparability-card fields to accept" in capsys.readouterr().err


def test_report_refuses_an_unlike_baseline_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(4)]
    baseline = judged_by(tmp_path / "judge_a.json", "judge-a", results)
    current = judged_by(tmp_path / "judge_b.json", "judge-b", results)
    html = tmp_path / "report.html"
    assert main(["report", str(current), "--baseline", str(baseline), "--html", str(html)]) == 2
    assert "are unlike runs: judge differs" in capsys.readouterr().err and not html.exists()
    assert main(["report", str(current), "--baseline", str(baseline), "--html", str(html), "--accept-unlike=judge"]) == 0
    assert "judge differs: this run llm judge-b (local), baseline llm judge-a (local) - compared only because" in html.read_text()


#: Run in a child process: ``lens compare`` with its address space capped at what it holds now plus 256 MB
#: (parsed whole, the artifact below would take about 700 MB: pydantic-core aborts the process when it runs out).
_CAPPED = """
import resource, sys
import pytest_lens.cli.compare, pytest_lens.runs.storage
from pytest_lens.cli.main import main
size = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20),) * 2)
sys.exit(main(["compare", *sys.argv[1:]]))
"""


def test_compare_on_an_artifact_larger_than_memory_is_one_line(tmp_path: Path) -> None:
    # Issue 46: `lens compare` on a 1.2 GB artifact ended in a MemoryError traceback. Here a single-file (rows inline)
    # artifact of about 90 MB against a process that may hold 256 MB more than it does at start.
    import json
    import subprocess
    import sys

    from pytest_lens.records.rows import read_artifact_json

    small = write(tmp_path / "small.json", [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(10)])
    document = read_artifact_json(small)
    rows = document.pop("results")
    document.pop("rows", None)
    big = tmp_path / "big.json"
    with big.open("w", encoding="utf-8") as out:
        out.write(json.dumps(document)[:-1] + ', "results": [')
        out.write(",".join(json.dumps({**row, "question_id": f"{row['question_id']}_{n}"}) for n in range(9_000) for row in rows))
        out.write("]}")
    assert big.stat().st_size > 80 << 20
    done = subprocess.run([sys.executable, "-c", _CAPPED, str(big), str(small)], capture_output=True, text=True, check=False, timeout=120)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    size = big.stat().st_size
    assert done.stderr.startswith(
        f"lens compare: {big}: the run artifact ({size:,} bytes, its rows inline) needs about {size * 4 >> 20:,} MB"
    )
    assert done.stderr.endswith(" MB free\n") and "\n" not in done.stderr[:-1]
