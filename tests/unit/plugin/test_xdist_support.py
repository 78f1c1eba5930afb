from __future__ import annotations

import pytest

pytest.importorskip("xdist", reason="pytest-xdist is an optional dependency")

import sys

from pytest_lens.plugin import xdist as xdist_support
from pytest_lens.plugin.xdist import case_id_of, dist_mode_given, groups_stay_together, split_groups, threads_per_worker


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("lens::test_lens[bm25-s1-cp002-q1]", "bm25-s1-cp002-q1"),
        ("tests/test_mem.py::TestX::test_a[bm25-s[1]-cp002-q1]", "bm25-s[1]-cp002-q1"),
        ("tests/test_mem.py::test_plain", None),
    ],
)
def test_case_id_of(nodeid: str, expected: str | None) -> None:
    assert case_id_of(nodeid) == expected


@pytest.mark.parametrize(("cpus", "workers", "threads"), [(2, 2, 1), (8, 2, 4), (2, 4, 1), (None, 1, 1), (4, 0, 4)])
def test_threads_per_worker(cpus: int | None, workers: int, threads: int) -> None:
    assert threads_per_worker(cpus, workers) == threads


@pytest.mark.parametrize(
    ("args", "given"),
    [(["-n", "2"], False), (["--dist", "load"], True), (["--dist=loadscope"], True), (["-d"], True), (["--distload"], True)],
)
def test_dist_mode_given(args: list[str], given: bool) -> None:
    assert dist_mode_given(args) is given


@pytest.mark.parametrize(
    ("dist", "chosen", "together"),
    [
        ("load", False, True),  # our group scheduler
        ("load", True, False),  # plain --dist load spreads a group's tests
        ("loadgroup", True, True),
        ("loadscope", True, True),
        ("loadfile", True, True),
        ("each", True, True),
        ("worksteal", True, False),
        ("no", False, False),
    ],
)
def test_groups_stay_together(dist: str, chosen: bool, together: bool) -> None:
    # Concurrent answering on a worker relies on it: a group split over workers would be answered twice.
    assert groups_stay_together(dist, chosen) is together


def test_split_groups_fail_the_self_check_unless_a_worker_crashed() -> None:
    groups = {"bm25:s1:16k": {"gw0"}, "bm25:s2:16k": {"gw0", "gw1"}}
    (problem,) = split_groups(groups, crashed=set())
    assert problem.startswith("xdist grouping lost: 1 stream group(s) ran on several workers (bm25:s2:16k on gw0, gw1)")
    assert "pytest-xdist issue #1386" in problem
    assert split_groups(groups, crashed={"gw1"}) == []
    assert split_groups({"g": {"gw0"}}, crashed=set()) == []


def test_the_controller_warms_up_the_summary_imports_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(xdist_support.SUMMARY_MODULES) >= {"numpy", "pytest_lens.analysis.run"}
    assert "scipy.stats" in xdist_support.TEST_MODULES and "scipy.stats" not in xdist_support.SUMMARY_MODULES
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    monkeypatch.delitem(sys.modules, "quopri", raising=False)
    # A module that fails to import does not stop the others, nor raise in the thread; it fails where it is used.
    monkeypatch.setattr(xdist_support, "SUMMARY_MODULES", ("lens_no_such_module", "colorsys"))
    monkeypatch.setattr(xdist_support, "TEST_MODULES", ("quopri",))
    thread = xdist_support.warm_up_statistics(tests=False)
    thread.join(timeout=30)
    assert not thread.is_alive() and thread.daemon
    assert "colorsys" in sys.modules
    assert "lens_no_such_module" not in sys.modules
    assert "quopri" not in sys.modules  # the tests' modules only when the run has tests
    xdist_support.warm_up_statistics(tests=True).join(timeout=30)
    assert "quopri" in sys.modules
