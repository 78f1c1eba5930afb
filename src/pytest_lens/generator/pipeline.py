"""Generate LENS-format scopes: plan, render each episode blind, ask the questions, check, serialise."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_lens.datasets.models import Dataset, Episode, Scope
from pytest_lens.generator.arc import MIN_SIGNAL
from pytest_lens.generator.guarantees import guarantee_problems
from pytest_lens.generator.llm import LLMStageReport, LLMWriter
from pytest_lens.generator.planner import EpisodeLabel, plan_scope
from pytest_lens.generator.questions import build_questions, episode_id
from pytest_lens.generator.renderer import render_episode
from pytest_lens.generator.spec import DomainSpec

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "DEFAULT_DISTRACTORS",
    "DEFAULT_SIGNAL",
    "MAX_SCALE",
    "MIN_SCALE",
    "GeneratedScope",
    "GeneratorError",
    "dataset_json",
    "generate_scope",
    "scaled_sizes",
]

DEFAULT_SIGNAL = 30
DEFAULT_DISTRACTORS = 90
#: The scale option's range (total episodes per stream).
MIN_SCALE = 120
MAX_SCALE = 100_000


class GeneratorError(ValueError):
    """The generator was asked for something it cannot make, or broke one of its promises."""


@dataclass(frozen=True)
class GeneratedScope:
    """One generated scope: the LENS dataset, plus ground-truth labels kept out of it."""

    domain: str
    seed: int
    dataset: Dataset
    labels: dict[str, EpisodeLabel]
    """Episode id -> what the episode is (signal phase or distractor theme). Never part of the dataset."""
    llm_report: LLMStageReport | None = None
    """What the optional LLM stage wrote and what it was refused (``None`` without it)."""

    @property
    def scope_id(self) -> str:
        """The id of the one scope."""
        return self.dataset.scopes[0].scope_id

    def to_json(self) -> str:
        """The dataset as LENS JSON (byte-stable: same seed, same bytes)."""
        return dataset_json(self.dataset)

    def labels_json(self) -> str:
        """The sidecar labels as JSON, for analysis (never give this to an agent)."""
        rows = {ref: {k: v for k, v in vars(label).items() if v is not None} for ref, label in self.labels.items()}
        return json.dumps({"domain": self.domain, "seed": self.seed, "episodes": rows}, indent=1, sort_keys=True) + "\n"

    def write(self, path: Path | str, labels_path: Path | str | None = None) -> None:
        """Write the dataset (and, if asked, the sidecar labels) to disk."""
        Path(path).write_text(self.to_json(), encoding="utf-8")
        if labels_path is not None:
            Path(labels_path).write_text(self.labels_json(), encoding="utf-8")


def scaled_sizes(episodes: int) -> tuple[int, int]:
    """(signal, distractors) for a stream of ``episodes``: longer arcs, and proportionally more distractors.

    The signal grows with the square root of the stream (30 at 120 episodes, 87 at 1,000,
    866 at 100,000), so bigger streams are both longer stories and noisier haystacks.
    """
    if not MIN_SCALE <= episodes <= MAX_SCALE:
        raise GeneratorError(f"scale must be between {MIN_SCALE:,} and {MAX_SCALE:,} episodes, got {episodes:,}")
    signal = DEFAULT_SIGNAL
    # Integer square root by bisection: no floating point, so the split is the same everywhere.
    target = DEFAULT_SIGNAL * DEFAULT_SIGNAL * episodes // MIN_SCALE
    while (signal + 1) * (signal + 1) <= target:
        signal += 1
    return signal, episodes - signal


def generate_scope(
    domain: DomainSpec | str,
    seed: int,
    *,
    signal: int = DEFAULT_SIGNAL,
    distractors: int = DEFAULT_DISTRACTORS,
    scope_id: str | None = None,
    verify: bool = True,
    llm: ChatClient | None = None,
) -> GeneratedScope:
    """Generate one scope of ``domain`` from ``seed`` (deterministic: same arguments, same bytes).

    ``verify`` runs every guarantee check on the result and raises :class:`GeneratorError`
    listing what broke; leave it on unless you are timing the generator itself.

    ``llm`` adds the optional LLM stage (:mod:`pytest_lens.generator.llm`): a planner that
    writes extra routine notes and a blind renderer that writes each report, every piece
    checked and replaced by the deterministic text where it fails. Reproducible through the
    client's request cache.
    """
    from pytest_lens.generator.domains import get_domain

    try:
        spec = get_domain(domain) if isinstance(domain, str) else domain
    except ValueError as exc:
        raise GeneratorError(str(exc)) from None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise GeneratorError(f"seed must be a non-negative integer, got {seed!r}")
    if signal < MIN_SIGNAL:
        raise GeneratorError(f"signal must be at least {MIN_SIGNAL} episodes (the five-phase arc needs them), got {signal}")
    if distractors < 0:
        raise GeneratorError(f"distractors must be 0 or more, got {distractors}")
    if not spec.themes:
        raise GeneratorError(f"domain {spec.name!r} has no distractor themes")
    scope = scope_id or f"{spec.name}_s{seed:02d}"
    from pytest_lens.llm.errors import LLMError

    try:
        writer = LLMWriter(llm) if llm is not None else None
        plan = plan_scope(spec, seed, signal=signal, distractors=distractors, scope_id=scope, enrich=writer.enrich if writer else None)
        total = len(plan.episodes)

        def episode_rng(position: int) -> random.Random:
            # Each episode renders from its own stream: independent of every other episode.
            return random.Random(seed * 1_000_003 + position)

        texts = [render_episode(episode, episode_rng(episode.position)) for episode in plan.episodes]
        if writer is not None:
            texts = writer.rewrite(plan, texts, episode_rng)
        episodes = [
            Episode(episode_id=episode_id(scope, episode.position, total), scope_id=scope, timestamp=episode.timestamp, text=text)
            for episode, text in zip(plan.episodes, texts, strict=True)
        ]
        questions = build_questions(plan, random.Random(seed * 7_919 + 17))
    except ValueError as exc:
        raise GeneratorError(f"domain {spec.name!r}, seed {seed}: {exc}") from None
    except LLMError as exc:
        raise GeneratorError(f"domain {spec.name!r}, seed {seed}: LLM stage: {exc}") from None
    dataset = Dataset(scopes=(Scope(scope_id=scope, episodes=tuple(episodes)),), questions=tuple(questions))
    labels = {episode.episode_id: label for episode, label in zip(episodes, plan.labels, strict=True)}
    if verify:
        storyline = writer.storyline if writer is not None else None
        problems = guarantee_problems(dataset, {ref: label.kind == "signal" for ref, label in labels.items()}, storyline=storyline)
        if problems:
            shown = "\n  ".join(problems[:20])
            raise GeneratorError(f"domain {spec.name!r}, seed {seed}: generated data breaks its guarantees:\n  {shown}")
    return GeneratedScope(spec.name, seed, dataset, labels, writer.report if writer is not None else None)


def dataset_json(dataset: Dataset) -> str:
    """LENS JSON in the models' field order with a trailing newline: identical input, identical bytes."""
    from pytest_lens.suites.dump import dump_dataset

    return dump_dataset(dataset)
