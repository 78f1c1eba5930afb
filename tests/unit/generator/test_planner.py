from __future__ import annotations

from collections import Counter
from statistics import mean

import pytest

from pytest_lens.generator.arc import arc_position
from pytest_lens.generator.domains import DOMAINS
from pytest_lens.generator.planner import ScopePlan, plan_scope
from pytest_lens.generator.spec import Role


def plan(domain: str = "cascading_failure", seed: int = 5, signal: int = 30, distractors: int = 90) -> ScopePlan:
    return plan_scope(DOMAINS[domain], seed, signal=signal, distractors=distractors, scope_id="s")


def values(p: ScopePlan, role: Role) -> list[float]:
    return [day.readings[role].value for day in p.days]


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_the_storyline_follows_the_five_phase_arc(domain: str) -> None:
    p = plan(domain)
    story = p.storyline
    assert 5 < story.onset < story.herring_start <= story.herring_end < story.first_alarm <= 20
    assert 25 <= story.root_cause < story.corroboration <= 30
    primary = values(p, Role.PRIMARY)
    # Flat through the baseline, clearly higher by the root cause.
    assert max(primary[:5]) < story.watch < primary[story.onset - 1]
    assert mean(primary[25:]) > 2 * mean(primary[:5])
    secondary = values(p, Role.SECONDARY)
    assert max(secondary[:15]) < story.alarm < secondary[story.first_alarm - 1]
    herring = values(p, Role.HERRING)
    bump = range(story.herring_start - 1, story.herring_end)
    assert all(herring[i] > story.herring_watch for i in bump)
    assert all(v <= story.herring_watch for i, v in enumerate(herring) if i not in bump)
    for role in (Role.VOLUME, Role.SUSPECT):  # no trend: the alternative explanations stay flat
        flat = values(p, role)
        assert abs(mean(flat[20:]) - mean(flat[:10])) < 0.2 * mean(flat[:10])


def test_events_sit_on_their_days_and_nowhere_else() -> None:
    p = plan()
    domain = DOMAINS["cascading_failure"]
    root = domain.root_cause.text.format(**p.variables)
    holding = [day.index for day in p.days if root in p.episodes[day.position - 1].notes]
    assert holding == [p.storyline.root_cause]
    alarm_days = [day.index for day in p.days if any(f.startswith("ALARM") for f in p.episodes[day.position - 1].flags)]
    assert alarm_days[0] == p.storyline.first_alarm


def test_one_signal_report_per_day_and_distractors_spread_evenly() -> None:
    p = plan(distractors=95)
    kinds = [label.kind for label in p.labels]
    assert kinds.count("signal") == 30 and kinds.count("distractor") == 95
    per_day = Counter(e.timestamp.date() for e in p.episodes)
    assert len(per_day) == 30 and set(per_day.values()) <= {4, 5}
    stamps = [e.timestamp for e in p.episodes]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    themes = Counter(label.theme for label in p.labels if label.kind == "distractor")
    assert max(themes.values()) - min(themes.values()) <= 1


def test_long_streams_stretch_the_arc() -> None:
    p = plan(signal=300, distractors=2700)
    assert p.storyline.onset > arc_position(5, 300)
    assert arc_position(26, 300) <= p.storyline.root_cause <= arc_position(26, 300) + 1
    assert len(p.episodes) == 3000


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 30"):
        plan(signal=12)
    with pytest.raises(ValueError, match="0 or more"):
        plan(distractors=-1)
