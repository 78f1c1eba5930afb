"""Issue 15, defect 5: deeply nested JSON is an ordinary error at every entry point, never a RecursionError.

Every loader reads through :mod:`pytest_lens.datasets.json_document`: datasets (JSON and JSON Lines, every import
format), scope directories' ``questions.json`` (and their ``spec.yaml``), labels sidecars, and the run
artifacts ``lens show``, ``lens report`` (one run or several merged) and ``lens compare`` read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from pytest_lens.datasets import DatasetError, load_dataset
from pytest_lens.datasets.json_document import MAX_DEPTH, JsonDocumentError, read_json, read_json_lines
from pytest_lens.records.results import RunArtifact
from pytest_lens.runs.storage import write_run
from tests.scope_dirs import write_scope_dir
from tests.support import small_dataset, write_dataset

DEEP = "[" * 100_000


def run_lens(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_deeply_nested_json_is_refused_naming_where() -> None:
    with pytest.raises(JsonDocumentError, match=rf"nested too deeply \(over {MAX_DEPTH} levels\) at line 1 column \d+") as info:
        read_json(DEEP)
    assert info.value.code == "too_deep" and info.value.line == 1
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert read_json(nested.encode()) == json.loads(nested)  # as deep as allowed still reads


def test_json_errors_name_the_line_and_column_and_a_bom_is_allowed() -> None:
    with pytest.raises(JsonDocumentError, match=r"^not valid JSON: .* at line 3 column \d+$") as info:
        read_json(b'{\n "a": 1,\n "b": }')
    assert info.value.code == "invalid_json" and info.value.line == 3
    assert read_json(b'\xef\xbb\xbf{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


def test_rough_edges_jsonl_errors_name_the_line_of_the_file() -> None:
    data = b'{"a": 1}\n\n{"a": 2}\n{"a": \n'
    with pytest.raises(JsonDocumentError, match=r"at line 4 column \d+$") as info:
        read_json_lines(data)
    assert info.value.line == 4
    assert read_json_lines(data[: data.index(b'{"a": \n')]) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_deeply_nested_json_lens_validate_and_load_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = tmp_path / name
    path.write_text(DEEP)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    (issue,) = info.value.issues
    assert issue.code == "too_deep" and issue.path == str(path)
    status, printed = run_lens(capsys, "validate", str(path))
    assert status == 1
    assert f"{path}: INVALID" in printed and "nested too deeply" in printed and "[too_deep]" in printed


@pytest.mark.parametrize(("fmt", "name"), [("locomo", "x.json"), ("longmemeval", "x.json"), ("meme", "x.json"), ("mab", "x.jsonl")])
def test_deeply_nested_json_every_lens_import_format(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(DEEP)
    status, printed = run_lens(capsys, "import", fmt, str(path), "--out", str(tmp_path / "out.json"))
    assert status == 2
    assert f"{path}: cannot read: nested too deeply (over {MAX_DEPTH} levels) at line 1 column" in printed
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(("file", "code"), [("generated/questions.json", "too_deep"), ("spec.yaml", "too_deep")])
def test_deeply_nested_json_scope_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, code: str) -> None:
    directory = write_scope_dir(tmp_path)
    (directory / file).write_text(DEEP)
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    assert [issue.code for issue in info.value.issues] == [code]
    status, printed = run_lens(capsys, "validate", str(directory))
    assert status == 1 and "nested too deeply" in printed
    status, printed = run_lens(capsys, "import", "lens-dir", str(directory), "--out", str(tmp_path / "out.json"))
    assert status == 2 and "nested too deeply" in printed


def test_deeply_nested_json_labels_sidecar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_dataset(tmp_path / "trial.json", small_dataset())
    (tmp_path / "trial.labels.json").write_text(DEEP)
    with pytest.raises(DatasetError, match="nested too deeply") as info:
        load_dataset(path)
    assert info.value.issues[0].path == str(tmp_path / "trial.labels.json")
    status, printed = run_lens(capsys, "validate", str(path))
    assert status == 1 and "nested too deeply" in printed


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{deep}"],
        ["report", "{deep}", "--html", "{out}"],
        ["report", "{good}", "{deep}", "--html", "{out}"],
        ["compare", "{good}", "{deep}"],
        ["compare", "{deep}", "{good}"],
    ],
    ids=["show", "report", "report-merge", "compare-current", "compare-baseline"],
)
def test_deeply_nested_json_run_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example_run: RunArtifact, argv: list[str]
) -> None:
    deep, good = tmp_path / "deep.json", tmp_path / "good.json"
    deep.write_text(DEEP)
    write_run(good, example_run)
    values = {"deep": str(deep), "good": str(good), "out": str(tmp_path / "r.html")}
    status, printed = run_lens(capsys, *(part.format(**values) for part in argv))
    assert status == 2
    assert f"{deep}: not a pytest-lens run artifact (nested too deeply (over {MAX_DEPTH} levels) at line 1 column" in printed
