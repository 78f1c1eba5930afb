"""Which adapters ``--lens-controls`` adds beside the user's, and how they are labelled.

- ``null`` (stores nothing) and ``random`` (random stored episodes, seeded by ``--lens-seed``):
  the floors every memory is measured against;
- ``oracle`` (the question's required evidence ranked first, then the stream in order): the ceiling,
  what the run's agent and answer key make of a perfect memory (:mod:`pytest_lens.analysis.ceiling`).
  It is the one control that reads ground truth, and only through the harness: the answering
  engine hands each question's view its required refs (:func:`is_oracle`), the agent sees none;
- for every adapter of the user's, one mutant per degradation of :data:`~pytest_lens.controls.mutants.MUTANTS`,
  labelled ``<label>/<mutant>`` (e.g. ``bm25/top2``): the same class and options, its search
  degraded the way a bad pull request would;
- for every adapter of the user's whose class declares ``lens_model_built``, ``<label>/empty-extraction``:
  the same class and options, its memory built by the empty extractor (:mod:`pytest_lens.controls.empty`).

Each is an adapter of its own label, so it has its own stream group (under xdist, its own
worker schedule) and its own summary row, marked as a control: controls never take part in
gates, baselines or the pairs of user adapters. The sensitivity table compares each with
the adapter it stands beside.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from pytest_lens.records.settings import AdapterSpec, ControlRole, Mutation

__all__ = [
    "CONTROL_MEMORIES",
    "EMPTY_EXTRACTION",
    "ControlsError",
    "control_labels",
    "empty_extraction_controls",
    "is_oracle",
    "mark_oracles",
    "mutant_label",
    "mutant_names",
    "plan_controls",
]

#: The control memories: label -> adapter class (``random`` gets ``seed=--lens-seed`` unless given one). Named by
#: module path, not by registered name, so that no other package's entry point can stand in for them.
CONTROL_MEMORIES: dict[str, str] = {
    "null": "lens_fixtures.adapters.null:NullAdapter",
    "random": "lens_fixtures.adapters.random_memory:RandomAdapter",
    "oracle": "lens_fixtures.adapters.oracle:OracleAdapter",
}


#: The label suffix (and control kind) of an adapter's empty-extraction control.
EMPTY_EXTRACTION: Final = "empty-extraction"


class ControlsError(ValueError):
    """The controls cannot be added (a label is taken); the message says what to rename."""


def mutant_names(selected: Sequence[str] | None) -> list[str]:
    """The mutants to add, in catalog order: all of them for ``None``, none for ``()``; :class:`ValueError` names unknown ones."""
    from pytest_lens.controls.mutants import MUTANTS

    if selected is None:
        return list(MUTANTS)
    unknown = [name for name in selected if name not in MUTANTS]
    if unknown:
        raise ValueError(f"unknown mutant(s) {', '.join(unknown)}; known: {', '.join(MUTANTS)} (or none)")
    return [name for name in MUTANTS if name in selected]


def mutant_label(adapter: str, mutant: str) -> str:
    """``bm25/top2``."""
    return f"{adapter}/{mutant}"


def plan_controls(
    adapters: Sequence[AdapterSpec],
    *,
    seed: int,
    mutants: Sequence[str] | None = None,
    first_checkpoints: Mapping[str, int] | None = None,
) -> tuple[AdapterSpec, ...]:
    """The user's ``adapters``, then ``null``, ``random`` and ``oracle``, then each one's mutants and empty-extraction control.

    A user adapter labelled ``null``, ``random`` or ``oracle`` with that same target (registered name or class) *is*
    the control (it is marked so, not added twice); with another target it is an error.
    ``first_checkpoints`` (scope id -> first checkpoint) is where ``stale`` mutants freeze.
    """
    names = mutant_names(mutants)
    labels = {spec.label: spec for spec in adapters}
    user: list[AdapterSpec] = []
    controls: list[AdapterSpec] = []
    for spec in adapters:
        if spec.label in CONTROL_MEMORIES and spec.target in (spec.label, CONTROL_MEMORIES[spec.label]):
            continue  # the user's own null/random: the control below replaces it
        if spec.label in CONTROL_MEMORIES:
            raise ControlsError(
                f"--lens-controls adds a control labelled {spec.label!r}, but adapter {spec.target!r} already uses that label; "
                f"name yours apart with LABEL=TARGET"
            )
        user.append(spec)
    for role in (ControlRole("null"), ControlRole("random"), ControlRole("oracle")):
        name: str = role.kind
        options = dict(labels[name].options) if name in labels else {}
        if name == "random":
            options.setdefault("seed", seed)
        controls.append(AdapterSpec(name, CONTROL_MEMORIES[name], options, control=role))
    freeze_at = tuple(sorted((first_checkpoints or {}).items()))
    for spec in user:
        for mutant in names:
            label = mutant_label(spec.label, mutant)
            if label in labels:
                raise ControlsError(f"--lens-controls adds a mutant labelled {label!r}, which another adapter already uses")
            controls.append(
                AdapterSpec(
                    label,
                    spec.target,
                    dict(spec.options),
                    control=ControlRole(kind="mutant", of=spec.label, mutant=mutant),
                    mutation=Mutation(mutant, seed, freeze_at),
                )
            )
    controls.extend(empty_extraction_controls(user, labels))
    return (*user, *controls)


def empty_extraction_controls(user: Sequence[AdapterSpec], labels: Mapping[str, AdapterSpec]) -> list[AdapterSpec]:
    """``<label>/empty-extraction`` for each of ``user`` whose class declares ``lens_model_built``.

    A class that cannot be loaded gets none: the user's adapter itself then fails, saying why.
    """
    from pytest_lens.contract.adapter import declares_model_built
    from pytest_lens.contract.registry import load_adapter_class

    controls = []
    for spec in user:
        try:
            model_built = declares_model_built(load_adapter_class(spec.target))
        except Exception:
            model_built = False
        if not model_built:
            continue
        label = mutant_label(spec.label, EMPTY_EXTRACTION)
        if label in labels:
            raise ControlsError(f"--lens-controls adds a control labelled {label!r}, which another adapter already uses")
        controls.append(AdapterSpec(label, spec.target, dict(spec.options), control=ControlRole(kind=EMPTY_EXTRACTION, of=spec.label)))
    return controls


def control_labels(specs: Iterable[AdapterSpec]) -> dict[str, ControlRole]:
    """Label -> role of the controls among ``specs``."""
    return {spec.label: spec.control for spec in specs if spec.control is not None}


def is_oracle(instance: object) -> bool:
    """Whether ``instance`` is the oracle control itself (its class, not a subclass nor a look-alike).

    Only then does the answering engine hand it a question's required evidence: no user adapter can ask for it.
    """
    cls = type(instance)
    return f"{cls.__module__}:{cls.__qualname__}" == CONTROL_MEMORIES["oracle"]


def mark_oracles(adapters: Sequence[AdapterSpec]) -> tuple[AdapterSpec, ...]:
    """``adapters`` with the oracle (``--lens-adapter=oracle`` without ``--lens-controls``) marked as the control it is.

    A ceiling never gates, pairs or enters a baseline comparison, whoever added it.
    """
    target = CONTROL_MEMORIES["oracle"]
    return tuple(
        replace(spec, control=ControlRole("oracle")) if spec.control is None and spec.target in ("oracle", target) else spec
        for spec in adapters
    )
