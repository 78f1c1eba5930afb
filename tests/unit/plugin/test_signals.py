"""SIGTERM interrupts a LENS run like Ctrl-C, once (see pytest_lens.plugin.signals)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from pytest_lens.execution.calls import SIGNALS_WATCHED
from pytest_lens.plugin.signals import RunSignals


@pytest.fixture
def run_signals(ctrl_c: None) -> Iterator[RunSignals]:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")  # pragma: no cover
    installed = RunSignals()
    installed.install()
    yield installed
    installed.restore()


def test_sigterm_raises_keyboard_interrupt_and_a_later_one_does_not(run_signals: RunSignals) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs as soon as kill() returns
    assert run_signals.interrupted
    os.kill(os.getpid(), signal.SIGTERM)  # the run writes what ran: this one is noted, not raised


def test_after_ctrl_c_a_sigterm_does_not_interrupt_the_writing(run_signals: RunSignals) -> None:
    # A CI cancel: SIGINT, then SIGTERM 7.5 s later while the interrupted run still writes its artifact.
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)


def test_the_handlers_are_put_back_and_others_left_alone(ctrl_c: None) -> None:
    def mine(number: int, frame: object) -> None:
        raise AssertionError("not reached")

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        installed = RunSignals()
        installed.install()
        assert signal.getsignal(signal.SIGTERM) is mine  # somebody else's handler stays
        installed.restore()
    finally:
        signal.signal(signal.SIGTERM, previous)
    installed = RunSignals()
    installed.install()
    installed.restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_with_sigint_ignored_it_stays_ignored_and_a_keyboard_interrupt_is_an_adapters(ctrl_c: None) -> None:
    # nohup, or a background job of a script: no Ctrl-C can come, so a KeyboardInterrupt was raised by an adapter.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    installed = RunSignals()
    installed.install()
    try:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert SIGNALS_WATCHED.is_set()
    finally:
        installed.restore()
    assert not SIGNALS_WATCHED.is_set()
