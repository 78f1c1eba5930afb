"""The LLM-built memories next to the baselines on one slice: scores with CIs, ingest and search cost, LLM use.

    python benchmarks/systems.py                                   # the scripted test server (CI-style numbers)
    python benchmarks/systems.py --base-url http://127.0.0.1:8090/v1 --model gemma3-270m --cache systems.sqlite
    python benchmarks/systems.py --base-url ... --cache systems.sqlite --cache-mode replay   # 0 requests
    python benchmarks/systems.py --python cognee=.venv-cognee/bin/python --letta-server .venv-letta-server/bin/letta

For each system (null, bm25, sqlite-hybrid, compaction, graphrag-light, hierarchical, mem0-extract, graphiti, cognee,
letta and letta-memorize by default) it first streams the slice in-process through a fresh adapter on the run's endpoint and request cache,
timing every ``ingest`` (and the final ``prepare``, where graphrag-light builds its graph) and a
search for each question; then one ``pytest`` LENS run of every system together on the same cache
gives the headline, composite and metric means with their 95% t intervals. LLM use at ingestion is the
adapters' own ``lens_stats`` (extraction and summary calls and tokens); at answering, the agent's and
judge's requests and the agent's tokens, from the run's artifact.

Without ``--base-url`` the project's scripted server stands in for the model: its extraction replies are
well formed by construction, so those rows measure the adapters and the harness, not a model.

A system whose library or server is missing gets a row saying why (its questions skip in the LENS run). Cognee
cannot share an environment with the rest (docs/systems/cognee.md: it needs older transformers, and its wheel
ships a ``kuzu`` module that shadows the Kuzu Graphiti needs): ``--python cognee=.venv-cognee/bin/python`` runs its
row under that venv's interpreter (a venv layered over the main one, as CI builds it), the others in this one.
Letta needs its server, named by ``--letta-server`` or ``LENS_LETTA_SERVER`` (docs/systems/letta.md); ``letta``
keeps episodes in Letta's archival memory only, ``letta-memorize`` also lets Letta's agent write each record into
its core memory with the model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json

REPO = Path(__file__).resolve().parents[1]
#: Each system's adapter (named by module: entry points need a reinstall of the package) and its options.
SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "null": ("null", {}),
    "bm25": ("bm25", {}),
    "sqlite-hybrid": ("sqlite-hybrid", {}),
    "compaction": ("compaction", {}),
    "graphrag-light": ("lens_fixtures.adapters.graphrag_light:GraphRAGLightAdapter", {}),
    "hierarchical": ("lens_fixtures.adapters.hierarchical:HierarchicalAdapter", {}),
    "mem0-extract": ("lens_fixtures.adapters.mem0_extract:Mem0ExtractAdapter", {}),
    "graphiti": ("lens_fixtures.adapters.graphiti_memory:GraphitiAdapter", {}),
    "cognee": ("lens_fixtures.adapters.cognee_memory:CogneeAdapter", {}),
    "letta": ("lens_fixtures.adapters.letta_memory:LettaAdapter", {}),
    "letta-memorize": ("lens_fixtures.adapters.letta_memory:LettaAdapter", {"memorize": True}),
}
#: The in-process timings of :func:`measure`, in the table's order.
TIMINGS = ("ingest_ms_per_episode", "search_p50_ms", "search_p95_ms")
#: The counters each LLM-built adapter reports for its model calls at ingestion (``lens_stats``).
CALLS = ("extraction_calls", "chat_requests")
PROMPT_TOKENS = ("extraction_prompt_tokens", "chat_prompt_tokens")
COMPLETION_TOKENS = ("extraction_completion_tokens", "chat_completion_tokens")

#: The metric columns shown unless ``--all-metrics``.
SHOWN_METRICS = [
    "answer_quality",
    "fact_recall",
    "evidence_coverage",
    "evidence_grounding",
    "first_search_recall@10",
    "naive_baseline_advantage",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def chat_client(base_url: str, model: str, cache: Path, mode: str) -> Any:
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    return ChatClient(LLMEndpoint(base_url, api_key_env="LENS_LLM_API_KEY"), model, cache=RequestCache(cache, mode), stats=LLMStats())  # type: ignore[arg-type]


def counted(counters: dict[str, Any], names: tuple[str, ...]) -> int:
    return sum(int(counters.get(name, 0)) for name in names)


def measure(label: str, target: str, options: dict[str, Any], dataset: Path, llm: Any, storage: Path) -> dict[str, Any]:
    """Ingest (and final prepare) seconds per episode, search p50/p95 over the questions, the adapter's counters."""
    from pytest_lens.contract.adapter import AdapterUnavailable
    from pytest_lens.datasets.loader import load_dataset
    from pytest_lens.execution.runner import construct_adapter
    from pytest_lens.records.settings import AdapterSpec

    data = load_dataset(dataset)
    try:
        adapter = construct_adapter(AdapterSpec(label, target, dict(options)), storage, lens_llm=llm)
    except AdapterUnavailable as exc:
        return {"unavailable": str(exc)}
    except Exception as exc:  # e.g. an adapter that cannot be imported here: its row says so
        return {"unavailable": f"{type(exc).__name__}: {exc}"[:500]}
    ingest_s = 0.0
    episodes = 0
    searches: list[float] = []
    try:
        for scope in data.scopes:
            adapter.reset(scope.scope_id)
            started = time.perf_counter()
            for episode in scope.stream:
                adapter.ingest(episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, dict(episode.meta))
            if hasattr(adapter, "prepare"):
                adapter.prepare(scope.scope_id, len(scope.stream))
            ingest_s += time.perf_counter() - started
            episodes += len(scope.stream)
            for question in scope.questions:
                started = time.perf_counter()
                adapter.search(question.prompt, None, 10)
                searches.append(time.perf_counter() - started)
        stats = adapter.lens_stats() if hasattr(adapter, "lens_stats") else {}
    except Exception as exc:  # the system's own failure: said under the table, the other systems still measured
        return {"fault": f"{type(exc).__name__}: {exc}"[:500]}
    finally:
        if hasattr(adapter, "close"):
            adapter.close()
    return {
        "ingest_ms_per_episode": 1000 * ingest_s / max(1, episodes),
        "search_p50_ms": 1000 * percentile(searches, 0.5),
        "search_p95_ms": 1000 * percentile(searches, 0.95),
        "stats": stats,
    }


