"""The private internals of other projects that pytest-lens relies on still have the shape it relies on.

One test per entry of the table in ``docs/ARCHITECTURE.md ("Other projects' internals")``: when pytest, pytest-xdist, CPython or the openai
client changes one of them, the test here fails with the name of the internal, instead of the feature that uses
it degrading quietly (each use is guarded: see the table for what happens then).
"""

from __future__ import annotations

import ctypes
import gc
import inspect
import threading
import time
from typing import Any

import pytest

from pytest_lens.plugin.hooks import OWN_PACKAGES, skip_assertion_rewriting


def test_pytests_rewrite_hook_keeps_its_marks_in_a_set_and_a_cache_dict(pytestconfig: pytest.Config) -> None:
    # plugin/hooks.py: skip_assertion_rewriting edits these two; it does nothing when they look otherwise.
    hook = pytestconfig.pluginmanager.rewrite_hook
    assert isinstance(getattr(hook, "_must_rewrite", None), set), "AssertionRewritingHook._must_rewrite is no longer a set"
    assert isinstance(getattr(hook, "_marked_for_rewrite_cache", None), dict), "AssertionRewritingHook._marked_for_rewrite_cache"
    hook.mark_rewrite("lens_probe_package")
    assert "lens_probe_package" in hook._must_rewrite  # the public marking lands where we unmark
    hook._must_rewrite.discard("lens_probe_package")
    skip_assertion_rewriting(pytestconfig.pluginmanager)
    assert not set(OWN_PACKAGES) & hook._must_rewrite
    assert hook._marked_for_rewrite_cache == {}


def test_xdist_load_scope_scheduling_has_the_hooks_lens_group_scheduling_overrides_and_uses() -> None:
    # plugin/xdist.py: LensGroupScheduling overrides _split_scope and remove_node, and its remove_node uses
    # assigned_work, workqueue and _reschedule the way LoadScopeScheduling.remove_node does.
    from xdist.scheduler import LoadScopeScheduling

    assert list(inspect.signature(LoadScopeScheduling._split_scope).parameters) == ["self", "nodeid"]
    assert list(inspect.signature(LoadScopeScheduling._reschedule).parameters) == ["self", "node"]
    assert list(inspect.signature(LoadScopeScheduling.remove_node).parameters) == ["self", "node"]
    source = inspect.getsource(LoadScopeScheduling.__init__)
    assert "self.workqueue: OrderedDict[str, dict[str, bool]]" in source
    assert "self.assigned_work: dict[WorkerController, dict[str, dict[str, bool]]]" in source
    remove_node = inspect.getsource(LoadScopeScheduling.remove_node)
    assert "self.assigned_work.pop(node)" in remove_node and "self._reschedule(" in remove_node


def test_cpython_raises_an_exception_in_another_thread_through_pythonapi() -> None:
    # execution/calls.py: _Call._raise_inside ends a hung adapter call's Python loop this way.
    class Stop(BaseException):
        pass

    ended: list[BaseException] = []
    started = threading.Event()

    def spin() -> None:
        started.set()
        try:
            while True:
                time.sleep(0.001)
        except Stop as exc:
            ended.append(exc)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    started.wait(5)
    assert thread.ident is not None
    changed = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(Stop))
    thread.join(5)
    assert changed == 1 and len(ended) == 1


def test_gc_freeze_moves_objects_out_of_the_collectors_reach() -> None:
    # plugin/gc_tuning.py (public since Python 3.7; listed because it changes the process's collector).
    before = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]
    gc.freeze()
    try:
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_openais_default_http_client_derives_from_its_http_librarys_client() -> None:
    # llm/bounded.py: http_library reads the HTTP library from DefaultHttpxClient's first base class; llm/deadline.py
    # and llm/bounded.py wrap its transport and body stream, and set the SDK's connection limits on the transport made.
    openai = pytest.importorskip("openai")
    from pytest_lens.llm.bounded import http_library

    library: Any = http_library(openai)
    assert library.__name__ in ("httpx", "httpx2")
    for name in ("Response", "HTTPTransport", "BaseTransport", "SyncByteStream", "ReadTimeout", "DecodingError"):
        assert isinstance(getattr(library, name), type), name
    assert isinstance(openai.DEFAULT_CONNECTION_LIMITS, library.Limits)


def test_pytests_module_collector_filters_names_through_two_overridable_methods() -> None:
    # plugin/hooks.py and plugin/conformance/hooks.py: the built-in modules override these to collect their own test.
    for name in ("funcnamefilter", "classnamefilter"):
        assert list(inspect.signature(getattr(pytest.Module, name)).parameters) == ["self", "name"], name
