from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from tests.support import small_dataset, write_dataset


def test_validate_reports_the_known_defects_of_the_real_scope(lens_scope_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(lens_scope_path)]) == 0
    out = capsys.readouterr().out
    assert "6 warning(s) - cascading_failure_01 (120 episodes, 24 questions)" in out
    assert "warning questions[8].ground_truth.key_facts: question 'cf01_q09_longitudinal' has no key facts [empty_key_facts]" in out
    assert main(["validate", "--strict", str(lens_scope_path)]) == 1


def test_validate_reports_invalid_files_by_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = small_dataset()
    document["questions"][0]["checkpoint_after"] = 99
    path = write_dataset(tmp_path / "bad.json", document)
    assert main(["validate", str(path)]) == 1
    assert (
        "error   questions[0].checkpoint_after: checkpoint 99 is unreachable: scope 's1' streams 6 episodes [unreachable_checkpoint]"
        in capsys.readouterr().out
    )


def test_list_shows_bundled_data_and_registered_adapters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "bundled datasets:" in out and "registered adapters:" in out
    assert "bm25                 lens_fixtures.adapters.bm25:BM25Adapter" in out
