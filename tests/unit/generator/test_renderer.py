from __future__ import annotations

import random

from pytest_lens.generator.domains import DOMAINS
from pytest_lens.generator.planner import plan_scope
from pytest_lens.generator.renderer import REPORT_TITLE, render_episode

SECTIONS = ["### Readings", "### Changes", "### Field Notes", "### Flags"]


def test_signal_and_distractor_reports_share_one_format() -> None:
    p = plan_scope(DOMAINS["environmental_drift"], 3, signal=30, distractors=90, scope_id="s")
    for episode, label in zip(p.episodes, p.labels, strict=True):
        text = render_episode(episode, random.Random(episode.position))
        lines = text.splitlines()
        assert lines[0] == f"## {episode.timestamp.date().isoformat()} {REPORT_TITLE}", label
        assert [line for line in lines if line.startswith("###")] == SECTIONS
        for reading in episode.readings:
            assert reading.text in text
        for sentence in (*episode.changes, *episode.notes, *episode.flags):
            assert f"- {sentence}" in lines


def test_rendering_depends_only_on_the_plan_and_its_own_random_stream() -> None:
    p = plan_scope(DOMAINS["insider_threat"], 8, signal=30, distractors=90, scope_id="s")
    episode = p.episodes[40]
    assert render_episode(episode, random.Random(1)) == render_episode(episode, random.Random(1))
    texts = {render_episode(episode, random.Random(seed)) for seed in range(20)}
    assert len(texts) > 1  # filler and order vary; the facts do not
    assert all(all(r.text in text for r in episode.readings) for text in texts)


def test_empty_sections_say_so() -> None:
    p = plan_scope(DOMAINS["cascading_failure"], 1, signal=30, distractors=0, scope_id="s")
    quiet = next(e for e in p.episodes if not e.changes and not e.flags)
    texts = [render_episode(quiet, random.Random(seed)) for seed in range(30)]
    assert any("### Changes\n- none recorded" in t or "### Changes\n- no changes recorded" in t for t in texts)
    assert all("### Flags\n- none" in t or "### Flags\n- nothing over a watch line" in t for t in texts)
