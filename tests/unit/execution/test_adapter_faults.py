"""Issue 15 (part C): hostile adapters' output, faults in the verdict, hangs, exits and oversized answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_lens import Document, SearchResult
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.records.rows import read_artifact_json
from pytest_lens.runs.storage import load_run, write_run
from tests.support import RecordingMemory, run_lens_session

# -- adapter output checks ------------------------------------------------------------------------


class NoManifest(RecordingMemory):
    """``get_capabilities()`` returns ``None`` (forgot the ``return``)."""

    def get_capabilities(self) -> Any:
        return None


class FloodsSearch(RecordingMemory):
    """``search`` returns 200,000 results whatever the limit."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        return [SearchResult(f"r{index}", "pump pressure", 1.0) for index in range(200_000)]


class RetrievesAnother(RecordingMemory):
    """``retrieve`` answers every ref id with the same, other, document (no batch tool: the agent calls ``retrieve``)."""

    def __init__(self) -> None:
        super().__init__(batch=False)

    def retrieve(self, ref_id: str) -> Document | None:
        return Document("someone-else", "pump pressure")


def test_adapter_output_checks_get_capabilities_none_is_a_fault() -> None:
    with pytest.raises(AdapterCallError) as raised:
        AdapterCaller(NoManifest(), "nomanifest").capabilities()
    fault = raised.value.fault
    assert (fault.adapter, fault.method, fault.kind) == ("nomanifest", "get_capabilities", "bad_return")
    assert "get_capabilities() returned None" in fault.describe()


def test_adapter_output_checks_search_over_its_limit_is_a_fault_in_a_run() -> None:
    caller = AdapterCaller(FloodsSearch(), "flood")
    assert len(caller.search("pump", None, 10)) == 200_000  # the conformance suite judges the raw results itself
    with pytest.raises(AdapterCallError) as raised:
        caller.search("pump", None, 10, strict=True)
    assert raised.value.fault.describe() == (
        "adapter 'flood' returned a wrong value from search(): 200,000 results for limit=10 (search must return at most limit results)"
    )


def test_adapter_output_checks_retrieve_of_another_ref_is_a_fault_in_a_run() -> None:
    caller = AdapterCaller(RetrievesAnother(), "other")
    assert caller.retrieve("e1") == Document("someone-else", "pump pressure")
    with pytest.raises(AdapterCallError) as raised:
        caller.retrieve("e1", strict=True)
    assert raised.value.fault.describe() == (
        "adapter 'other' returned a wrong value from retrieve(): retrieve('e1') returned the document 'someone-else' "
        "(a document must have the ref_id asked for)"
    )


@pytest.mark.parametrize(
    ("adapter", "method", "message"),
    [
        ("NoManifest", "get_capabilities", "returned None"),
        ("FloodsSearch", "search", "200,000 results for limit=10"),
        ("RetrievesAnother", "retrieve", "returned the document 'someone-else'"),
    ],
)
def test_adapter_output_checks_are_recorded_on_every_question_of_a_run(tmp_path: Path, adapter: str, method: str, message: str) -> None:
    session = run_lens_session(tmp_path, {"hostile": f"{__name__}:{adapter}"})
    results = session.ordered_results()
    assert results
    for result in results:
        faults = [fault for fault in result.faults if fault.method == method]
        assert faults, result.faults
        assert all(fault.adapter == "hostile" and fault.kind == "bad_return" and message in fault.message for fault in faults)


# -- an agent answer of 200,000 characters ------------------------------------------------------------


class Verbose:
    """An agent that searches once, then answers with one cited sentence followed by 200,000 characters of padding."""

    name = "verbose"
    description = "answers at great length"

    def answer(self, question: Any, bridge: Any) -> Any:
        import json

        from pytest_lens.agents.base import AgentAnswer

        hits = json.loads(bridge.call("memory_search", {"query": question.prompt}).content)
        first = hits[0]["ref_id"] if hits else "none"
        text = f"The answer is in the memory [{first}]. " + "x" * 200_000
        return AgentAnswer(text[:200_000])


