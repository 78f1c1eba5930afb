from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from pytest_lens.datasets.loader import load_dataset
from tests.unit.datasets.importers.test_longmemeval import instance
from tests.unit.datasets.importers.test_mab import row


def test_lens_import_writes_a_valid_lens_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "lme.json"
    source.write_text(json.dumps([instance()]), encoding="utf-8")
    out = tmp_path / "out" / "lme_lens.json"
    assert main(["import", "longmemeval", str(source), "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{source}: 1 scopes, 3 episodes, 1 questions (suite longmemeval)", f"wrote {out}"]
    document = json.loads(out.read_text())
    assert (document["version"], document["suite"]) == ("0.1.0", "longmemeval")
    loaded = load_dataset(out)
    assert loaded.issues == ()
    assert loaded.dataset.questions[0].ground_truth.required_evidence_refs == ("lme_gpt4_2655b836_s002",)


def test_lens_import_mab_with_a_chunk_size(tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps(row()) + "\n", encoding="utf-8")
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    assert main(["import", "mab", str(source), "--out", str(small), "--chunk-tokens", "32"]) == 0
    assert main(["import", "mab", str(source), "--out", str(large), "--chunk-tokens", "4096"]) == 0
    assert len(load_dataset(small).scopes[0].stream) > len(load_dataset(large).scopes[0].stream) == 1


def test_lens_import_reports_a_bad_file_without_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps([{"sample_id": "c1"}]), encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["import", "locomo", str(source), "--out", str(out)]) == 2
    assert capsys.readouterr().out.strip() == f"{source}: not a valid locomo file: [0].conversation: missing"
    assert not out.exists()


def test_lens_import_of_the_real_locomo_file(tmp_path: Path, locomo_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "locomo.json"
    assert main(["import", "locomo", str(locomo_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{locomo_path}: 10 scopes, 272 episodes, 1986 questions (suite locomo)" in printed
    assert "[unknown_evidence_ref]" in printed
    assert len(load_dataset(out).dataset.questions) == 1986


def test_lens_generate_suite_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["generate-suite", "meme", "--seed", "3", "--scale", "1", "--out", str(a)]) == 0
    assert main(["generate-suite", "meme", "--seed", "3", "--scale", "1", "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert [s.scope_id for s in load_dataset(a).scopes] == ["meme_pl_01", "meme_sw_01"]
    assert main(["generate-suite", "mab", "--out", str(tmp_path / "m.json")]) == 0


def write_parquet(path: Path, rows: list[dict[str, object]]) -> Path:
    pa = pytest.importorskip("pyarrow", reason="the mab extra (installed by the dev extra) provides pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_mab_parquet_rows_import_like_their_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [row(), row(metadata={"source": "factconsolidation_sh_6k"})]
    parquet = write_parquet(tmp_path / "Conflict_Resolution-00000-of-00001.parquet", rows)
    as_json = tmp_path / "rows.json"
    as_json.write_text(json.dumps(rows), encoding="utf-8")
    from_parquet, from_json = tmp_path / "p.json", tmp_path / "j.json"
    assert main(["import", "mab", str(parquet), "--out", str(from_parquet)]) == 0
    assert main(["import", "mab", str(as_json), "--out", str(from_json)]) == 0
    assert f"{parquet}: 2 scopes," in capsys.readouterr().out
    assert from_parquet.read_text() == from_json.read_text()
    # --lens-dataset reads the parquet file directly too (format detected from its rows).
    loaded = load_dataset(parquet)
    assert loaded.dataset.suite == "mab" and len(loaded.scopes) == 2
    assert loaded.dataset == load_dataset(as_json).dataset


def test_an_unreadable_parquet_file_is_a_clear_dataset_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_lens.datasets.loader import DatasetError

    broken = tmp_path / "rows.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    pytest.importorskip("pyarrow", reason="the mab extra (installed by the dev extra) provides pyarrow")
    with pytest.raises(DatasetError) as caught:
        load_dataset(broken)
    (issue,) = caught.value.issues
    assert (issue.path, issue.code) == (str(broken), "invalid_parquet")
    assert issue.message.startswith("not a readable parquet file")

    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("pyarrow"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "pyarrow" else real_find_spec(name, *rest))
    with pytest.raises(DatasetError) as caught:
        load_dataset(broken)
    message = caught.value.issues[0].message
    assert message == "reading parquet needs the mab extra (pyarrow is not installed): pip install 'pytest-lens[mab]'"
    assert main(["import", "mab", str(broken), "--out", str(tmp_path / "o.json")]) == 2


def test_lens_import_of_a_device_says_so_without_reading_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 32: `lens import locomo /dev/zero` read until MemoryError.
    assert main(["import", "locomo", "/dev/zero", "--out", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().out.strip() == "/dev/zero: cannot read: /dev/zero is a device, not a file"


def test_lens_import_of_a_file_over_the_limit_names_the_limit_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "lme.json"
    source.write_text(json.dumps([instance()]), encoding="utf-8")
    monkeypatch.setenv("LENS_MAX_INPUT_BYTES", "100")
    assert main(["import", "longmemeval", str(source), "--out", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().out.strip() == (
        f"{source}: cannot read: {source} is larger than 100 bytes, the most read (set LENS_MAX_INPUT_BYTES to read larger files)"
    )
    monkeypatch.setenv("LENS_MAX_INPUT_BYTES", str(source.stat().st_size))  # at the limit: read
    assert main(["import", "longmemeval", str(source), "--out", str(tmp_path / "out.json")]) == 0


def test_a_dataset_that_is_a_device_is_a_dataset_error() -> None:
    from pytest_lens.datasets.loader import DatasetError

    with pytest.raises(DatasetError, match="/dev/zero is a device, not a file"):
        load_dataset(Path("/dev/zero"))
