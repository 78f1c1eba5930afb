"""The five-phase signal arc (SPEC §3), stretched to any number of signal episodes.

On the reference length of 30 signal episodes: baseline 1-5, early signal 6-15,
red herring 10-18, escalation 16-25, root cause 25-30. Longer arcs keep the
proportions; every position here is 1-based.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MIN_SIGNAL", "REFERENCE_LENGTH", "Phase", "arc_position", "phase_of", "phases_of", "progress"]

#: The paper's arc length; positions below are given on this scale.
REFERENCE_LENGTH = 30
#: Fewer signal episodes cannot hold every storyline event at its own position.
MIN_SIGNAL = 30


class Phase(StrEnum):
    """The five phases of the arc, in order."""

    BASELINE = "baseline"
    EARLY_SIGNAL = "early_signal"
    RED_HERRING = "red_herring"
    ESCALATION = "escalation"
    ROOT_CAUSE = "root_cause"


#: Inclusive windows on the reference scale; they overlap as in the paper.
_WINDOWS: dict[Phase, tuple[float, float]] = {
    Phase.BASELINE: (1, 5),
    Phase.EARLY_SIGNAL: (6, 15),
    Phase.RED_HERRING: (10, 18),
    Phase.ESCALATION: (16, 25),
    Phase.ROOT_CAUSE: (25, 30),
}


def arc_position(reference: float, signal: int) -> int:
    """The signal index (1..signal) that ``reference`` (on the 1..30 scale) maps to."""
    if signal < MIN_SIGNAL:
        raise ValueError(f"a signal arc needs at least {MIN_SIGNAL} episodes, got {signal}")
    index = round(reference * signal / REFERENCE_LENGTH)
    return max(1, min(signal, index))


def progress(index: int, signal: int) -> float:
    """Where signal episode ``index`` sits on the reference scale (1..30, fractional)."""
    return index * REFERENCE_LENGTH / signal


def phases_of(index: int, signal: int) -> tuple[Phase, ...]:
    """Every phase whose window holds signal episode ``index`` (overlaps give two)."""
    at = progress(index, signal)
    found = []
    for phase, (start, end) in _WINDOWS.items():
        # A window covers the reference positions start..end, i.e. the interval (start - 1, end].
        if start - 1 < at <= end:
            found.append(phase)
    return tuple(found)


def phase_of(index: int, signal: int) -> Phase:
    """The dominant phase of signal episode ``index``: the latest phase whose window holds it."""
    return phases_of(index, signal)[-1]
