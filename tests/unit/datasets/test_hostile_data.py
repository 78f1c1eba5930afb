"""Issue 15, defect 4 and rough edges: timestamps, strict integers, every bad file named, JSON Lines line numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.cli.main import main
from pytest_lens.datasets import DatasetError, load_dataset, load_datasets
from tests.support import small_dataset, write_dataset


def run_lens(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def with_timestamps(*stamps: Any) -> dict[str, Any]:
    document = small_dataset()
    for episode, stamp in zip(document["scopes"][0]["episodes"], stamps, strict=False):
        episode["timestamp"] = stamp
    return document


def test_timestamps_naive_is_utc_and_offsets_are_converted_so_mixed_files_stream_in_true_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # e1 10:00 (no offset: UTC), e2 11:00+02:00 = 09:00 UTC, e3 10:30Z; e4..e6 keep their later days.
    path = write_dataset(
        tmp_path / "mixed.json", with_timestamps("2025-01-01T10:00:00", "2025-01-01T11:00:00+02:00", "2025-01-01T10:30:00Z")
    )
    (scope,) = load_dataset(path).scopes
    assert [e.episode_id for e in scope.stream][:3] == ["e2", "e1", "e3"]
    assert [e.iso_timestamp for e in scope.stream][:3] == ["2025-01-01T09:00:00", "2025-01-01T10:00:00", "2025-01-01T10:30:00"]
    status, printed = run_lens(capsys, "validate", str(path))
    assert status == 0 and "Traceback" not in printed


@pytest.mark.parametrize(
    ("stamp", "message"),
    [
        (1735722000, "episode 'e3': timestamp must be an ISO 8601 string such as 2024-03-01T09:30:00, not a int"),
        (1735722000.5, "episode 'e3': timestamp must be an ISO 8601 string such as 2024-03-01T09:30:00, not a float"),
        ("1735722000", "episode 'e3': timestamp is not an ISO 8601 date-time such as 2024-03-01T09:30:00"),
        ("next tuesday", "episode 'e3': timestamp is not an ISO 8601 date-time such as 2024-03-01T09:30:00"),
    ],
)
def test_timestamps_that_are_not_iso_strings_are_dataset_errors_naming_episode_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stamp: Any, message: str
) -> None:
    document = small_dataset()
    document["scopes"][0]["episodes"][1]["timestamp"] = "2025-01-02T09:00:00Z"  # an aware one among naive ones too
    document["scopes"][0]["episodes"][2]["timestamp"] = stamp
    path = write_dataset(tmp_path / "bad.json", document)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    (issue,) = info.value.issues
    assert issue.field == "scopes[0].episodes[2].timestamp" and issue.code == "schema"
    assert message in issue.message
    status, printed = run_lens(capsys, "validate", str(path))
    assert status == 1 and f"scopes[0].episodes[2].timestamp: Value error, {message}" in printed


@pytest.mark.parametrize("value", [True, "3", 3.0])
def test_rough_edges_checkpoint_after_is_a_strict_integer(tmp_path: Path, value: Any) -> None:
    document = small_dataset()
    document["questions"][0]["checkpoint_after"] = value
    with pytest.raises(DatasetError) as info:
        load_dataset(write_dataset(tmp_path / "d.json", document))
    (issue,) = info.value.issues
    assert issue.field == "questions[0].checkpoint_after" and "Input should be a valid integer" in issue.message


def test_rough_edges_every_bad_file_of_a_directory_is_named(tmp_path: Path) -> None:
    good = small_dataset()
    bad_json = tmp_path / "a_broken.json"
    bad_json.write_text('{"scopes": [')
    bad_schema = small_dataset()
    for scope in bad_schema["scopes"]:
        scope["scope_id"] = "other"
    bad_schema["questions"][0]["checkpoint_after"] = True
    write_dataset(tmp_path / "b_good.json", good)
    write_dataset(tmp_path / "c_bad_schema.json", bad_schema)
    with pytest.raises(DatasetError) as info:
        load_datasets([tmp_path])
    assert [(Path(issue.path).name, issue.code) for issue in info.value.issues] == [
        ("a_broken.json", "invalid_json"),
        ("c_bad_schema.json", "schema"),
    ]


def test_rough_edges_jsonl_errors_give_the_line_of_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = {"context": "Alice moved to Paris.", "questions": ["Where does Alice live?"], "answers": [["Paris"]]}
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([json.dumps(row), "", json.dumps(row), '{"context":\n  "cut"', json.dumps(row)]) + "\n")
    status, printed = run_lens(capsys, "validate", str(path))
    assert status == 1
    assert "not valid JSON: EOF while parsing a value at line 4 column" in printed
    status, printed = run_lens(capsys, "import", "mab", str(path), "--out", str(tmp_path / "out.json"))
    assert status == 2 and "at line 4 column" in printed
