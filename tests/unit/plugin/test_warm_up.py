"""Imports a run will need start in the background, and only those it will need."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.llm.settings import LLMSettings
from pytest_lens.plugin import warm_up
from pytest_lens.records.settings import AdapterSpec, LensSettings
from pytest_lens.runs.session import LensSession
from pytest_lens.runs.setup import RunSetup
from tests.support import COLD_CHAIN_DEMO


def test_modules_are_imported_on_a_daemon_thread_and_errors_stay_quiet() -> None:
    sys.modules.pop("colorsys", None)
    thread = warm_up.warm_up(["lens_no_such_module", "colorsys"])
    assert thread.daemon
    thread.join(10)
    assert "colorsys" in sys.modules  # the missing module did not stop the next one


def test_a_missing_module_of_ours_is_a_stale_list_and_raises_once_the_others_are_imported() -> None:
    sys.modules.pop("colorsys", None)
    with pytest.raises(ModuleNotFoundError, match=r"warm-up list names 'pytest_lens\.analysis\.moved_away'") as raised:
        warm_up.import_quietly(["pytest_lens.analysis.moved_away", "lens_no_such_module", "colorsys"])
    assert raised.value.name == "pytest_lens.analysis.moved_away"
    assert "colorsys" in sys.modules
    warm_up.import_quietly(["lens_no_such_module", "lens_fixtures"])  # absent third-party: quiet, as before


def test_on_a_warm_up_thread_a_stale_list_is_an_unhandled_thread_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    warm_up.warm_up(["pytest_lens.no_such_module"]).join(10)
    assert len(seen) == 1 and isinstance(seen[0], ModuleNotFoundError)


def test_a_warm_up_waits_for_the_one_it_comes_after() -> None:
    order: list[str] = []
    first = warm_up.warm_up([], name="first", then=lambda: (time.sleep(0.2), order.append("first")))
    second = warm_up.warm_up([], name="second", then=lambda: order.append("second"), after=first)
    second.join(10)
    assert order == ["first", "second"]


@pytest.mark.parametrize(
    ("llm", "summary", "settings", "connects", "expected"),
    [
        (True, False, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m"), True, []),
        (True, True, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m"), True, [warm_up.SUMMARY_MODULES]),
        (True, False, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m", cache_mode="replay"), False, []),  # no request
        (True, False, LLMSettings(), False, []),  # no LLM at all
        (False, True, LLMSettings(), False, [warm_up.SUMMARY_MODULES]),
    ],
)
def test_the_session_warms_up_what_it_will_use(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    llm: bool,
    summary: bool,
    settings: LLMSettings,
    connects: bool,
    expected: list[tuple[str, ...]],
) -> None:
    session = LensSession(
        RunSetup(LensSettings(adapters=(AdapterSpec("bm25", "bm25"),), datasets=(COLD_CHAIN_DEMO,), llm=settings, rootdir=tmp_path), [], [])
    )
    warming = warm_up.RunWarmUp(session)
    started: list[tuple[str, ...]] = []
    real_warm_up = warm_up.warm_up

    def recording(modules: Sequence[str], name: str = "lens-warm-up", then: Any = None, *, after: Any = None) -> threading.Thread:
        if modules:
            started.append(tuple(modules))
        return real_warm_up(modules, name, then, after=after)

    monkeypatch.setattr(warm_up, "warm_up", recording)
    monkeypatch.setattr(warm_up, "FIRST_REQUEST_WAIT_S", 0.01)
    warming.start(llm=llm, summary=summary)
    assert started == expected
    if connects:
        assert warming.llm_thread is not None
        warming.llm_thread.join(30)
        assert session.setup.llm.endpoint.connect()[0] is session.setup.llm.endpoint.connect()[0]  # built once, in the background
        assert "openai" in sys.modules
        assert "jsonschema" in sys.modules and "pytrec_eval" in sys.modules  # what answering the first questions imports
    else:
        assert warming.llm_thread is None


def test_the_llm_warm_up_builds_the_client_and_waits_for_the_first_request_before_the_answering_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m")
    session = LensSession(
        RunSetup(LensSettings(adapters=(AdapterSpec("bm25", "bm25"),), datasets=(COLD_CHAIN_DEMO,), llm=settings, rootdir=tmp_path), [], [])
    )
    warming = warm_up.RunWarmUp(session)
    imported: list[tuple[str, ...]] = []
    monkeypatch.setattr(warm_up, "import_quietly", lambda modules: modules and imported.append(tuple(modules)))
    warming.start(llm=True, summary=False)
    thread = warming.llm_thread
    assert thread is not None
    deadline = time.monotonic() + 30
    while session.setup.llm.endpoint._client is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert session.setup.llm.endpoint._client is not None  # the client is built before any request
    time.sleep(0.2)
    assert thread.is_alive() and imported == []  # no request yet: the processor stays the first request's
    session.setup.llm.endpoint.requested.set()
    thread.join(10)
    assert imported == [warm_up.ANSWER_MODULES]
