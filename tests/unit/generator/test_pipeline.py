from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.datasets import load_dataset
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, Question, Scope
from pytest_lens.generator import GeneratorError, generate_scope, scaled_sizes
from pytest_lens.generator.guarantees import guarantee_problems
from pytest_lens.generator.spec import DomainSpec


def test_the_written_file_loads_and_the_labels_stay_beside_it(tmp_path: Path) -> None:
    scope = generate_scope("cascading_failure", 11)
    scope.write(tmp_path / "scope.json", tmp_path / "labels.json")
    loaded = load_dataset(tmp_path / "scope.json", strict=True)
    assert loaded.issues == () and len(loaded.scopes[0].stream) == 120
    labels = json.loads((tmp_path / "labels.json").read_text())
    kinds = [row["kind"] for row in labels["episodes"].values()]
    assert kinds.count("signal") == 30 and kinds.count("distractor") == 90
    assert "kind" not in (tmp_path / "scope.json").read_text()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"domain": "weather", "seed": 1}, "unknown domain 'weather'"),
        ({"domain": "cascading_failure", "seed": -1}, "non-negative integer"),
        ({"domain": "cascading_failure", "seed": 1, "signal": 29}, "at least 30"),
        ({"domain": "cascading_failure", "seed": 1, "distractors": -5}, "0 or more"),
    ],
)
def test_bad_requests_get_a_clear_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(GeneratorError, match=message):
        generate_scope(**kwargs)  # type: ignore[arg-type]


def test_a_domain_without_themes_is_refused() -> None:
    from pytest_lens.generator.domains import DOMAINS

    bare = DomainSpec(**{**vars(DOMAINS["insider_threat"]), "themes": ()})
    with pytest.raises(GeneratorError, match="no distractor themes"):
        generate_scope(bare, 1)


def test_scaled_sizes() -> None:
    assert scaled_sizes(120) == (30, 90)
    assert scaled_sizes(1_000) == (86, 914)
    assert scaled_sizes(100_000) == (866, 99_134)
    with pytest.raises(GeneratorError, match="between 120 and 100,000"):
        scaled_sizes(100_001)


def test_a_thousand_episode_stream_keeps_every_promise() -> None:
    signal, distractors = scaled_sizes(1_000)
    scope = generate_scope("environmental_drift", 21, signal=signal, distractors=distractors, verify=False)
    assert len(scope.dataset.scopes[0].episodes) == 1_000
    assert guarantee_problems(scope.dataset, {ref: label.kind == "signal" for ref, label in scope.labels.items()}) == []


def _tiny(text: str, refs: tuple[str, ...], checkpoint: int, meta: dict[str, str] | None = None) -> Dataset:
    episodes = (
        Episode(episode_id="s_e001", scope_id="s", timestamp="2025-01-01T08:00:00", text="pump Alpha pressure 4.1 bar"),
        Episode(episode_id="s_e002", scope_id="s", timestamp="2025-01-01T09:00:00", text=text, meta=meta or {}),
    )
    truth = GroundTruth(canonical_answer="a", required_evidence_refs=refs, key_facts=("pressure 4.1 bar", "alpha"))
    question = Question(
        question_id="q1", scope_id="s", checkpoint_after=checkpoint, question_type="longitudinal", prompt="p?", ground_truth=truth
    )
    return Dataset(scopes=(Scope(scope_id="s", episodes=episodes),), questions=(question,))


def test_the_self_check_names_each_broken_promise() -> None:
    signal = {"s_e001": True, "s_e002": False}
    assert guarantee_problems(_tiny("cafeteria covers 640", ("s_e001",), 2), signal) == ["q1: episode s_e001 alone holds every key fact"]
    problems = guarantee_problems(_tiny("pump Beta covers 640", ("s_e002",), 1, {"phase": "x"}), signal)
    assert any("distractor uses storyline terms ['pump']" in p for p in problems)
    assert any("s_e002: meta is not empty" in p for p in problems)
    assert any("not ingested by checkpoint 1" in p for p in problems)
    assert any("key fact 'pressure 4.1 bar' is in none of its required refs" in p for p in problems)
    assert any(p.startswith("validator:") and "evidence_after_checkpoint" in p for p in problems)


def test_output_does_not_depend_on_hash_randomisation() -> None:
    import hashlib
    import os
    import subprocess
    import sys

    code = "from pytest_lens.generator import generate_scope; import sys; sys.stdout.write(generate_scope('insider_threat', 12).to_json())"
    digests = set()
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout
        digests.add(hashlib.sha256(out).hexdigest())
    assert digests == {hashlib.sha256(generate_scope("insider_threat", 12).to_json().encode()).hexdigest()}


def test_a_primary_series_too_coarse_to_show_its_noise_is_refused() -> None:
    from dataclasses import replace

    from pytest_lens.generator.domains import DOMAINS
    from pytest_lens.generator.spec import Role

    domain = DOMAINS["insider_threat"]
    series = tuple(replace(s, decimals=0) if s.role is Role.PRIMARY else s for s in domain.series)
    with pytest.raises(ValueError, match="varies by less than 5 printed units a day"):
        replace(domain, series=series)
