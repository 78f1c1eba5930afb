"""pytest-xdist integration, registered only when pytest-xdist is installed.

Ingestion is stateful and ordered, so every test of one (adapter, scope, budget)
group should run on one worker, in collection (= stream) order. Instead of
rewriting node ids with ``@group`` suffixes (xdist's ``--dist loadgroup``, which
leaks the suffix into test ids and silently stops grouping with pytest >= 9.2,
pytest-xdist issue #1386), pytest-lens hands xdist a scheduler that groups by the
case each test id names. Results stay correct even if grouping were lost (streams
replay), but the run would be slower, so a self-check fails the session if a group
ran on two workers anyway.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from pytest_lens.plugin.warm_up import SUMMARY_MODULES, TEST_MODULES, warm_up

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.workermanage import WorkerController

    from pytest_lens.records.cases import LensCase
    from pytest_lens.runs.session import LensSession

__all__ = [
    "LensGroupScheduling",
    "LensXdist",
    "case_id_of",
    "dist_mode_given",
    "groups_stay_together",
    "split_groups",
    "threads_per_worker",
    "warm_up_statistics",
    "worker_id",
]

#: ``workerinput`` key telling workers how many torch threads to use.
THREADS_KEY = "lens_torch_threads"
#: ``workerinput`` key telling workers whether each (adapter, scope, budget) group runs whole on one worker.
GROUPS_KEY = "lens_groups_together"
#: ``workerinput`` key telling workers which kept results of ``--lens-resume`` the controller reuses.
SLICE_KEY = "lens_slice"
#: ``workerinput`` key telling workers the directory where they share the model server's slots.
SLOTS_KEY = "lens_server_slots"


def case_id_of(nodeid: str) -> str | None:
    """The parametrize id in ``path::test[id]``, ``None`` when the test is not parametrized."""
    name = nodeid.rpartition("::")[2]
    if not name.endswith("]") or "[" not in name:
        return None
    return name[name.index("[") + 1 : -1]


def threads_per_worker(cpus: int | None, workers: int) -> int:
    """Share the cores between workers so torch does not oversubscribe them (never below one)."""
    return max(1, (cpus or 1) // max(1, workers))


def worker_id(node: Any) -> str | None:
    """The id of the xdist worker (``gw0``) behind a report, ``None`` outside xdist."""
    gateway = getattr(node, "gateway", None)
    return getattr(gateway, "id", None)


class LensGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist ships no type information
    """``--dist loadscope`` where the scope of a LENS test is its (adapter, scope, budget) group."""

    def __init__(self, config: pytest.Config, log: Producer | None, group_of: Callable[[str], str]) -> None:
        super().__init__(config, log)
        self._group_of = group_of

    def _split_scope(self, nodeid: str) -> str:
        return self._group_of(nodeid)

    def remove_node(self, node: WorkerController) -> str | None:
        """Forget a finished or crashed worker; after a crash, requeue its groups *without* the test that crashed it.

        ``LoadScopeScheduling`` requeues a crashed worker's whole work unit, the crashing test
        included: a question that always kills its worker (``os._exit``, a segfault in the
        adapter) then kills every replacement in turn until ``--max-worker-restart`` ends the
        run, and every other question of its group and of the groups queued behind it is lost.
        Like ``--dist load``, the test that was running is marked done (xdist reports it as
        failed, once); the rest of its group goes on, on whichever worker takes the unit next
        (the stream is replayed there).
        """
        workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
        crashed = next((nodeid for unit in workload.values() for nodeid, done in unit.items() if not done), None)
        if crashed is None:
            return None
        # Workers run their units in the order sent, so the first test not done is the one that was running.
        workload[self._split_scope(crashed)][crashed] = True
        self.workqueue.update((scope, unit) for scope, unit in workload.items() if not all(unit.values()))
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed


def warm_up_statistics(tests: bool = True) -> threading.Thread:
    """Import :data:`SUMMARY_MODULES` (and :data:`TEST_MODULES` with ``tests``) in a daemon thread.

    See :func:`pytest_lens.plugin.warm_up.warm_up`. Without ``tests`` scipy stays out of the process:
    a run without paired tests never needs it.
    """
    return warm_up(SUMMARY_MODULES + (TEST_MODULES if tests else ()))


def groups_stay_together(dist: str, user_chose_dist: bool) -> bool:
    """Whether, under this distribution mode, all tests of one (adapter, scope, budget) group go to one worker.

    ``load`` chosen by default gets :class:`LensGroupScheduling`; ``loadgroup`` follows our
    ``xdist_group`` marks; ``loadscope`` and ``loadfile`` keep a test module together (the built-in
    LENS tests are one module); ``each`` runs everything everywhere. ``load`` chosen explicitly
    and ``worksteal`` spread tests freely.
    """
    if dist == "load":
        return not user_chose_dist
    return dist in ("loadgroup", "loadscope", "loadfile", "each")


def dist_mode_given(args: Iterable[str]) -> bool:
    """Whether the user chose a distribution mode (``--dist``/``-d``/``--distload``) explicitly."""
    return any(arg in ("-d", "--dist", "--distload") or arg.startswith("--dist=") for arg in args)


class LensXdist:
    """xdist hooks of pytest-lens (this class is registered only when xdist is present)."""

    def __init__(self, session: LensSession, config: pytest.Config) -> None:
        self.session = session
        self.config = config
        args = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.getini("addopts")]
        self.user_chose_dist = dist_mode_given(args)
        self._cases: dict[str, LensCase] = {case.id: case for case in session.cases}
        self.grouped = False
        self.crashed: set[str] = set()
        self.group_workers: dict[str, set[str]] = {}
        #: Where the workers share the model server's slots (made for the first worker, removed when the run ends).
        self.slots_dir: str | None = None

    # -- controller --------------------------------------------------------------------------
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[object]) -> None:
        """Import the summary's statistics (scipy, when it has tests: most of a second) while the workers run the questions.

        The controller idles until the workers report; importing then, not after the last
        report, takes that second off the serial tail of every parallel run.
        """
        warm_up_statistics(tests=self.session.setup.has_significance_tests)

    def pytest_configure_node(self, node: WorkerController) -> None:
        """Tell each worker its share of the cores, and whether stream groups stay whole (concurrent answering relies on it)."""
        node.workerinput[THREADS_KEY] = threads_per_worker(os.cpu_count(), len(node.nodemanager.specs))
        node.workerinput[GROUPS_KEY] = groups_stay_together(str(self.config.getvalue("dist")), self.user_chose_dist)
        if self.session.slice is not None:
            node.workerinput[SLICE_KEY] = self.session.slice.worker_plan()
        if self.session.settings.llm.configured:
            node.workerinput[SLOTS_KEY] = self.shared_slots_dir()

    def shared_slots_dir(self) -> str:
        """The run's directory of shared server slots (:mod:`pytest_lens.llm.shared_slots`), made on first use.

        One per run (a replacement worker gets the same), private to the user, removed at the end of the run.
        """
        if self.slots_dir is None:
            self.slots_dir = tempfile.mkdtemp(prefix="pytest-lens-slots-")
            self.config.add_cleanup(functools.partial(shutil.rmtree, self.slots_dir, ignore_errors=True))
        return self.slots_dir

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Producer) -> LoadScopeScheduling | None:
        """Group LENS tests by stream unless the user picked a distribution mode."""
        dist = config.getvalue("dist")
        if dist == "loadgroup":
            self.grouped = True  # our xdist_group marks do the grouping
            return None
        if dist != "load" or self.user_chose_dist:
            return None
        self.grouped = True
        return LensGroupScheduling(config, log, self.group_of)

    def pytest_xdist_node_collection_finished(self, node: WorkerController, ids: Sequence[str]) -> None:
        """Selected questions, as a worker collected them (the controller collects nothing itself)."""
        self.session.expect(case for nodeid in ids if (case := self.case_of(nodeid)) is not None)

    def pytest_testnodedown(self, node: WorkerController, error: object | None) -> None:
        """Remember crashed workers: their groups may legitimately be rescheduled elsewhere."""
        if error is not None and (wid := worker_id(node)) is not None:
            self.crashed.add(wid)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: object) -> None:
        """A LENS test that killed its worker fails once, as the test's own failure; the session notes the crash.

        xdist reports the crash in no test phase (``when="???"``), which JUnit XML files as an error
        "on setup" beside pytest's "failed"; the call is where the question ran when its worker died.
        """
        case = self.case_of(crashitem)
        if case is None:
            return
        worker = worker_id(getattr(report, "node", None)) or "?"
        self.session.record_crash(case, worker)
        report.when = "call"
        report.longrepr = (
            f"worker {worker!r} crashed while running {crashitem!r} (the process died: os._exit, a signal or a segfault, "
            f"in adapter {case.adapter!r} or code it called); no result for this question, the rest of its group "
            "runs on another worker"
        )

    # -- worker ------------------------------------------------------------------------------------
    def streams_stay_together(self) -> bool:
        """On a worker: whether every selected test of an (adapter, scope, budget) group runs on this worker if one does."""
        workerinput = getattr(self.config, "workerinput", None) or {}
        return bool(workerinput.get(GROUPS_KEY, False))

    # -- shared helpers ------------------------------------------------------------------------
    def case_of(self, nodeid: str) -> LensCase | None:
        """The case a (possibly ``@group``-suffixed) node id runs."""
        case_id = case_id_of(nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid)
        return self._cases.get(case_id) if case_id is not None else None

    def group_of(self, nodeid: str) -> str:
        """Scheduling scope: the case's group for LENS tests, the test itself otherwise."""
        case = self.case_of(nodeid)
        return case.group if case is not None else nodeid

    def observe(self, group: str, report: pytest.TestReport) -> None:
        """Note which worker ran a test of ``group``."""
        wid = worker_id(getattr(report, "node", None))
        if wid is not None:
            self.group_workers.setdefault(group, set()).add(wid)

    def grouping_problems(self) -> list[str]:
        """The self-check, when grouping was asked for."""
        return split_groups(self.group_workers, self.crashed) if self.grouped else []


def split_groups(group_workers: dict[str, set[str]], crashed: set[str]) -> list[str]:
    """A failure line when a stream group ran on several workers (groups of crashed workers are rescheduled legitimately)."""
    split = {group: workers for group, workers in group_workers.items() if len(workers) > 1 and not workers & crashed}
    if not split:
        return []
    shown = "; ".join(f"{group} on {', '.join(sorted(workers))}" for group, workers in sorted(split.items()))
    return [
        f"xdist grouping lost: {len(split)} stream group(s) ran on several workers ({shown}); results replayed "
        "correctly but this pytest/pytest-xdist combination does not group tests (pytest-xdist issue #1386)"
    ]


def configure_worker(config: pytest.Config, session: LensSession) -> None:
    """On a worker: cap torch threads to the worker's share unless the user set them; share the model server's slots."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput and THREADS_KEY in workerinput:
        threads = str(workerinput[THREADS_KEY])
        os.environ.setdefault("LENS_TORCH_THREADS", threads)
        os.environ.setdefault("OMP_NUM_THREADS", threads)
    if workerinput and workerinput.get(SLOTS_KEY):
        session.setup.llm.share_slots(Path(workerinput[SLOTS_KEY]))
