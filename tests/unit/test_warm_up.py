"""Imports a run will need start in the background, and only those it will need."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_lens import warm_up
from pytest_lens.llm.settings import LLMSettings
from pytest_lens.session import LensSession
from pytest_lens.settings import AdapterSpec, LensSettings
from tests.support import COLD_CHAIN_DEMO


def test_modules_are_imported_on_a_daemon_thread_and_errors_stay_quiet() -> None:
    sys.modules.pop("colorsys", None)
    thread = warm_up.warm_up(["lens_no_such_module", "colorsys"])
    assert thread.daemon
    thread.join(10)
    assert "colorsys" in sys.modules  # the missing module did not stop the next one


@pytest.mark.parametrize(
    ("llm", "summary", "settings", "expected"),
    [
        (True, False, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m"), warm_up.LLM_MODULES),
        (True, True, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m"), warm_up.LLM_MODULES + warm_up.SUMMARY_MODULES),
        (True, False, LLMSettings(base_url="http://127.0.0.1:9/v1", agent_model="m", cache_mode="replay"), None),  # no request
        (True, False, LLMSettings(), None),  # no LLM at all
        (False, True, LLMSettings(), warm_up.SUMMARY_MODULES),
    ],
)
def test_the_session_warms_up_what_it_will_use(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    llm: bool,
    summary: bool,
    settings: LLMSettings,
    expected: tuple[str, ...] | None,
) -> None:
    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(warm_up, "warm_up", lambda modules, then=None: started.append(tuple(modules)))
    session = LensSession(
        LensSettings(adapters=(AdapterSpec("bm25", "bm25"),), datasets=(COLD_CHAIN_DEMO,), llm=settings, rootdir=tmp_path), [], []
    )
    session.warm_up(llm=llm, summary=summary)
    assert started == ([expected] if expected else [])
