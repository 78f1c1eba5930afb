from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.records.results import RunArtifact
from pytest_lens.records.rows import FileRows, RowError, rows_path
from pytest_lens.runs.storage import (
    RunStore,
    SavedRunError,
    commit_info,
    load_run,
    machine_info,
    open_baseline,
    resolve_run,
    write_run,
)
from tests.support import inline_artifact, run_lens_session


def artifact(created: str = "2026-01-01T00:00:00+00:00") -> RunArtifact:
    return RunArtifact(pytest_lens_version="0.1.0", created=created, run={"seed": 42}, results=[], summary={}, machine=machine_info())


def test_saves_are_numbered_per_machine_and_found_by_name_number_or_label(tmp_path: Path) -> None:
    store = RunStore(tmp_path / ".lens", machine_id="Linux-CPython-3.11-64bit")
    first = store.save(artifact("one"), "main")
    second = store.save(artifact("two"), "feature")
    third = store.save(artifact("three"), "main")
    assert [p.name for p in (first, second, third)] == ["0001_main.json", "0002_feature.json", "0003_main.json"]
    assert first.parent == tmp_path / ".lens" / "Linux-CPython-3.11-64bit"
    assert store.find("main").path == third  # the latest of that name
    assert store.find("0001").path == first
    assert store.find("0002_feature").path == second
    assert load_run(third).created == "three"
    assert not list(first.parent.glob("*.partial"))


def test_this_machines_runs_win_over_other_machines(tmp_path: Path) -> None:
    other = RunStore(tmp_path, machine_id="Darwin-CPython-3.12-64bit")
    ours = RunStore(tmp_path, machine_id="Linux-CPython-3.11-64bit")
    other.save(artifact(), "main")
    other.save(artifact(), "main")
    assert ours.find("main").path.parent.name == "Darwin-CPython-3.12-64bit"  # only there: still found
    mine = ours.save(artifact(), "main")
    assert ours.find("main").path == mine


def test_unknown_names_list_what_is_saved(tmp_path: Path) -> None:
    store = RunStore(tmp_path, machine_id="m")
    store.save(artifact(), "main")
    with pytest.raises(SavedRunError, match=r"no saved run 'nope' under .* \(saved: m/0001_main\); save one with --lens-save=nope"):
        store.find("nope")
    with pytest.raises(SavedRunError, match="letters, digits"):
        store.save(artifact(), "../escape")


def test_baselines_are_paths_or_saved_names(tmp_path: Path) -> None:
    store = RunStore(tmp_path / ".lens", machine_id="m")
    saved = store.save(artifact(), "main")
    direct = tmp_path / "run.json"
    write_run(direct, artifact("direct"))
    assert resolve_run("run.json", store, (tmp_path,)) == (direct, "run.json")
    assert resolve_run(str(direct), store) == (direct, "run.json")
    assert resolve_run("main", store, (tmp_path,)) == (saved, "0001_main")
    with pytest.raises(SavedRunError, match=r"baseline file 'missing\.json' does not exist"):
        resolve_run("missing.json", store, (tmp_path,))
    baseline = open_baseline("main", store)
    assert baseline.info.name == "0001_main" and baseline.info.machine == machine_info().machine_id


def test_broken_artifacts_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"pytest_lens_version": "0", "created": "x", "run": {}, "results": [{"adapter": 1}], "summary": {}}))
    with pytest.raises(SavedRunError, match=r"bad.json: not a pytest-lens run artifact \(\d+ problem\(s\); first: results.0.adapter"):
        load_run(path)
    with pytest.raises(SavedRunError, match="cannot read"):
        load_run(tmp_path / "absent.json")


