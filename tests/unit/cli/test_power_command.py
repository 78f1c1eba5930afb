from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from tests.unit.analysis.factory import result, tier1
from tests.unit.cli.test_compare_command import write


def test_power_prints_what_the_run_detects_and_what_a_drop_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write(tmp_path / "run.json", [result(f"q{i:02d}", tier1(1.0, (i % 5) / 4), scope_id=f"s{i % 2}") for i in range(20)])
    assert main(["power", str(run), "--delta", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "as if a second run were independent" in out
    assert "bm25: 20 questions in 2 scope(s), 1 answer(s) each" in out
    assert "as run, it detects a drop of " in out and "to detect 0.05:" in out
    assert "questions (clustered)" in out and "scopes of 10" in out
    # Against a baseline: from the paired differences.
    base = write(tmp_path / "base.json", [result(f"q{i:02d}", tier1(1.0, 0.5), scope_id=f"s{i % 2}") for i in range(20)])
    assert main(["power", str(run), "--against", str(base), "--delta", "0.05"]) == 0
    assert "from paired differences against base.json" in capsys.readouterr().out


def test_power_names_the_bad_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write(tmp_path / "run.json", [result(f"q{i}", tier1(1.0, 0.5)) for i in range(3)])
    assert main(["power", str(run), "--delta", "2"]) == 2
    assert "lens power: --delta:" in capsys.readouterr().err


@pytest.mark.parametrize("delta", ["1e-200", "1e-160", "0"])
def test_power_refuses_a_drop_below_what_scores_resolve(tmp_path: Path, capsys: pytest.CaptureFixture[str], delta: str) -> None:
    # Issue 46: --delta 1e-200 was a ZeroDivisionError traceback, 1e-160 an OverflowError.
    run = write(tmp_path / "run.json", [result(f"q{i}", tier1(1.0, 0.5 + i / 10)) for i in range(3)])
    assert main(["power", str(run), "--delta", delta]) == 2
    resolution = "must be at least 1e-06 (scores are recorded to six decimals: a smaller drop is not measured)"
    assert capsys.readouterr().err == f"lens power: --delta: {resolution}, got {delta!r}\n"
    assert main(["power", str(run), "--delta", "1e-6"]) == 0  # the smallest drop is sized, with a (very) large count
