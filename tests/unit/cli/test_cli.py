from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from tests.support import small_dataset, write_dataset

Capture = pytest.CaptureFixture[str]


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


# -- labels files ------------------------------------------------------------------------------
def test_validate_recognises_a_labels_file_and_checks_its_ids_against_the_dataset(tmp_path: Path, capsys: Capture) -> None:
    write_dataset(tmp_path / "trial.json", small_dataset())
    labels = tmp_path / "trial.labels.json"
    labels.write_text(json.dumps({"episodes": {"e1": {"kind": "signal"}, "e2": "distractor"}}))
    assert main(["validate", str(labels)]) == 0
    assert capsys.readouterr().out == (
        f"{labels}: ok - labels file: 2 episode(s) labelled (1 signal, 1 distractor); 2 of the 6 episodes of trial.json\n"
    )
    # Ids the dataset lacks are a warning (an error under --strict), as when a run loads the sidecar.
    labels.write_text(json.dumps({"episodes": {"e1": "signal", "zz": "signal"}}))
    assert main(["validate", str(labels)]) == 0
    assert "warning episodes: labels for episodes not in trial.json: zz [labels_unknown_ref]" in capsys.readouterr().out
    assert main(["validate", "--strict", str(labels)]) == 1
    capsys.readouterr()
    # A broken dataset beside it: the labels are fine, their ids cannot be checked.
    (tmp_path / "trial.json").write_text("{}")
    assert main(["validate", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "labels file: 2 episode(s) labelled (2 signal, 0 distractor); episode ids not checked" in out
    assert f"warning -: trial.json beside it is not a valid dataset (lens validate {tmp_path / 'trial.json'} says why)" in out


def test_validate_checks_a_labels_file_without_its_dataset_and_the_bundled_ones(capsys: Capture, tmp_path: Path) -> None:
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    lone = tmp_path / "alone.labels.json"
    lone.write_text(json.dumps({"episodes": {"a": "signal"}}))
    sidecars = [path.with_name(path.name.replace(".json", ".labels.json")) for path in bundled_dataset_paths()]
    assert main(["validate", str(lone), *map(str, sidecars)]) == 0
    out = capsys.readouterr().out
    counts = "1 episode(s) labelled (1 signal, 0 distractor)"
    assert f"{lone}: ok - labels file: {counts}; no alone.json beside it, episode ids not checked" in out.splitlines()
    fully = re.findall(r"; (\d+) of the (\d+) episodes of \w+\.json$", out, flags=re.MULTILINE)
    assert len(fully) == len(sidecars) == 6 and all(a == b for a, b in fully) and "INVALID" not in out


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ({"episodes": {"e1": {"kind": "maybe"}}}, "episodes.e1: expected kind 'signal' or 'distractor', got 'maybe' [labels]"),
        ({"episodes": {"e1": {"theme": "x"}}}, "episodes.e1: expected kind 'signal' or 'distractor', got None [labels]"),
        ({"labels": {"e1": "signal"}}, 'episodes: expected an object {"<episode id>": {"kind": "signal" | "distractor"}} [labels]'),
        (["e1"], 'episodes: expected an object {"<episode id>": {"kind": "signal" | "distractor"}} [labels]'),
    ],
)
def test_validate_names_what_is_wrong_in_a_labels_file(tmp_path: Path, capsys: Capture, document: object, error: str) -> None:
    labels = tmp_path / "trial.labels.json"
    labels.write_text(json.dumps(document))
    assert main(["validate", str(labels)]) == 1
    assert capsys.readouterr().out == f"{labels}: INVALID labels file\n  error   {error}\n"


def test_validate_says_what_it_accepts_for_a_file_of_no_known_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "settings.json"
    other.write_text(json.dumps({"name": "x"}))
    assert main(["validate", str(other)]) == 1
    out = capsys.readouterr().out
    assert "Field required" not in out
    assert 'not a dataset: no "scopes" and no other known format; a dataset is a LENS dataset' in out
    assert "LoCoMo, LongMemEval, MEME or MemoryAgentBench" in out and "[not_a_dataset]" in out
    assert "(lens validate also checks labels files, named NAME.labels.json beside the dataset NAME.json)" in out
    # A labels file under a dataset's name gets told what to call it.
    misnamed = tmp_path / "trial.json"
    misnamed.write_text(json.dumps({"episodes": {"e1": "signal"}}))
    assert main(["validate", str(misnamed)]) == 1
    hint = 'It looks like a labels file ("episodes" by id): name it NAME.labels.json beside the dataset NAME.json'
    assert hint in capsys.readouterr().out


def test_validate_names_a_device_or_a_pipe_instead_of_calling_it_missing(tmp_path: Path, capsys: Capture) -> None:
    # Issue 46: `lens validate /dev/zero` said "no such file or directory".
    import os

    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    assert main(["validate", "/dev/zero", str(pipe)]) == 1
    out = capsys.readouterr().out
    assert "/dev/zero: INVALID\n  error   -: /dev/zero is a device, not a file [not_a_file]\n" in out
    assert f"{pipe}: INVALID\n  error   -: {pipe} is a named pipe, not a file [not_a_file]\n" in out
    assert main(["validate", str(tmp_path / "absent.json")]) == 2
    assert "absent.json: -: no such file or directory [not_found]" in capsys.readouterr().out
