"""Signal/distractor labels for the scorer: from episode meta or a NAME.labels.json sidecar, never a dataset themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.datasets import DatasetError, KeyFact, load_dataset, load_datasets
from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.datasets.labels import labels_path
from tests.support import episode, question, small_dataset, write_dataset


def unlabelled() -> dict[str, object]:
    document = small_dataset()
    for record in document["scopes"][0]["episodes"]:  # type: ignore[index]
        record["meta"] = {}
    return document


def test_labels_come_from_episode_meta(tmp_path: Path) -> None:
    (scope,) = load_dataset(write_dataset(tmp_path / "d.json", small_dataset())).scopes
    assert scope.signal_labels == {"e1": True, "e2": False, "e3": True, "e4": False, "e5": True, "e6": False}


def test_boolean_meta_labels(tmp_path: Path) -> None:
    document = {
        "scopes": [{"scope_id": "s1", "episodes": [episode("a", 1, "x", is_signal=True), episode("b", 2, "y", is_distractor=True)]}],
        "questions": [question("q", 2, ["a"], ["x"])],
    }
    (scope,) = load_dataset(write_dataset(tmp_path / "d.json", document)).scopes
    assert scope.signal_labels == {"a": True, "b": False}


def test_no_labels_anywhere_means_none(tmp_path: Path) -> None:
    (scope,) = load_dataset(write_dataset(tmp_path / "d.json", unlabelled())).scopes
    assert scope.signal_labels is None


def test_a_sidecar_labels_the_scorer_side_and_a_directory_load_skips_it(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "trial.json", unlabelled())
    sidecar = labels_path(path)
    assert sidecar.name == "trial.labels.json"
    sidecar.write_text(json.dumps({"episodes": {"e1": {"kind": "signal"}, "e2": "distractor", "e3": {"kind": "signal", "phase": "x"}}}))
    (loaded,) = load_datasets([tmp_path])
    assert loaded.path == str(path)  # the sidecar is not loaded as a dataset
    (scope,) = loaded.scopes
    assert scope.signal_labels == {"e1": True, "e2": False, "e3": True}
    assert all(not e.meta for e in scope.stream)  # nothing rides along with the episodes an adapter stores


def test_a_malformed_sidecar_stops_the_run_naming_the_file(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "trial.json", unlabelled())
    labels_path(path).write_text(json.dumps({"episodes": {"e1": {"kind": "maybe"}}}))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    (issue,) = info.value.issues
    assert issue.path == str(tmp_path / "trial.labels.json") and issue.code == "labels"
    assert (issue.field, issue.message) == ("episodes.e1", "expected kind 'signal' or 'distractor', got 'maybe'")


def test_sidecar_labels_for_unknown_episodes_are_a_warning(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "trial.json", unlabelled())
    labels_path(path).write_text(json.dumps({"episodes": {"e1": "signal", "zz": "signal"}}))
    loaded = load_dataset(path)
    assert [(w.code, w.message) for w in loaded.warnings] == [("labels_unknown_ref", "labels for episodes not in trial.json: zz")]
    assert loaded.scopes[0].signal_labels == {"e1": True}


def test_every_bundled_scope_ships_its_labels_and_shows_none_of_them() -> None:
    for path in bundled_dataset_paths():
        (scope,) = load_dataset(path).scopes
        assert scope.signal_labels is not None and len(scope.signal_labels) == 120
        assert sum(scope.signal_labels.values()) == 30
        assert all(not e.meta for e in scope.stream)


def test_a_key_fact_is_printed_when_it_or_an_alias_appears_by_the_checkpoint(tmp_path: Path) -> None:
    (scope,) = load_dataset(write_dataset(tmp_path / "d.json", small_dataset())).scopes
    assert scope.fact_printed(KeyFact(fact="5.9 bar"), 3)
    assert not scope.fact_printed(KeyFact(fact="5.9 bar"), 2)  # printed by e3, not yet ingested
    assert scope.fact_printed(KeyFact(fact="pressure 7.20 bar", aliases=("Seal Leak",)), 5)  # normalised alias
    assert not scope.fact_printed(KeyFact(fact="the seal failed under rising pressure"), 6)  # a finding, not a quote
