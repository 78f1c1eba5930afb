"""What a LENS run keeps to its end is frozen out of garbage collection, and thawed when pytest is done."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator

import pytest

from pytest_lens.plugin import gc_tuning


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc_tuning.thaw()
    gc.unfreeze()
    yield
    gc_tuning.thaw()
    gc.unfreeze()


def _collectable(thing: object) -> bool:
    """Whether the collector walks ``thing`` (frozen objects are in no generation it collects)."""
    return any(candidate is thing for candidate in gc.get_objects())


def test_freeze_exempts_what_is_alive_and_thaw_puts_it_back() -> None:
    # By membership, not by gc.get_freeze_count(): frozen objects still die by reference counting (another
    # thread's frames, say), so the count can drop between two reads.
    before: list[list[int]] = [[]]
    assert gc.get_freeze_count() == 0 and _collectable(before)
    gc_tuning.freeze()
    assert gc.get_freeze_count() > 0 and not _collectable(before)
    after: list[list[int]] = [[]]  # allocated after the freeze: collected as usual until refreeze
    assert _collectable(after)
    gc_tuning.refreeze()
    assert not _collectable(after)
    gc_tuning.thaw()
    assert gc.get_freeze_count() == 0 and _collectable(before) and _collectable(after)


def test_refreeze_and_thaw_do_nothing_unless_frozen() -> None:
    gc_tuning.refreeze()  # a background import ending after the run thawed must not freeze the process again
    assert gc.get_freeze_count() == 0
    gc.freeze()  # someone else's freeze is not ours to undo
    gc_tuning.thaw()
    assert gc.get_freeze_count() > 0


def test_the_exit_handler_is_registered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[object] = []
    monkeypatch.setattr(gc_tuning, "_at_exit", False)
    monkeypatch.setattr(atexit, "register", registered.append)
    gc_tuning.freeze()
    gc_tuning.thaw()
    gc_tuning.freeze()
    assert registered == [gc.freeze]