def test_an_agent_answer_of_200000_characters_is_stored_cut_and_says_so(tmp_path: Path) -> None:
    from pytest_lens.answering.engine import run_case
    from pytest_lens.records.results import ANSWER_CHARS

    session = run_lens_session(tmp_path, {"rec": "tests.support:RecordingMemory"})
    case = session.cases[0]
    runtime = session.new_runtime(tmp_path / "verbose")
    try:
        result = run_case(case, runtime, Verbose(), session.setup.scoring)
    finally:
        runtime.close()
    assert result.answer_chars == 200_000
    assert len(result.answer) == ANSWER_CHARS == 20_000
    assert result.cited_refs  # scored on the whole answer: its citation counts
    session.record(result)
    write_run(tmp_path / "run.json", session.artifact())
    artifact = load_run(tmp_path / "run.json")
    stored = next(r for r in artifact.results if r.item_key == result.item_key)
    assert (len(stored.answer), stored.answer_chars) == (20_000, 200_000)
    assert "answers cut rec (1 answer(s) of up to 200,000 characters): scored whole, stored as their first 20,000 characters" in (
        "\n".join(session.report().lines)
    )


# -- the verdict counts adapter faults ------------------------------------------------------------------


class ResetRaises(RecordingMemory):
    """``reset`` raises on every stream: every question fails, yet the memory still answers well."""

    def reset(self, scope_id: str) -> None:
        raise RuntimeError("reset is broken")


def test_the_verdict_counts_adapter_faults(tmp_path: Path) -> None:
    session = run_lens_session(tmp_path, {"good": "tests.support:RecordingMemory", "broken": f"{__name__}:ResetRaises"})
    summaries = session.summaries()
    broken, good = summaries["broken"], summaries["good"]
    assert broken.faults == broken.n_questions > 0
    assert broken.composite > 0.5  # answers were still scored: without the fault gate this "passes"
    assert broken.not_comparable == f"faults on {broken.n_questions} of {broken.n_questions} questions (100%) > --lens-max-fault-rate=0.05"
    assert good.not_comparable is None
    verdict = session.verdict()
    assert verdict.exit_code == 1
    assert verdict.reasons == (
        f"--lens-max-fault-rate=0.05: broken: faults on {broken.n_questions} of {broken.n_questions} questions (100%); their scores are "
        "not comparable (each such question failed: its failure names adapter and method)",
    )
    lines = session.report().lines
    assert any(line.startswith("broken ") and "(not comparable)" in line and line.endswith("FAIL faults") for line in lines), lines
    assert not any(line.startswith("good ") and "not comparable" in line for line in lines)
    assert f"not comparable: broken: {broken.not_comparable}; its scores measure a broken adapter, not its memory" in lines
    artifact = session.artifact()
    assert artifact.summary["broken"].not_comparable == broken.not_comparable
    assert artifact.verdict is not None and artifact.verdict.exit_code == 1


def test_the_verdict_counts_adapter_faults_only_above_the_rate() -> None:
    from pytest_lens.analysis.gates import GatePolicy, check_gates
    from pytest_lens.records.results import AdapterSummary

    def summary(faults: int, control: Any = None) -> AdapterSummary:
        return AdapterSummary(
            adapter="a", budget="16k", n_questions=20, composite=0.8, metrics={}, gated=False, faults=faults, control=control
        )

    def fault_gate(summaries: dict[str, AdapterSummary], rate: float = 0.05) -> str:
        (line,) = [c.line for c in check_gates(summaries, [], GatePolicy(max_fault_rate=rate)) if "fault-rate" in c.gate]
        return line

    assert fault_gate({"a": summary(0)}) == "pass  --lens-max-fault-rate=0.05: no fault (1 adapter(s) checked)"
    assert fault_gate({"a": summary(1)}) == "pass  --lens-max-fault-rate=0.05: a: faults on 1 of 20 questions (5%): within the limit"
    assert fault_gate({"a": summary(2)}).startswith("FAIL  --lens-max-fault-rate=0.05: a: faults on 2 of 20 questions (10%); ")
    assert fault_gate({"a": summary(2)}, rate=0.1).startswith("pass")
    from pytest_lens.records.settings import ControlRole

    control = ControlRole(kind="null", of="a")
    assert fault_gate({"a": summary(0), "null": summary(20, control)}).startswith("pass")  # controls never gate


