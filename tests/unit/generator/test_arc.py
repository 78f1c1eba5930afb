from __future__ import annotations

import pytest

from pytest_lens.generator.arc import Phase, arc_position, phase_of, phases_of


def test_the_reference_arc_has_the_papers_windows() -> None:
    assert [k for k in range(1, 31) if Phase.BASELINE in phases_of(k, 30)] == [1, 2, 3, 4, 5]
    assert [k for k in range(1, 31) if Phase.EARLY_SIGNAL in phases_of(k, 30)] == list(range(6, 16))
    assert [k for k in range(1, 31) if Phase.RED_HERRING in phases_of(k, 30)] == list(range(10, 19))
    assert [k for k in range(1, 31) if Phase.ESCALATION in phases_of(k, 30)] == list(range(16, 26))
    assert [k for k in range(1, 31) if Phase.ROOT_CAUSE in phases_of(k, 30)] == list(range(25, 31))


@pytest.mark.parametrize(
    ("index", "phase"), [(1, "baseline"), (7, "early_signal"), (12, "red_herring"), (17, "escalation"), (25, "root_cause")]
)
def test_overlaps_resolve_to_the_later_phase(index: int, phase: str) -> None:
    assert phase_of(index, 30) == phase


def test_longer_arcs_keep_the_proportions() -> None:
    assert arc_position(5, 300) == 50
    assert arc_position(26, 866) == 751
    assert phase_of(49, 300) is Phase.BASELINE and phase_of(51, 300) is Phase.EARLY_SIGNAL
    assert arc_position(0, 30) == 1 and arc_position(40, 30) == 30


def test_an_arc_shorter_than_thirty_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 30"):
        arc_position(5, 29)
