from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_lens.datasets.bundled import bundled_suite_paths
from pytest_lens.datasets.models import Dataset
from pytest_lens.suites.dump import dump_dataset
from pytest_lens.suites.meme.generator import MemeConfig, check_meme_dataset, generate_meme
from pytest_lens.suites.meme.tasks import TASKS
from pytest_lens.text import normalize

# Each example generates whole datasets: few examples, derandomized under CI=true.
GENERATOR_SETTINGS = settings(
    max_examples=8 if os.environ.get("CI") == "true" else 15,
    derandomize=os.environ.get("CI") == "true",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

configs = st.builds(
    MemeConfig,
    seed=st.integers(0, 10_000),
    episodes_per_domain=st.integers(1, 4),
    fillers_per_gap=st.integers(0, 2),
    two_hop=st.booleans(),
    domains=st.sampled_from([("pl",), ("sw",), ("pl", "sw")]),
)


@GENERATOR_SETTINGS
@given(configs)
def test_generation_is_byte_identical_per_seed_and_valid(config: MemeConfig) -> None:
    first = dump_dataset(generate_meme(config))
    assert dump_dataset(generate_meme(config)) == first
    dataset = Dataset.model_validate_json(first)  # the written JSON round-trips
    assert check_meme_dataset(dataset) == []


@GENERATOR_SETTINGS
@given(configs)
def test_every_episode_has_all_six_tasks_and_probes_straddle_the_change(config: MemeConfig) -> None:
    dataset = generate_meme(config)
    for scope in dataset.scopes:
        questions = [q for q in dataset.questions if q.scope_id == scope.scope_id]
        assert {q.question_type for q in questions if q.phase == "after"} == set(TASKS)
        change = next(i for i, e in enumerate(scope.episodes, start=1) if e.meta.get("evidence_type") == "Change+Delete Event")
        assert all(q.checkpoint_after < change for q in questions if q.phase == "before")
        assert all(q.checkpoint_after >= change for q in questions if q.phase == "after")
        hops = {q.meta.get("hop") for q in questions if q.question_type == "cascade"}
        assert hops == ({1, 2} if config.two_hop else {1})
        # Each Cascade after-value is announced only by its rule, before the change.
        for q in questions:
            if q.question_type == "cascade" and q.phase == "after":
                new = normalize(q.ground_truth.key_facts[0].fact)
                stating = [e for e in scope.episodes if new in normalize(e.text)]
                assert stating
                assert all("will be" in e.text for e in stating)


def test_different_seeds_give_different_episodes() -> None:
    assert dump_dataset(generate_meme(MemeConfig(seed=1))) != dump_dataset(generate_meme(MemeConfig(seed=2)))


def test_the_bundled_meme_data_is_the_default_generation() -> None:
    (path,) = bundled_suite_paths("meme")
    assert path.read_text(encoding="utf-8") == dump_dataset(generate_meme(MemeConfig()))


def test_check_reports_a_missing_before_probe_and_a_leaking_filler() -> None:
    dataset = generate_meme(MemeConfig(episodes_per_domain=1, domains=("sw",)))
    questions = tuple(q for q in dataset.questions if not (q.phase == "before" and q.question_type == "deletion"))
    deleted = next(q for q in dataset.questions if q.question_type == "deletion" and q.phase == "after").stale_values[0]
    scope = dataset.scopes[0]
    filler = next(e for e in scope.episodes if e.meta.get("session_type") == "filler")
    leaky = filler.model_copy(update={"text": filler.text + f"\nUser: by the way {deleted}"})
    episodes = tuple(leaky if e.episode_id == filler.episode_id else e for e in scope.episodes)
    broken = dataset.model_copy(update={"questions": questions, "scopes": (scope.model_copy(update={"episodes": episodes}),)})
    problems = check_meme_dataset(broken)
    assert any("no before-probe" in p for p in problems)
    assert any("filler mentions episode values" in p for p in problems)


def test_config_rejects_unknown_domains() -> None:
    import pytest

    with pytest.raises(ValueError, match="unknown MEME domain"):
        MemeConfig(domains=("xx",))
