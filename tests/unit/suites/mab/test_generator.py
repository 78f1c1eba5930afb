from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_lens.datasets.bundled import bundled_suite_paths
from pytest_lens.datasets.models import Dataset
from pytest_lens.suites.dump import dump_dataset
from pytest_lens.suites.mab.generator import COMPETENCIES, MabConfig, check_mab_dataset, generate_mab

# Each example generates whole datasets: few examples, derandomized under CI=true.
GENERATOR_SETTINGS = settings(
    max_examples=8 if os.environ.get("CI") == "true" else 15,
    derandomize=os.environ.get("CI") == "true",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
configs = st.builds(
    MabConfig,
    seed=st.integers(0, 10_000),
    chunk_sentences=st.integers(4, 16),
    haystack_chunks=st.integers(4, 24),
    questions_per_competency=st.integers(2, 8),
)


@GENERATOR_SETTINGS
@given(configs)
def test_generation_is_byte_identical_per_seed_and_valid(config: MabConfig) -> None:
    first = dump_dataset(generate_mab(config))
    assert dump_dataset(generate_mab(config)) == first
    assert check_mab_dataset(Dataset.model_validate_json(first)) == []


@GENERATOR_SETTINGS
@given(configs)
def test_each_competency_is_covered_and_asked_after_the_whole_stream(config: MabConfig) -> None:
    dataset = generate_mab(config)
    assert {q.question_type for q in dataset.questions} == set(COMPETENCIES)
    lengths = {scope.scope_id: len(scope.episodes) for scope in dataset.scopes}
    assert all(q.checkpoint_after == lengths[q.scope_id] for q in dataset.questions)


@GENERATOR_SETTINGS
@given(configs)
def test_conflicts_resolve_to_the_newest_fact(config: MabConfig) -> None:
    dataset = generate_mab(config)
    scope = next(s for s in dataset.scopes if s.scope_id == "mab_cr_01")
    lines = [line for e in scope.episodes for line in e.text.splitlines()]
    serials = [int(line.split(".", 1)[0]) for line in lines]
    assert serials == sorted(serials)
    for q in dataset.questions:
        if q.question_type == "conflict_resolution" and q.meta["task"] == "single_hop":
            org = q.prompt.split("chairperson of ")[1].split("?")[0]
            chairs = [line for line in lines if f"chairperson of {org} is" in line]
            assert chairs[-1].endswith(f"{q.answers[0]}.")
            assert all(stale in " ".join(chairs[:-1]) for stale in q.stale_values)


def test_the_bundled_mab_data_is_the_default_generation() -> None:
    (path,) = bundled_suite_paths("mab")
    assert path.read_text(encoding="utf-8") == dump_dataset(generate_mab(MabConfig()))


def test_check_reports_a_gold_answer_missing_from_the_stream() -> None:
    dataset = generate_mab()
    first = dataset.questions[0].model_copy(update={"answers": ("Nowhere Mentioned",)})
    broken = dataset.model_copy(update={"questions": (first, *dataset.questions[1:])})
    assert any("never stated in the stream" in p for p in check_mab_dataset(broken))
