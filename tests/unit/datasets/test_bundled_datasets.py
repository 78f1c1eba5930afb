"""The bundled LENS scopes: what the generator makes at the bundled seed, clean under ``lens validate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from pytest_lens.datasets.bundled import BUNDLED_SEED, bundled_dataset_paths
from pytest_lens.datasets.labels import labels_path
from pytest_lens.generator import DOMAINS, generate_scope


def test_one_bundled_scope_per_domain_byte_identical_to_the_generator_with_its_labels_beside_it() -> None:
    paths = {path.name: path for path in bundled_dataset_paths()}
    assert sorted(paths) == sorted(f"{domain}_s{BUNDLED_SEED:02d}.json" for domain in DOMAINS)
    regenerate = (
        f"regenerate with `lens generate --domain all --seed {BUNDLED_SEED} "
        "--out src/pytest_lens/datasets/data --labels src/pytest_lens/datasets/data`"
    )
    for domain in DOMAINS:
        scope = generate_scope(domain, BUNDLED_SEED)
        path = paths[f"{domain}_s{BUNDLED_SEED:02d}.json"]
        assert path.read_text(encoding="utf-8") == scope.to_json(), f"{domain}: {regenerate}"
        assert labels_path(path).read_text(encoding="utf-8") == scope.labels_json(), f"{domain} labels: {regenerate}"


def test_lens_validate_is_clean_on_the_bundled_scopes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--strict", *map(str, bundled_dataset_paths())]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert all(": ok - " in line and "(120 episodes, 24 questions)" in line for line in lines)


def test_lens_validate_lists_every_known_defect_of_the_real_scope(lens_scope_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(lens_scope_path.parent)]) == 0
    out = capsys.readouterr().out
    codes = [line.rsplit("[", 1)[1].rstrip("]") for line in out.splitlines() if line.startswith("  warning")]
    assert sorted(codes) == ["empty_key_facts"] * 4 + ["id_label_leak", "label_meta"]
    for question in ("cf01_q02_null", "cf01_q09_longitudinal", "cf01_q10_evidence", "cf01_q23_null"):
        assert f"question {question!r} has no key facts" in out
    assert "episode_type, phase, signal_density, theme" in out


def test_lens_list_shows_the_six_bundled_scopes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for domain in DOMAINS:
        assert f"{domain}_s{BUNDLED_SEED:02d}" in out
    assert out.count("120 episodes   24 questions") == 6