def measured_in(python: str, name: str, args: argparse.Namespace, base_url: str, cache: Path, storage: Path) -> dict[str, Any]:
    """:func:`measure` for one system in another interpreter (its venv); what it measured, or why it could not."""
    command = [python, str(Path(__file__).resolve()), "--measure-one", name, "--base-url", base_url, "--model", args.model]
    command += ["--dataset", str(args.dataset), "--cache", str(cache), "--cache-mode", args.cache_mode, "--storage", str(storage)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"fault": f"{python} exited with {done.returncode}: {done.stderr.strip()[-400:]}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def merged(artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of several runs' artifacts the table reads, as one (each adapter's statistics are its own)."""
    summary = {key: value for artifact in artifacts for key, value in artifact["summary"].items()}
    adapters = {key: value for artifact in artifacts for key, value in ((artifact.get("statistics") or {}).get("adapters") or {}).items()}
    results = [result for artifact in artifacts for result in artifact["results"]]
    return {"summary": summary, "statistics": {"adapters": adapters}, "results": results}


class LensRunError(RuntimeError):
    """A LENS run that wrote no artifact (its output is quoted)."""


def lens_run(
    systems: list[str], dataset: Path, base_url: str, model: str, cache: Path, mode: str, workdir: Path, python: str = sys.executable
) -> dict[str, Any]:
    """One pytest LENS run of every system; its JSON artifact."""
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:randomly"]
    for name in systems:
        target, options = SYSTEMS[name]
        command.append(f"--lens-adapter={name}={target}")
        command += [f"--lens-adapter-option={name}.{key}={json.dumps(value)}" for key, value in options.items()]
    command += [
        f"--lens-dataset={dataset}",
        "--lens-agent=llm",
        f"--lens-agent-model={model}",
        "--lens-judge=llm",
        f"--lens-llm-base-url={base_url}",
        f"--lens-llm-cache={cache}",
        f"--lens-llm-cache-mode={mode}",
        f"--lens-json={workdir / 'run.json'}",
    ]
    (workdir / "run.json").unlink(missing_ok=True)
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
    if not (workdir / "run.json").is_file():
        raise LensRunError(
            f"the LENS run under {python} wrote no artifact ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return read_artifact_json(workdir / "run.json")


def estimate(value: dict[str, Any] | None) -> str:
    if not value:
        return "-"
    if value.get("low") is None:
        return f"{value['value']:.3f}"
    return f"{value['value']:.3f} [{value['low']:.2f}, {value['high']:.2f}]"


def rows(
    systems: list[str], artifact: dict[str, Any], timings: dict[str, dict[str, Any]], *, all_metrics: bool = False
) -> tuple[list[str], list[list[str]]]:
    adapters = (artifact.get("statistics") or {}).get("adapters", {})
    measured = sorted({m for summary in artifact["summary"].values() for m in summary["metrics"]})
    metric_names = measured if all_metrics else [m for m in SHOWN_METRICS if m in measured]
    headers = ["system", "headline", "composite", *metric_names, "ingest ms/ep", "search p50 ms", "p95 ms"]
    headers += ["ingest LLM calls", "ingest tokens", "answer LLM calls", "answer tokens"]
    table = []
    for key, summary in artifact["summary"].items():
        name = summary["adapter"]
        stats = adapters.get(key, {})  # the statistics are keyed as the summary is
        results = [r for r in artifact["results"] if r["adapter"] == summary["adapter"] and not r.get("skipped")]
        adapter_calls = sum(counted(r.get("adapter_stats", {}), CALLS) for r in results)
        answer_calls = sum((r.get("llm") or {}).get("requests", 0) for r in results) - adapter_calls
        answer_tokens = sum(r.get("agent_tokens", 0) for r in results)
        timing = timings.get(name, {})
        counters = timing.get("stats", {})
        ingest_calls: int | str = counted(counters, CALLS) if any(n in counters for n in CALLS) else "-"
        if name == "compaction":
            ingest_calls = "in answers"
        ingest_tokens = counted(counters, PROMPT_TOKENS) + counted(counters, COMPLETION_TOKENS)
        if "unavailable" in timing:
            table.append([name, "unavailable (below)", *[""] * (len(headers) - 2)])
            continue
        table.append(
            [
                name,
                f"{summary['headline']:.3f} ({summary['headline_name']})",
                estimate(stats.get("composite")) if stats else f"{summary['composite']:.3f}",
                *[estimate((stats.get("metrics") or {}).get(m)) if stats else f"{summary['metrics'].get(m, 0):.3f}" for m in metric_names],
                *(f"{timing[k]:.1f}" if k in timing else "fault (below)" for k in TIMINGS),
                str(ingest_calls),
                str(ingest_tokens or "-"),
                str(answer_calls),
                str(answer_tokens),
            ]
        )
    return headers, table


def markdown(headers: list[str], table: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the scripted test server)")
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--dataset", type=Path, default=REPO / "examples" / "cold_chain_demo.json")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    parser.add_argument("--cache", type=Path, help="the request cache (default: a fresh one)")
    parser.add_argument("--cache-mode", default="record", choices=["record", "replay"])
    parser.add_argument("--all-metrics", action="store_true", help="a column for every metric the run measured")
    parser.add_argument("--letta-server", help="the Letta server's letta command (default: LENS_LETTA_SERVER)")
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="SYSTEM=PYTHON",
        help="run SYSTEM under another interpreter (e.g. cognee=.venv-cognee/bin/python); repeatable",
    )
    parser.add_argument("--measure-one", help=argparse.SUPPRESS)  # internal: one system's timings, as JSON
    parser.add_argument("--storage", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure_one:
        llm = chat_client(args.base_url, args.model, args.cache, args.cache_mode)
        target, options = SYSTEMS[args.measure_one]
        print(json.dumps(measure(args.measure_one, target, options, args.dataset, llm, args.storage)))
        return
    pythons = dict(item.split("=", 1) for item in args.python)
    systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    unknown = [name for name in systems if name not in SYSTEMS]
    unknown += [name for name in pythons if name not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    if args.letta_server:
        os.environ["LENS_LETTA_SERVER"] = args.letta_server
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lens-systems-")))
        base_url = args.base_url
        server = None
        if base_url is None:
            from lens_fixtures.openai_server import LensPolicy, OpenAITestServer

            server = stack.enter_context(OpenAITestServer(LensPolicy()))
            base_url = server.base_url
        cache = (args.cache or workdir / "cache.sqlite").resolve()
        timings = {}
        for name in systems:
            storage = workdir / f"store-{name}"
            if name in pythons:
                timings[name] = measured_in(pythons[name], name, args, base_url, cache, storage)
            else:
                target, options = SYSTEMS[name]
                llm = chat_client(base_url, args.model, cache, args.cache_mode)
                timings[name] = measure(name, target, options, args.dataset, llm, storage)
            shutil.rmtree(storage, ignore_errors=True)
        before = server.count() if server else None
        groups: dict[str, list[str]] = {}
        for name in systems:  # one LENS run per interpreter, in the order of the systems
            groups.setdefault(pythons.get(name, sys.executable), []).append(name)
        runs, failed = [], {}
        for py, names in groups.items():
            try:
                runs.append(lens_run(names, args.dataset, base_url, args.model, cache, args.cache_mode, workdir, py))
            except LensRunError as exc:
                if py == sys.executable:  # the main run: no table without it
                    raise SystemExit(str(exc)) from None
                failed.update(dict.fromkeys(names, str(exc)))  # another venv's systems: the rest of the table stands
        artifact = merged(runs)
        model = "the scripted test server" if server else f"{args.model} at {base_url}"
        print(f"slice: {args.dataset.name}; model: {model}; cache: {cache} ({args.cache_mode})")
        if server is not None:
            print(f"requests the LENS run sent: {server.count() - (before or 0)}")
        print(markdown(*rows(systems, artifact, timings, all_metrics=args.all_metrics)))
        for name, timing in timings.items():
            for why in ("unavailable", "fault"):
                if why in timing:
                    print(f"{name}: {why} while streaming the slice: {timing[why]}")
        for name, why in failed.items():
            print(f"{name}: no LENS row: {why}")


if __name__ == "__main__":
    main()