def test_faults_of_questions_the_model_could_not_answer_are_counted_too() -> None:
    # A real-model run whose endpoint went away: every question is not measured (no summary for the adapter), and
    # prepare() raised on each. The fault gate said "no fault (0 adapters checked)"; it counts those faults now.
    from pytest_lens.analysis.gates import GatePolicy, check_gates
    from pytest_lens.analysis.summary import fault_counts, summarize
    from pytest_lens.records.results import AdapterFault
    from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
    from tests.unit.analysis.factory import result, tier1

    fault = AdapterFault(adapter="graph", method="prepare", kind="exception", message="ExtractionReplyError: not JSON")
    unmeasured = [
        result(f"q{i}", {}, adapter="graph").model_copy(update={"not_measured": "no answer from the model", "faults": [fault]})
        for i in range(4)
    ]
    measured = [result(f"q{i}", tier1(1.0, 1.0), adapter="bm25") for i in range(4)]
    results = [*unmeasured, *measured]
    counts = fault_counts(results)
    assert counts == {"graph": (4, 4), "bm25": (0, 4)}
    summaries = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert list(summaries) == ["bm25"]  # nothing of graph was measured: it has no summary
    (line,) = [c.line for c in check_gates(summaries, [], GatePolicy(max_fault_rate=0.05), faults=counts) if "fault" in c.gate]
    assert line.startswith("FAIL  --lens-max-fault-rate=0.05: graph: faults on 4 of 4 questions (100%)")
    checks = check_gates(summaries, [], GatePolicy(max_fault_rate=0.05), faults=fault_counts(measured))
    (clean,) = [c.line for c in checks if "fault" in c.gate]
    assert clean == "pass  --lens-max-fault-rate=0.05: no fault (1 adapter(s) checked)"


# -- hangs and exits ----------------------------------------------------------------------------------------


class SwallowsEverything(RecordingMemory):
    """``search`` catches BaseException in a loop (the call timeout included) for 8 s, then answers nothing."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        import time

        return self._swallow(time.monotonic() + 8.0)  # bounded, so that a regression fails this test instead of hanging it

    def _swallow(self, ends: float) -> list[SearchResult]:
        import time

        try:
            while time.monotonic() < ends:
                try:  # noqa: SIM105 - the hostile part, spelt out
                    time.sleep(0.01)
                except BaseException:
                    pass
        except BaseException:  # raised between two sleeps: swallow that too
            return self._swallow(ends)
        return []


class ExitsInReset(RecordingMemory):
    """``reset`` calls ``sys.exit(3)``."""

    def reset(self, scope_id: str) -> None:
        import sys

        sys.exit(3)


class ExitsInInit(RecordingMemory):
    """The constructor calls ``sys.exit(4)``."""

    def __init__(self) -> None:
        import sys

        sys.exit(4)


def test_hangs_and_exits_a_call_that_catches_the_timeout_is_abandoned() -> None:
    import time

    caller = AdapterCaller(SwallowsEverything(), "swallow", timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(AdapterCallError) as first:
        caller.search("pump", None, 5)
    assert time.monotonic() - started < 4  # the timeout, then a short grace: not the adapter's 8 s
    assert (first.value.fault.method, first.value.fault.kind) == ("search", "timeout")
    abandoned = caller.abandoned
    assert abandoned is not None and abandoned.describe().startswith(
        "adapter 'swallow' was abandoned in search(): the call did not end when its timeout was raised inside it"
    )
    with pytest.raises(AdapterCallError) as later:  # refused at once: the adapter is still busy swallowing
        caller.retrieve("e1")
    assert later.value.fault == abandoned


def test_hangs_and_exits_the_run_goes_on_past_an_abandoned_adapter(tmp_path: Path) -> None:
    import time

    from pytest_lens.execution.runner import MAX_REBUILDS

    started = time.monotonic()
    session = run_lens_session(
        tmp_path, {"swallow": f"{__name__}:SwallowsEverything", "good": "tests.support:RecordingMemory"}, call_timeout=0.3
    )
    assert time.monotonic() - started < 60
    swallow = [r for r in session.ordered_results() if r.adapter == "swallow"]
    kinds = [[fault.kind for fault in r.faults] for r in swallow]
    # Each abandoned instance is rebuilt (issue 32), at most MAX_REBUILDS times: this one hangs on every search, so
    # the first instance's question and each rebuild's time out, then the adapter is given up.
    tried = 1 + MAX_REBUILDS
    assert all(k == ["timeout"] for k in kinds[:tried]) and all(k == ["abandoned"] for k in kinds[tried:]), kinds
    assert len(kinds) > tried
    assert all(not r.failed for r in session.ordered_results() if r.adapter == "good")
    assert session.verdict().exit_code == 1


def test_hangs_and_exits_system_exit_from_an_adapter_is_a_fault(tmp_path: Path) -> None:
    with pytest.raises(AdapterCallError) as raised:
        AdapterCaller(ExitsInReset(), "exits").reset("s1")
    assert raised.value.fault.describe() == "adapter 'exits' raised in reset(): SystemExit(3): the adapter tried to end the process"
    session = run_lens_session(tmp_path, {"exits": f"{__name__}:ExitsInReset", "init": f"{__name__}:ExitsInInit"})
    results = session.ordered_results()
    assert len(results) == len(session.cases)  # none missing
    for result in results:
        expected = ("reset", "exception") if result.adapter == "exits" else ("__init__", "construct")
        assert (result.faults[0].method, result.faults[0].kind) == expected, result.faults
    assert session.incomplete() == []


# -- the artifact survives the summary ----------------------------------------------------------------------

#: A bm25 adapter whose module, once imported, leaves the process 150 MB of address space: enough for the run, not for
#: numpy's OpenBLAS, which then ends the process without an exception (as an adapter that exhausted memory does).
STARVING = """
import re, resource
import numpy  # loaded before the limit, as by an adapter that uses it: what is left is too little for the statistics
from lens_fixtures.adapters.bm25 import BM25Adapter

_size = int(re.search(r"VmSize:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
resource.setrlimit(resource.RLIMIT_AS, (_size + 150 * 2**20, resource.RLIM_INFINITY))


class Starving(BM25Adapter):
    pass
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the address space size from /proc")
def test_the_artifact_survives_the_summary(pytester: pytest.Pytester) -> None:

    from tests.support import small_dataset, write_dataset

    pytester.makepyfile(starving=STARVING)
    path = write_dataset(pytester.path / "data.json", small_dataset())
    result = pytester.runpytest_subprocess(
        "--lens-adapter=starving:Starving", f"--lens-dataset={path}", "--lens-json=out.json", "-p", "no:cacheprovider"
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    assert len(artifact["results"]) == len(small_dataset()["questions"]), result.stdout.str()
    if artifact["pending"] is not None:  # the process died computing the statistics, as expected with too little memory
        assert artifact["statistics"] is None and artifact["verdict"] is None
        assert artifact["pending"].startswith("written before the statistics")
        assert "summary" in artifact and artifact["summary"]["Starving"]["n_questions"] > 0
    else:  # enough memory after all (few cores need little): the artifact is whole
        assert artifact["statistics"] is not None and artifact["verdict"] is not None


#: bm25 whose ``reset`` always raises (the memory still answers from what it ingested).
BROKEN_RESET = """
from lens_fixtures.adapters.bm25 import BM25Adapter


class Broken(BM25Adapter):
    def reset(self, scope_id):
        raise RuntimeError("reset is broken")
"""


def test_the_verdict_counts_adapter_faults_through_the_option(pytester: pytest.Pytester) -> None:
    """``--lens-max-fault-rate`` is read (as a fraction or a percentage) and gates the pytest run's verdict."""
    from tests.support import small_dataset, write_dataset

    pytester.makepyfile(broken=BROKEN_RESET)
    path = write_dataset(pytester.path / "data.json", small_dataset())
    strict = pytester.runpytest_subprocess("--lens-adapter=broken:Broken", f"--lens-dataset={path}", "-p", "no:cacheprovider")
    strict.stdout.fnmatch_lines(
        [
            "*FAIL  --lens-max-fault-rate=0.05: Broken: faults on 3 of 3 questions (100%)*",
            "LENS verdict: FAIL - --lens-max-fault-rate=0.05*",
        ]
    )
    loose = pytester.runpytest_subprocess(
        "--lens-adapter=broken:Broken", f"--lens-dataset={path}", "--lens-max-fault-rate=100%", "-p", "no:cacheprovider"
    )
    loose.stdout.fnmatch_lines(["*pass  --lens-max-fault-rate=1: Broken: faults on 3 of 3 questions (100%): within the limit"])
    assert "LENS verdict: FAIL - --lens-max-fault-rate" not in loose.stdout.str()