@pytest.fixture(scope="module")
def real_artifact(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The artifact of a real run of the small demo scope with BM25, as a single-file artifact (schema 1) held it."""
    session = run_lens_session(tmp_path_factory.mktemp("real"), {"bm25": "bm25"})
    return inline_artifact(session.artifact())


def _set_metric(name: str, value: float) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document["results"][1]["metrics"][name] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set_metric("fact_recall", 1e308), r"results\[1\]\.metrics\.fact_recall: 1e\+308 is outside \[0, 1\]"),
        (_set_metric("fact_recall", -5.0), r"results\[1\]\.metrics\.fact_recall: -5\.0 is outside \[0, 1\]"),
        (
            _set_metric("session_recall_above_chance", -5.0),
            r"results\[1\]\.metrics\.session_recall_above_chance: -5\.0 is outside \[-1, 1\]",
        ),
        (lambda document: document["results"][2].update(composite=float("nan")), r"results\[2\]\.composite: nan is outside \[0, 1\]"),
        (
            lambda document: document.update(schema_version=999),
            r"schema_version: 999 is a newer artifact format \(this pytest-lens reads 1 to 2\)",
        ),
        (
            lambda document: document["results"].append(document["results"][0]),
            r"results\[\d+\]: duplicates results\[0\] \(adapter \w+, scope \w+, budget 16k, question \w+, repetition 0\)",
        ),
    ],
    ids=["huge_metric", "negative_metric", "signed_metric_below_minus_one", "nan_composite", "future_schema", "duplicate_result"],
)
def test_baselines_are_range_checked(
    tmp_path: Path, real_artifact: dict[str, Any], edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    # Issue 15: a metric of 1e308 printed as "baseline inf", -5 as "+5.000", schema_version 999 passed unquestioned.
    path = tmp_path / "0001_main.json"
    path.write_text(json.dumps(real_artifact))
    assert len(load_run(path).results) == 8  # the real artifact itself is valid
    document = copy.deepcopy(real_artifact)
    edit(document)
    path.write_text(json.dumps(document))
    with pytest.raises(SavedRunError, match=rf"0001_main\.json: {message}.*damaged or was not written by pytest-lens"):
        load_run(path)


def _edit_row(index: int, edit: Callable[[dict[str, Any]], None]) -> Callable[[list[bytes]], list[bytes]]:
    def rows(lines: list[bytes]) -> list[bytes]:
        row = json.loads(lines[index])
        edit(row)
        return [*lines[:index], json.dumps(row).encode(), *lines[index + 1 :]]

    return rows


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_edit_row(1, lambda row: row["metrics"].update(fact_recall=1e308)), r":2: metrics\.fact_recall: 1e\+308 is outside \[0, 1\]"),
        (_edit_row(2, lambda row: row.update(composite=float("nan"))), r":3: composite: nan is outside \[0, 1\]"),
        (_edit_row(0, lambda row: row.update(adapter=1)), r":1: not a pytest-lens result row \(1 problem\(s\); first: adapter"),
        (lambda lines: [*lines, lines[0]], r":9: duplicates line 1 \(bm25/cold_chain_demo/16k/ccd_q01_null_hypothesis/0\)"),
        (lambda lines: lines[:-1], r": 7 rows, the run document says 8; the file is damaged or not this run's"),
        (lambda lines: [*lines[:-1], lines[-1][:40]], r":8: the last row is cut short"),
    ],
    ids=["huge_metric", "nan_composite", "not_a_row", "duplicate_row", "row_missing", "row_cut_short"],
)
def test_rows_are_checked_as_they_are_read(
    tmp_path: Path, real_artifact: dict[str, Any], edit: Callable[[list[bytes]], list[bytes]], message: str
) -> None:
    # The rows of a streamed artifact are read lazily: the document loads, and a row at fault is named, with its file and
    # line, when it is read, whole or for computing.
    path = tmp_path / "run.json"
    write_run(path, RunArtifact.model_validate(real_artifact))
    assert [r.question_id for r in load_run(path).results.scored()] == [r["question_id"] for r in real_artifact["results"]]
    lines = rows_path(path).read_bytes().splitlines()
    cut = edit(lines)
    rows_path(path).write_bytes(b"".join(line + b"\n" for line in cut[:-1]) + cut[-1] + (b"" if "cut short" in message else b"\n"))
    loaded = load_run(path)
    for read in (list, lambda rows: list(rows.scored())):
        with pytest.raises(RowError, match=rf"run\.rows\.jsonl{message}"):
            read(loaded.results)


def test_an_unfinished_run_reads_every_complete_row(tmp_path: Path, real_artifact: dict[str, Any]) -> None:
    # A document without a count is the one written at a run's first result: the run was killed; what it wrote is read.
    path = tmp_path / "run.json"
    write_run(path, RunArtifact.model_validate(real_artifact))
    document = json.loads(path.read_text())
    document["rows"] = {"file": "run.rows.jsonl"}
    path.write_text(json.dumps(document))
    lines = rows_path(path).read_bytes().splitlines()
    rows_path(path).write_bytes(b"".join(line + b"\n" for line in lines[:5]) + lines[5][:60])  # killed while writing row 6
    assert [r.question_id for r in load_run(path).results] == [r["question_id"] for r in real_artifact["results"][:5]]
    assert len(FileRows(rows_path(path))) == 5


@pytest.mark.parametrize("name", ["../elsewhere.jsonl", "/etc/passwd", ""])
def test_a_rows_file_is_beside_its_document(tmp_path: Path, name: str) -> None:
    path = tmp_path / "run.json"
    write_run(path, artifact())
    document = json.loads(path.read_text())
    document["rows"]["file"] = name
    path.write_text(json.dumps(document))
    with pytest.raises(SavedRunError, match=r"rows\.file: .* is not a file name \(the rows file is beside its run document\)"):
        load_run(path)


def test_machine_and_commit_info(tmp_path: Path) -> None:
    info = machine_info()
    assert info.machine_id.startswith(f"{info.system}-{info.python_implementation}-")
    assert commit_info(tmp_path) is None  # not a git work tree
    here = commit_info(Path(__file__).parent)
    if here is not None:  # a source checkout (CI clones are): the commit is a 40-hex id
        assert len(here.id) == 40


@pytest.mark.parametrize(
    ("reference", "kind"),
    [("runs/", "a directory"), ("/dev/null", "a character device"), ("/dev/zero", "a character device")],
)
def test_a_baseline_that_is_not_a_file_says_what_it_is(tmp_path: Path, reference: str, kind: str) -> None:
    # Issue 32: each of these was "baseline file ... does not exist"; /dev/zero must not be read either.
    (tmp_path / "runs").mkdir()
    store = RunStore(tmp_path / ".lens", machine_id="m")
    with pytest.raises(SavedRunError) as caught:
        open_baseline(reference, store, (tmp_path,))
    assert str(caught.value).startswith(f"baseline {reference!r} is {kind} (")
    assert str(caught.value).endswith("not a run artifact file")


@pytest.mark.parametrize("where", ["result metric", "result composite", "summary metric", "summary headline"])
def test_a_boolean_score_is_refused_not_read_as_one(
    tmp_path: Path, example_run: RunArtifact, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # Issue 32: lens compare and lens report read a metric of `true` as 1.0.
    from pytest_lens.cli.main import main

    document = inline_artifact(example_run)
    target = document["results"][0] if where.startswith("result ") else next(iter(document["summary"].values()))
    if where.endswith("metric"):
        target["metrics"][next(iter(target["metrics"]))] = True
    else:
        target[where.split()[1]] = True
    path = tmp_path / "bool.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SavedRunError, match=r"is true, a boolean; scores are numbers"):
        load_run(path)
    good = tmp_path / "good.json"
    write_run(good, example_run)
    assert main(["compare", str(good), str(path)]) == 2
    assert "a boolean; scores are numbers" in capsys.readouterr().err


def test_a_rows_file_that_is_a_device_is_not_read(tmp_path: Path) -> None:
    # /dev/zero is one endless line: read as rows it would fill the memory. Like every side file, it is refused unread.
    path = tmp_path / "run.json"
    write_run(path, artifact())
    rows_path(path).unlink()
    rows_path(path).symlink_to("/dev/zero")
    with pytest.raises(RowError, match=r"cannot read the run's rows: .*run\.rows\.jsonl is a device, not a file"):
        list(load_run(path).results.scored())
