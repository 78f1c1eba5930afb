"""What a LENS run keeps to its end is frozen out of garbage collection, and thawed when pytest is done."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator

import pytest

from pytest_lens import gc_tuning


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc_tuning.thaw()
    gc.unfreeze()
    yield
    gc_tuning.thaw()
    gc.unfreeze()


def test_freeze_exempts_what_is_alive_and_thaw_puts_it_back() -> None:
    assert gc.get_freeze_count() == 0
    gc_tuning.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    kept = [[] for _ in range(1000)]  # allocated after the freeze: collected as usual until refreeze
    assert gc.get_freeze_count() == frozen
    gc_tuning.refreeze()
    assert gc.get_freeze_count() >= frozen + len(kept)
    gc_tuning.thaw()
    assert gc.get_freeze_count() == 0


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
