from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from pytest_lens.datasets import load_dataset, load_datasets


def test_generate_writes_a_valid_scope_and_is_reproducible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["generate", "--domain", "insider_threat", "--seed", "5", "--out", str(first)]) == 0
    assert main(["generate", "--domain", "insider_threat", "--seed", "5", "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    out = capsys.readouterr().out
    assert f"wrote {first}: insider_threat_s05, 120 episodes (30 signal, 90 distractors), 24 questions" in out
    assert load_dataset(first, strict=True).issues == ()


def test_generate_sizes_and_sidecar_labels(tmp_path: Path) -> None:
    out, labels = tmp_path / "scope.json", tmp_path / "labels.json"
    args = ["generate", "--domain", "clinical_trial", "--seed", "2", "--out", str(out), "--labels", str(labels)]
    assert main([*args, "--signal", "40", "--distractors", "60", "--scope-id", "trial_x"]) == 0
    document = json.loads(out.read_text())
    assert document["scopes"][0]["scope_id"] == "trial_x" and len(document["scopes"][0]["episodes"]) == 100
    assert len(json.loads(labels.read_text())["episodes"]) == 100
    assert main(["generate", "--domain", "clinical_trial", "--out", str(out), "--scale", "1000"]) == 0
    assert len(json.loads(out.read_text())["scopes"][0]["episodes"]) == 1000


def test_generate_all_domains_into_a_directory_with_labels_beside_each(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert main(["generate", "--domain", "all", "--seed", "3", "--out", str(data), "--labels", str(data)]) == 0
    names = sorted(p.name for p in data.iterdir())
    assert len(names) == 12 and {"capacity_regime_s03.json", "capacity_regime_s03.labels.json"} <= set(names)
    # A run over the directory loads the six scopes, and each finds its labels for the scorer.
    loaded = load_datasets([data])
    assert len(loaded) == 6 and all(scope.signal_labels for d in loaded for scope in d.scopes)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scale", "1000", "--signal", "40"], "--scale sets the signal and distractor counts itself"),
        (["--scale", "50"], "--scale: scale must be between 120 and 100,000 episodes, got 50"),
        (["--signal", "10"], "--signal 10: the five-phase arc needs at least 30 signal episodes"),
        (["--distractors", "-1"], "--distractors -1: must be 0 or more"),
        (["--seed", "-3"], "seed must be a non-negative integer, got -3"),
    ],
)
def test_generate_rejects_bad_options_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    out = tmp_path / "x.json"
    assert main(["generate", "--domain", "cascading_failure", "--out", str(out), *extra]) == 2
    assert message in capsys.readouterr().out
    assert not out.exists()


def test_generate_all_needs_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.json"
    target.write_text("{}")
    assert main(["generate", "--domain", "all", "--out", str(target)]) == 2
    assert "give a directory" in capsys.readouterr().out
    assert main(["generate", "--domain", "all", "--out", str(tmp_path / "d"), "--labels", str(tmp_path / "l.json")]) == 2
    assert "--labels " in capsys.readouterr().out and not (tmp_path / "d").exists()
