"""The frozen run settings: read once from pytest's options, then handed to the core."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_lens.llm.settings import LLMSettings

__all__ = ["MAX_OPTION_DEPTH", "AdapterSpec", "ControlRole", "LensSettings", "Mutation", "parse_adapter_spec", "parse_option_value"]


@dataclass(frozen=True)
class ControlRole:
    """What an adapter added by ``--lens-controls`` stands for (it never gates the run).

    ``null`` and ``random`` are control memories (the floors), ``oracle`` the ceiling (the question's
    required evidence ranked first); a ``mutant`` is the user's adapter ``of`` with its search degraded
    the way ``mutant`` names (:mod:`pytest_lens.controls.mutants`); ``empty-extraction`` is the user's
    adapter ``of`` (one that declares ``lens_model_built``) building its memory with an empty extractor
    (:mod:`pytest_lens.controls.empty`).
    """

    kind: Literal["null", "random", "oracle", "mutant", "empty-extraction"]
    of: str | None = None
    mutant: str | None = None


@dataclass(frozen=True)
class Mutation:
    """How to build a mutant.

    The degradation, the seed of its random choices, and per scope the number of episodes
    after which the ``stale`` mutant's index freezes (the scope's first checkpoint).
    """

    name: str
    seed: int = 42
    freeze_at: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class AdapterSpec:
    """One ``--lens-adapter``: a label for reports and ids, what to load, and constructor options.

    Adapters added by ``--lens-controls`` carry their ``control`` role; a mutant also its
    ``mutation``, applied around an instance of ``target`` built with ``options``.
    """

    label: str
    target: str
    options: Mapping[str, Any] = field(default_factory=dict)
    control: ControlRole | None = None
    mutation: Mutation | None = None


@dataclass(frozen=True)
class LensSettings:
    """Everything the core needs to know about a run; no pytest types inside."""

    adapters: tuple[AdapterSpec, ...]
    datasets: tuple[Path, ...] = ()
    budgets: tuple[str, ...] = ("16k",)
    agent: str = "offline"
    json_path: Path | None = None
    #: ``--lens-html``: where the HTML report goes (relative paths are under :attr:`rootdir`).
    html_path: Path | None = None
    strict: bool = False
    weights: Mapping[str, float] | None = None
    #: ``--lens-scoring``: ``paper`` or ``v2`` (which metrics are scored and their base weights).
    scoring: str = "paper"
    gate_budget: bool = False
    call_timeout: float | None = 120.0
    opaque_refs: str = "auto"
    seed: int = 42
    builtin_tests: bool = True
    rootdir: Path = field(default_factory=Path.cwd)
    #: The directory pytest was started from; with :attr:`rootdir`, where ``module:Class`` adapters are looked for.
    invocation_dir: Path = field(default_factory=Path.cwd)
    #: ``--lens-suite``: which bundled suites run (empty: LENS), or, with datasets, which of their suites.
    suites: tuple[str, ...] = ()
    #: ``--lens-save``: save this run under :attr:`storage` with this name.
    save_name: str | None = None
    #: ``--lens-baseline``: a saved-run name or a run artifact path to compare with.
    baseline: str | None = None
    #: ``--lens-storage``: where saved runs live (relative paths are under :attr:`rootdir`).
    storage: Path = Path(".lens")
    #: ``--lens-fail-under``: minimum adapter headline (the retrieval score, or the composite with a judge).
    fail_under: float | None = None
    #: ``--lens-compare-fail``: fail on a significant regression (or a drop over :attr:`max_drop`) vs the baseline.
    compare_fail: bool = False
    #: ``--lens-compare-partial``: the comparison may leave out questions of either run without failing the gate.
    compare_partial: bool = False
    #: ``--lens-accept-unlike``: comparability-card fields in which the baseline may differ (it is refused otherwise).
    accept_unlike: tuple[str, ...] = ()
    #: ``--lens-alpha``: significance level of every test, after Holm correction.
    alpha: float = 0.05
    #: ``--lens-max-drop``: largest tolerated fall of an adapter headline vs the baseline.
    max_drop: float | None = None
    #: ``--lens-margin``: non-inferiority margin; the gate fails when the upper bound of a headline's drop exceeds it.
    margin: float | None = None
    #: ``--lens-bootstrap``: ``auto`` (clustered with enough scopes), ``clustered``, ``two-stage`` or ``plain``.
    bootstrap: str = "auto"
    #: ``--lens-max-fault-rate``: most of an adapter's questions that may have faults before its scores stop counting.
    max_fault_rate: float = 0.05
    #: LLM endpoint, models, judge and request cache (``--lens-llm-*``, ``--lens-judge*``).
    llm: LLMSettings = field(default_factory=LLMSettings)
    #: ``--lens-headline``: ``auto`` (the composite with a judge, else the retrieval score), ``retrieval`` or ``composite``.
    headline: str = "auto"
    #: ``--lens-controls``: add the null and random controls and mutants of every adapter.
    controls: bool = False
    #: ``--lens-mutants``: which mutants ``--lens-controls`` adds (empty: all of them).
    mutants: tuple[str, ...] | None = None
    #: ``--lens-concurrency``: questions answered at once per process (``None``: the agent's default).
    concurrency: int | None = None
    #: ``--lens-repeat``: answers per question (each its own test, with its own seed).
    repeat: int = 1
    #: ``--lens-shard=I/N``: run shard I (from 1) of N, a cost-balanced share of the run's stream groups.
    shard: tuple[int, int] | None = None
    #: ``--lens-shard-durations``: an earlier run's artifact whose measured durations balance the shards.
    shard_durations: Path | None = None
    #: ``--lens-resume``: the directory keeping each finished stream group's results, reused by a rerun.
    resume_dir: Path | None = None
    #: ``--lens-rerun``: with :attr:`resume_dir`, ask again the kept questions that were ``not-measured`` or had ``faults``.
    rerun: str | None = None
    #: pytest's arguments that narrow which tests run (``-k``, ``-m``, ``--deselect``, ``--lf``, test paths), as given:
    #: a shard records them, so that ``lens merge`` joins only shards that selected alike.
    selection: tuple[str, ...] = ()

    @property
    def import_paths(self) -> tuple[Path, ...]:
        """Directories searched for ``module:Class`` adapters before the installed packages."""
        return (self.invocation_dir, self.rootdir)


def parse_adapter_spec(text: str) -> tuple[str | None, str]:
    """``[LABEL=]TARGET`` where TARGET is ``module:Class`` or a registered short name."""
    text = text.strip()
    label, sep, target = text.partition("=")
    if sep and ":" not in label and label.strip():
        return label.strip(), target.strip()
    return None, text


#: How deep an adapter option's JSON value may nest (``[[[...]]]``); deeper is an error, never a ``RecursionError``.
MAX_OPTION_DEPTH = 100


def parse_option_value(raw: str) -> Any:
    """Adapter option values: JSON when they parse as JSON (numbers, booleans, lists), else the string.

    ``ValueError`` when the JSON nests deeper than :data:`MAX_OPTION_DEPTH` levels.
    """
    import json

    depth = _nesting(raw)
    if depth > MAX_OPTION_DEPTH:
        raise ValueError(f"the JSON value nests {depth} levels deep; at most {MAX_OPTION_DEPTH} are allowed")
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _nesting(raw: str) -> int:
    """How deep ``[`` and ``{`` nest in ``raw``, outside JSON strings (an upper bound for text that is not JSON)."""
    deepest = depth = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest
