"""Small real adapters and data builders shared by pytest-lens's own tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pytest_lens import CapabilityManifest, Document, ExtraTool, MemoryAdapter, SearchResult
from pytest_lens.text import content_terms

if TYPE_CHECKING:
    from lens_fixtures.openai_server import Fault, OpenAITestServer
    from lens_fixtures.openai_server.policies import Policy
    from pytest_lens.llm.client import ChatClient
    from pytest_lens.records.results import RunArtifact

J = TypeVar("J")

#: The small hand-written LENS example (16 episodes, 8 questions): fast data for tests that need a real scope.
COLD_CHAIN_DEMO = Path(__file__).parents[1] / "examples" / "cold_chain_demo.json"

BATCH = ExtraTool(
    "batch_retrieve",
    "Retrieve several items.",
    {"type": "object", "properties": {"ref_ids": {"type": "array", "items": {"type": "string"}}}, "required": ["ref_ids"]},
)


class RecordingMemory(MemoryAdapter):
    """A keyword memory over a dict that logs runner-side calls and (carelessly) echoes episode meta in results."""

    def __init__(self, batch: bool = True, max_results: int = 10) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.store: dict[str, tuple[str, str, dict[str, Any]]] = {}
        self.batch = batch
        self.max_results = max_results

    def reset(self, scope_id: str) -> None:
        self.calls.append(("reset", scope_id))
        self.store.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        self.calls.append(("ingest", episode_id))
        self.store[episode_id] = (timestamp, text, dict(meta or {}))

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        self.calls.append(("prepare", scope_id, checkpoint))

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        terms = set(content_terms(query))
        hits = []
        for ref, (timestamp, text, meta) in self.store.items():
            score = len(terms & set(content_terms(text)))
            if score:
                hits.append(SearchResult(ref, text[:80], float(score), {"timestamp": timestamp, **meta, "meta": meta}))
        hits.sort(key=lambda r: (-r.score, r.ref_id))
        return hits[: limit or 10]

    def retrieve(self, ref_id: str) -> Document | None:
        stored = self.store.get(ref_id)
        return Document(ref_id, stored[1], {"episode_type": "signal"}) if stored else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(max_results_per_search=self.max_results, extra_tools=[BATCH] if self.batch else [])

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name != "batch_retrieve":
            return super().call_extended_tool(name, args)
        docs = [doc for ref in args["ref_ids"] if (doc := self.retrieve(ref)) is not None]
        return {"documents": [{"ref_id": d.ref_id, "text": d.text, "metadata": {"phase": "x"}} for d in docs], "count": len(docs)}


class SearchRaises(RecordingMemory):
    """Fails in search: the bridge must turn this into a fault, not a crash."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        raise RuntimeError("index corrupted")


class SlowSearch(RecordingMemory):
    """Hangs in search longer than any sane timeout."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        time.sleep(30)
        return []


class WrongSearchType(RecordingMemory):
    """Returns a dict from search."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> Any:
        return {"ref_id": "x"}


def episode(episode_id: str, day: int, text: str, scope: str = "s1", **meta: Any) -> dict[str, Any]:
    """One LENS-format episode record."""
    return {"episode_id": episode_id, "scope_id": scope, "timestamp": f"2025-01-{day:02d}T09:00:00", "text": text, "meta": meta}


def question(
    qid: str,
    checkpoint: int,
    refs: list[str],
    facts: list[Any],
    qtype: str = "longitudinal",
    prompt: str | None = None,
    scope: str = "s1",
) -> dict[str, Any]:
    """One LENS-format question record."""
    return {
        "question_id": qid,
        "scope_id": scope,
        "checkpoint_after": checkpoint,
        "question_type": qtype,
        "prompt": prompt or f"What happened to the pump pressure ({qid})?",
        "ground_truth": {"canonical_answer": "answer", "required_evidence_refs": refs, "key_facts": facts},
    }


def small_dataset() -> dict[str, Any]:
    """Six episodes, three questions at checkpoints 2, 4 and 6; three episodes mention pump pressure."""
    episodes = [
        episode("e1", 1, "## 2025-01-01 Report\n### Readings\n- pump pressure 4.1 bar at station A", episode_type="signal"),
        episode("e2", 2, "## 2025-01-02 Report\n### Readings\n- forklift battery 80%", episode_type="distractor"),
        episode("e3", 3, "## 2025-01-03 Report\n### Readings\n- pump pressure 5.9 bar at station A, rising", episode_type="signal"),
        episode("e4", 4, "## 2025-01-04 Report\n### Readings\n- staff on shift 30", episode_type="distractor"),
        episode("e5", 5, "## 2025-01-05 Report\n### Readings\n- pump pressure 7.2 bar, seal leak found", episode_type="signal"),
        episode("e6", 6, "## 2025-01-06 Report\n### Readings\n- orders shipped 1200", episode_type="distractor"),
    ]
    questions = [
        question("q1", 2, ["e1"], ["4.1 bar"], qtype="null_hypothesis"),
        question("q2", 4, ["e1", "e3"], ["4.1 bar", {"fact": "5.9 bar", "aliases": ["5.9bar"]}]),
        question("q3", 6, ["e1", "e3", "e5"], ["seal leak", "7.2 bar"]),
    ]
    return {"version": "0.1.0", "scopes": [{"scope_id": "s1", "episodes": episodes}], "questions": questions}


def write_dataset(path: Path, document: dict[str, Any]) -> Path:
    """Write a dataset document as JSON and return its path."""
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


class JudgeRig(Generic[J]):
    """Local OpenAI-compatible servers and judges talking to them through the real client.

    ``role`` is the :class:`~lens_fixtures.openai_server.LensPolicy` field the given policy
    replaces (``meme_judge``, ``lme_judge``); ``make`` builds the judge from a client.
    Call :meth:`stop` at teardown.
    """

    def __init__(self, root: Path, role: str, make: Callable[[ChatClient], J]) -> None:
        self.root, self.role, self.make = root, role, make
        self.servers: list[OpenAITestServer] = []

    def __call__(self, policy: Policy | None = None, faults: tuple[Fault, ...] = ()) -> tuple[OpenAITestServer, J]:
        from lens_fixtures.openai_server import LensPolicy, OpenAITestServer
        from pytest_lens.llm.cache import RequestCache
        from pytest_lens.llm.client import ChatClient, LLMEndpoint
        from pytest_lens.llm.stats import LLMStats

        server = OpenAITestServer(LensPolicy(**({self.role: policy} if policy is not None else {})), faults=list(faults)).start()
        self.servers.append(server)
        endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_NO_KEY", retries=0)
        cache = RequestCache(self.root / f"cache{len(self.servers)}.sqlite", "off")
        return server, self.make(ChatClient(endpoint, "judge-m", cache=cache, stats=LLMStats()))

    def stop(self) -> None:
        """Stop every server started."""
        for server in self.servers:
            server.stop()


def assert_answered(result: Any, answered: int, **others: int) -> None:
    """``answered`` LENS questions ran to a score (passed, or ``gated``: a hard gate zeroed them); ``others`` as for assert_outcomes."""
    outcomes = result.parseoutcomes()
    got = outcomes.get("passed", 0) + outcomes.get("gated", 0)
    assert got == answered, f"{got} questions answered, expected {answered}: {outcomes}"
    for key in ("failed", "errors", "skipped", "xfailed", "xpassed"):  # checked as assert_outcomes checks them
        assert outcomes.get(key, 0) == others.get(key, 0), f"{key}: {outcomes}"
    if "deselected" in others:  # like assert_outcomes: only when asked
        assert outcomes.get("deselected", 0) == others["deselected"], f"deselected: {outcomes}"


def fast_progress_lines(monkeypatch: Any, every_s: float = 0.5) -> None:
    """Progress lines every ``every_s`` instead of a log's 10 s, in the module an in-process pytester run will import.

    Not through the package's attribute: after an earlier in-process run, pytester drops the modules it imported
    from ``sys.modules``, and the package still names the dropped copy.
    """
    import importlib

    monkeypatch.setattr(importlib.import_module("pytest_lens.plugin.terminal_progress"), "UNATTENDED_INTERVAL_S", every_s)


def run_lens_session(
    tmp_path: Path,
    adapters: dict[str, str],
    *,
    datasets: tuple[Path, ...] = (COLD_CHAIN_DEMO,),
    budgets: tuple[str, ...] = ("16k",),
    baseline: str | None = None,
    opaque_refs: str = "auto",
    call_timeout: float | None = 120.0,
) -> Any:
    """A real LENS run without pytest: every case of ``datasets`` answered by each adapter (``label -> target``).

    Returns the :class:`~pytest_lens.runs.session.LensSession` with its results recorded (``.artifact()`` gives the run).
    """
    from pytest_lens.records.settings import AdapterSpec, LensSettings
    from pytest_lens.runs.session import LensSession

    settings = LensSettings(
        adapters=tuple(AdapterSpec(label, target) for label, target in adapters.items()),
        datasets=datasets,
        budgets=budgets,
        rootdir=tmp_path,
        baseline=baseline,
        opaque_refs=opaque_refs,
        call_timeout=call_timeout,
    )
    session = LensSession.open(settings)
    session.expect(session.cases)
    runtime = session.new_runtime(tmp_path / "storage")
    try:
        for case in session.cases:
            session.record(session.run(case, runtime))
    finally:
        runtime.close()
    return session


def inline_artifact(run: RunArtifact) -> dict[str, Any]:
    """``run`` as one JSON object, as a single-file artifact (schema 1) held it: the document with every result inline."""
    document: dict[str, Any] = json.loads(run.model_dump_json())
    del document["rows"]
    return {**document, "schema_version": 1, "results": [json.loads(line) for line in run.results.lines()]}
