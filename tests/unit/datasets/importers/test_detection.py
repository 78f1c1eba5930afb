from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.datasets.importers import detect_format, resolve_dataset_path, split_format
from pytest_lens.datasets.loader import DatasetError, expand_dataset_paths, load_dataset

from .test_longmemeval import instance
from .test_mab import row
from .test_meme import record


@pytest.mark.parametrize(
    ("document", "fmt"),
    [
        ({"version": "1", "scopes": []}, None),
        ([{"sample_id": "c", "conversation": {}, "qa": []}], "locomo"),
        ([instance()], "longmemeval"),
        ([record()], "meme"),
        (row(), "mab"),
        ([{"something": "else"}], None),
        ([], None),
    ],
)
def test_formats_are_detected_from_their_shape(document: object, fmt: str | None) -> None:
    assert detect_format(document) == fmt


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data/x.json", (None, Path("data/x.json"))),
        ("locomo:data/x.json", ("locomo", Path("data/x.json"))),
        ("/proj/locomo:data/x.json", ("locomo", Path("/proj/data/x.json"))),
        ("/proj/mab:/abs/rows.jsonl", ("mab", Path("/abs/rows.jsonl"))),
        ("notaformat:x.json", (None, Path("notaformat:x.json"))),
    ],
)
def test_format_prefixes(text: str, expected: tuple[str | None, Path]) -> None:
    assert split_format(text) == expected


def test_resolving_keeps_the_prefix_in_front(tmp_path: Path) -> None:
    assert resolve_dataset_path(Path("meme:x.json"), tmp_path) == Path(f"meme:{tmp_path / 'x.json'}")
    assert resolve_dataset_path(Path("x.json"), tmp_path) == tmp_path / "x.json"


def test_foreign_files_load_directly_detected_or_prefixed(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([instance()]), encoding="utf-8")
    loaded = load_dataset(path)
    assert loaded.dataset.suite == "longmemeval"
    assert loaded.scopes[0].suite == "longmemeval"
    assert load_dataset(f"longmemeval:{path}").dataset == loaded.dataset
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row()) + "\n" + json.dumps(row()) + "\n", encoding="utf-8")
    assert [s.scope_id for s in load_dataset(f"mab:{rows}").scopes] == [
        "mab_factconsolidation_sh_6k_r001",
        "mab_factconsolidation_sh_6k_r002",
    ]


def test_a_directory_with_a_prefix_expands_to_prefixed_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("[]", encoding="utf-8")
    assert expand_dataset_paths([Path(f"meme:{tmp_path}")]) == [Path(f"meme:{tmp_path / 'a.json'}")]


def test_a_wrongly_prefixed_file_is_an_error_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([instance()]), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(f"locomo:{path}")
    (issue,) = info.value.issues
    assert (issue.path, issue.field, issue.code) == (str(path), "[0].sample_id", "import_locomo")
    assert "not a valid locomo file" in issue.message
