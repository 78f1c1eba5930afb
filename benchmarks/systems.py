"""The LLM-built memories next to the baselines on one slice: scores with CIs, ingest and search cost, LLM use.

    python benchmarks/systems.py                                   # the scripted test server (CI-style numbers)
    python benchmarks/systems.py --python cognee=.venv-cognee/bin/python --letta-server .venv-letta-server/bin/letta
    python benchmarks/systems.py --empty-extraction                # the scripted server extracting nothing
    python benchmarks/systems.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \\
        --dataset bundled --llm-context 32768 --call-timeout 3600 --concurrency 4 --cache systems.sqlite
    python benchmarks/systems.py --base-url ... --cache systems.sqlite --cache-mode replay   # 0 requests

For each system (null, bm25, sqlite-hybrid, compaction, graphrag-light, hierarchical, mem0-extract, graphiti, cognee,
letta and letta-memorize by default) it first streams the slice in-process through a fresh adapter on the run's
endpoint and request cache, timing every ``ingest`` (and the final ``prepare``, where several build their memory) and a
search for each question; then one ``pytest`` LENS run of the systems (per interpreter) on the same cache gives the
headline, composite and metric means with their 95% t intervals. LLM use at ingestion is the adapters' own
``lens_stats`` (extraction and summary calls and tokens); at answering, the agent's and judge's requests and the
agent's tokens, from the run's artifact.

The LENS run has ``--lens-controls --lens-mutants=none`` (``--no-controls`` leaves them out): each system whose memory
the model builds (``lens_model_built``) also runs against the empty extractor, and the table shows its headline then,
the drop, and ``insensitive to what the model built`` where the run cannot tell the two apart.

Without ``--base-url`` the project's scripted server stands in for every model (its extraction replies are well formed
by construction, so those rows measure the adapters and the harness, not a model); ``--empty-extraction`` makes it
extract nothing. The options a real run needs pass through to the LENS run: ``--judge-model`` and ``--judge-base-url``
(a judge apart from the agent), ``--llm-context``, ``--call-timeout``, ``--llm-timeout``, ``--budget``,
``--concurrency``, ``--adapter-option SYSTEM.KEY=VALUE``, and the key from ``--api-key-env`` (``OPENAI_API_KEY`` by
default, as the run reads it); any other ``--lens-*`` option is passed on as given.

A system whose library or server is missing gets a row saying why (its questions skip in the LENS run), as does one
whose interpreter cannot run it. Cognee cannot share an environment with the rest (docs/systems/cognee.md: it needs
older transformers, and its wheel ships a ``kuzu`` module that shadows the Kuzu Graphiti needs):
``--python cognee=.venv-cognee/bin/python`` runs its row under that venv's interpreter (a venv layered over the main
one, as docs/systems/cognee.md builds it), the others in this one. Letta needs its server, named by
``--letta-server`` or ``LENS_LETTA_SERVER`` (docs/systems/letta.md); ``letta`` keeps episodes in Letta's archival
memory, ``letta-memorize`` also lets Letta's agent write each record into its core memory, which it reads. Paths may
be relative to the directory the command runs in.
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
    "letta-memorize": ("lens_fixtures.adapters.letta_memorize:LettaMemorizeAdapter", {}),
}
#: The in-process timings of :func:`measure`, in the table's order.
TIMINGS = ("ingest_ms_per_episode", "search_p50_ms", "search_p95_ms")
#: The counters each LLM-built adapter reports for its model calls at ingestion (``lens_stats``).
CALLS = ("extraction_calls", "chat_requests")
PROMPT_TOKENS = ("extraction_prompt_tokens", "chat_prompt_tokens")
COMPLETION_TOKENS = ("extraction_completion_tokens", "chat_completion_tokens")
#: The label suffix of the empty-extraction control (``pytest_lens.controls.plan.EMPTY_EXTRACTION``).
EMPTY = "/empty-extraction"

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


def chat_client(args: argparse.Namespace, base_url: str) -> Any:
    """The adapters' model client as the LENS run builds it: the key from ``--api-key-env``, the context, the timeout."""
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    endpoint = LLMEndpoint(base_url, api_key_env=args.api_key_env, timeout_s=args.llm_timeout, context_tokens=args.llm_context)
    return ChatClient(endpoint, args.model, cache=RequestCache(Path(args.cache), args.cache_mode), stats=LLMStats())


def counted(counters: dict[str, Any], names: tuple[str, ...]) -> int:
    return sum(int(counters.get(name, 0)) for name in names)


def load_slice(dataset: str) -> list[Any]:
    """The slice's scopes: a LENS file, or ``bundled`` (the six scopes a run uses without ``--lens-dataset``)."""
    from pytest_lens.datasets.bundled import bundled_dataset_paths
    from pytest_lens.datasets.loader import load_dataset

    paths = bundled_dataset_paths() if dataset == "bundled" else [Path(dataset)]
    return [scope for path in paths for scope in load_dataset(path).scopes]


def measure(label: str, options: dict[str, Any], args: argparse.Namespace, llm: Any, storage: Path) -> dict[str, Any]:
    """Ingest (and final prepare) seconds per episode, search p50/p95 over the questions, the adapter's counters."""
    from pytest_lens.contract.adapter import AdapterUnavailable
    from pytest_lens.execution.runner import construct_adapter
    from pytest_lens.records.settings import AdapterSpec

    scopes = load_slice(args.dataset)
    try:
        adapter = construct_adapter(AdapterSpec(label, SYSTEMS[label][0], options), storage, lens_llm=llm)
    except AdapterUnavailable as exc:
        return {"unavailable": str(exc)}
    except Exception as exc:  # e.g. an adapter that cannot be imported here: its row says so
        return {"unavailable": f"{type(exc).__name__}: {exc}"[:500]}
    ingest_s, episodes, searches = 0.0, 0, []
    try:
        for scope in scopes:
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


def runnable(python: str) -> str | None:
    """Why ``python`` cannot run a system here (it is missing, or cannot import pytest_lens), or ``None``."""
    if not Path(python).exists():
        return f"{python} does not exist"
    probe = subprocess.run([python, "-c", "import pytest_lens, lens_fixtures"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return (
            f"{python} cannot import pytest_lens ({probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else probe.returncode}): "
            "build its venv as docs/systems/cognee.md says (its .pth adds this project's venv with site.addsitedir)"
        )
    return None


def measured_in(python: str, name: str, argv: list[str], base_url: str, storage: Path) -> dict[str, Any]:
    """:func:`measure` for one system in another interpreter (its venv); what it measured, or why it could not."""
    why = runnable(python)
    if why is not None:
        return {"unavailable": why}
    command = [python, str(Path(__file__).resolve()), *argv, "--measure-one", name, "--base-url", base_url, "--storage", str(storage)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"fault": f"{python} exited with {done.returncode}: {done.stderr.strip()[-400:]}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def merged(artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of several runs' artifacts the table reads, as one (each adapter's statistics are its own).

    An adapter in several runs (the ``null`` and ``random`` controls every run with controls adds) is taken from the first.
    """
    summary: dict[str, Any] = {}
    adapters: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for artifact in artifacts:
        new = {key for key, value in artifact["summary"].items() if value["adapter"] not in {s["adapter"] for s in summary.values()}}
        summary.update({key: artifact["summary"][key] for key in new})
        adapters.update({key: value for key, value in ((artifact.get("statistics") or {}).get("adapters") or {}).items() if key in new})
        labels = {artifact["summary"][key]["adapter"] for key in new}
        results += [result for result in artifact["results"] if result["adapter"] in labels]
        rows += [row for row in (artifact.get("sensitivity") or {}).get("rows", []) if row["adapter"] in new]
    return {"summary": summary, "statistics": {"adapters": adapters}, "results": results, "sensitivity": {"rows": rows}}


def fault_lines(systems: list[str], artifact: dict[str, Any]) -> list[str]:
    """One line per system (or its empty-extraction control) with faulted questions: how many, and the first fault."""
    lines = []
    for label in [label for name in systems for label in (name, name + EMPTY)]:
        faulted = [r for r in artifact["results"] if r["adapter"] == label and r.get("faults")]
        if faulted:
            asked = sum(1 for r in artifact["results"] if r["adapter"] == label and not r.get("skipped"))
            first = faulted[0]["faults"][0]
            lines.append(f"{label}: faults on {len(faulted)} of {asked} questions; first: {first['method']}: {first['message'][:300]}")
    return lines


class LensRunError(RuntimeError):
    """A LENS run that wrote no artifact (its output is quoted)."""


def lens_command(systems: list[str], args: argparse.Namespace, base_url: str, workdir: Path, python: str) -> list[str]:
    """The pytest command line of one LENS run of ``systems``."""
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:randomly"]
    for name in systems:
        target, _ = SYSTEMS[name]
        command.append(f"--lens-adapter={name}={target}")
        command += [f"--lens-adapter-option={name}.{key}={json.dumps(value)}" for key, value in system_options(name, args).items()]
    if args.dataset != "bundled":
        command.append(f"--lens-dataset={args.dataset}")
    command += ["--lens-agent=llm", f"--lens-agent-model={args.model}", "--lens-judge=llm", f"--lens-llm-base-url={base_url}"]
    command += [f"--lens-llm-api-key-env={args.api_key_env}", f"--lens-llm-cache={args.cache}", f"--lens-llm-cache-mode={args.cache_mode}"]
    for flag, value in (
        ("--lens-judge-model", args.judge_model),
        ("--lens-judge-base-url", args.judge_base_url),
        ("--lens-llm-context", args.llm_context),
        ("--lens-call-timeout", args.call_timeout),
        ("--lens-llm-timeout", args.llm_timeout),
        ("--lens-budget", args.budget),
        ("--lens-concurrency", args.concurrency),
    ):
        if value is not None:
            command.append(f"{flag}={value}")
    if args.controls:
        command += ["--lens-controls", "--lens-mutants=none"]
    return [*command, *args.lens_options, f"--lens-json={workdir / 'run.json'}"]


def lens_run(systems: list[str], args: argparse.Namespace, base_url: str, workdir: Path, python: str = sys.executable) -> dict[str, Any]:
    """One pytest LENS run of ``systems`` under ``python``; its JSON artifact, or :class:`LensRunError` saying why not."""
    if python != sys.executable and (why := runnable(python)) is not None:
        raise LensRunError(why)
    (workdir / "run.json").unlink(missing_ok=True)
    done = subprocess.run(lens_command(systems, args, base_url, workdir, python), cwd=workdir, capture_output=True, text=True, check=False)
    if not (workdir / "run.json").is_file():
        raise LensRunError(
            f"the LENS run under {python} wrote no artifact ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return read_artifact_json(workdir / "run.json")


def system_options(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The system's own options, then ``--adapter-option SYSTEM.KEY=VALUE`` (values as JSON, else text)."""
    options = dict(SYSTEMS[name][1])
    for item in args.adapter_option:
        target, _, value = item.partition("=")
        system, _, key = target.partition(".")
        if system == name:
            try:
                options[key] = json.loads(value)
            except json.JSONDecodeError:
                options[key] = value
    return options


def estimate(value: dict[str, Any] | None) -> str:
    if not value:
        return "-"
    if value.get("low") is None:
        return f"{value['value']:.3f}"
    return f"{value['value']:.3f} [{value['low']:.2f}, {value['high']:.2f}]"


def empty_columns(name: str, artifact: dict[str, Any]) -> list[str]:
    """The empty-extraction control's headline, the drop with its CI, and what the run concluded (``-``: no control)."""
    summary = artifact["summary"].get(name + EMPTY)
    row = next((row for row in artifact["sensitivity"]["rows"] if row["control"] == name + EMPTY), None)
    if summary is None:
        return ["-", "-", "-"]
    if row is None:  # no question of both answered (a fault on every one, say)
        return [f"{summary['headline']:.3f}", "-", "not compared"]
    delta = row["test"]["delta"]
    drop = f"{delta['value']:+.3f}" + (f" [{delta['low']:+.2f}, {delta['high']:+.2f}]" if delta.get("low") is not None else "")
    verdict = row.get("flag") or ("scores what the model built" if row["detected"] else "not detected")
    return [f"{row['test']['second']:.3f}", drop, verdict]


def llm_columns(name: str, artifact: dict[str, Any], timing: dict[str, Any]) -> list[str]:
    """Ingest calls and tokens (the adapter's counters while streaming), answer calls and tokens (the LENS run's)."""
    results = [r for r in artifact["results"] if r["adapter"] == name and not r.get("skipped")]
    adapter_calls = sum(counted(r.get("adapter_stats", {}), CALLS) for r in results)
    answer_calls = sum((r.get("llm") or {}).get("requests", 0) for r in results) - adapter_calls
    counters = timing.get("stats", {})
    ingest_calls: int | str = counted(counters, CALLS) if any(n in counters for n in CALLS) else "-"
    if name == "compaction":
        ingest_calls = "in answers"
    ingest_tokens = counted(counters, PROMPT_TOKENS) + counted(counters, COMPLETION_TOKENS)
    return [str(ingest_calls), str(ingest_tokens or "-"), str(answer_calls), str(sum(r.get("agent_tokens", 0) for r in results))]


def rows(
    systems: list[str], artifact: dict[str, Any], timings: dict[str, dict[str, Any]], failed: dict[str, str], *, all_metrics: bool = False
) -> tuple[list[str], list[list[str]]]:
    """One row per system, in the order asked for: scores, the empty extractor's, time and LLM use; why, when it has none."""
    adapters = artifact["statistics"]["adapters"]
    measured = sorted({m for summary in artifact["summary"].values() for m in summary["metrics"]})
    metric_names = measured if all_metrics else [m for m in SHOWN_METRICS if m in measured]
    headers = ["system", "headline", "composite", *metric_names, "empty extractor", "drop [CI]", "what the model built"]
    headers += ["ingest ms/ep", "search p50 ms", "p95 ms", "ingest LLM calls", "ingest tokens", "answer LLM calls", "answer tokens"]
    table = []
    for name in systems:
        summary, timing = artifact["summary"].get(name), timings.get(name, {})
        why = "unavailable" if "unavailable" in timing else ("no LENS run" if name in failed else None)
        if summary is None or why is not None:
            table.append([name, f"{why or 'no result'} (below)", *[""] * (len(headers) - 2)])
            continue
        stats = adapters.get(name, {})  # the statistics are keyed as the summary is
        table.append(
            [
                name,
                f"{summary['headline']:.3f} ({summary['headline_name']})",
                estimate(stats.get("composite")) if stats else f"{summary['composite']:.3f}",
                *[estimate((stats.get("metrics") or {}).get(m)) if stats else f"{summary['metrics'].get(m, 0):.3f}" for m in metric_names],
                *empty_columns(name, artifact),
                *(f"{timing[k]:.1f}" if k in timing else "fault (below)" for k in TIMINGS),
                *llm_columns(name, artifact, timing),
            ]
        )
    return headers, table


def markdown(headers: list[str], table: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Any other --lens-* option is passed to the LENS run.")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the scripted test server)")
    parser.add_argument("--model", default="scripted", help="the agent's model, and every system's unless an option says otherwise")
    parser.add_argument("--judge-model", help="the judge's model (default: the agent's)")
    parser.add_argument("--judge-base-url", help="the judge's endpoint (default: --base-url)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the environment variable holding the endpoints' key")
    parser.add_argument("--dataset", default=str(REPO / "examples" / "cold_chain_demo.json"), help="a LENS file, or 'bundled' (six scopes)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    parser.add_argument("--cache", help="the request cache (default: a fresh one)")
    parser.add_argument("--cache-mode", default="record", choices=["record", "replay"])
    parser.add_argument("--llm-context", type=int, help="the model's context window in tokens (--lens-llm-context; Letta's too)")
    parser.add_argument("--llm-timeout", type=float, help="seconds per model request (--lens-llm-timeout; default: sized per request)")
    parser.add_argument("--call-timeout", type=float, help="seconds per adapter call (--lens-call-timeout; extraction may take minutes)")
    parser.add_argument("--budget", help="the agent's budget (--lens-budget, default 16k)")
    parser.add_argument("--concurrency", type=int, help="questions answered at once (--lens-concurrency)")
    parser.add_argument("--adapter-option", action="append", default=[], metavar="SYSTEM.KEY=VALUE", help="an option of one system")
    parser.add_argument("--controls", action=argparse.BooleanOptionalAction, default=True, help="the empty-extraction control")
    parser.add_argument("--empty-extraction", action="store_true", help="the scripted server extracts nothing (without --base-url)")
    parser.add_argument("--all-metrics", action="store_true", help="a column for every metric the run measured")
    parser.add_argument("--letta-server", help="the Letta server's letta command (default: LENS_LETTA_SERVER)")
    parser.add_argument(
        "--python", action="append", default=[], metavar="SYSTEM=PYTHON", help="run SYSTEM under another interpreter; repeatable"
    )
    parser.add_argument("--measure-one", help=argparse.SUPPRESS)  # internal: one system's timings, as JSON
    parser.add_argument("--storage", type=Path, help=argparse.SUPPRESS)
    return parser


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, str]]:
    """The options, every path made absolute (the LENS runs start in a temporary directory), and ``--python`` by system."""
    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    if unknown := [item for item in extra if not item.startswith("--lens-")]:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.lens_options = extra
    if args.dataset != "bundled":
        args.dataset = os.path.abspath(args.dataset)
    args.cache = os.path.abspath(args.cache) if args.cache else None
    # abspath, not resolve: a venv's bin/python is a symlink, and the venv is where it is called from.
    pythons = {name: os.path.abspath(path) if os.sep in path else path for name, _, path in (i.partition("=") for i in args.python)}
    unknown_systems = [name for name in [*args.systems.split(","), *pythons] if name.strip() and name.strip() not in SYSTEMS]
    if unknown_systems:
        parser.error(f"unknown systems {unknown_systems}; choose from {', '.join(SYSTEMS)}")
    if args.letta_server:
        os.environ["LENS_LETTA_SERVER"] = os.path.abspath(args.letta_server) if os.sep in args.letta_server else args.letta_server
    if args.empty_extraction and args.base_url:
        parser.error("--empty-extraction sets what the scripted server answers: leave out --base-url")
    return args, pythons


def main(argv: list[str] | None = None) -> None:
    args, pythons = parse(argv)
    if args.measure_one:
        llm = chat_client(args, args.base_url)
        print(json.dumps(measure(args.measure_one, system_options(args.measure_one, args), args, llm, args.storage)))
        return
    systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lens-systems-")))
        base_url, server = args.base_url, None
        if base_url is None:
            from lens_fixtures.openai_server import EmptyExtractionPolicy, LensPolicy, OpenAITestServer

            policy = EmptyExtractionPolicy(base=LensPolicy()) if args.empty_extraction else LensPolicy()
            server = stack.enter_context(OpenAITestServer(policy))
            base_url = server.base_url
        args.cache = args.cache or str(workdir / "cache.sqlite")
        timings = {}
        for name in systems:
            storage = workdir / f"store-{name}"
            if name in pythons:
                argv_child = [*(argv if argv is not None else sys.argv[1:]), "--cache", args.cache]
                timings[name] = measured_in(pythons[name], name, argv_child, base_url, storage)
            else:
                timings[name] = measure(name, system_options(name, args), args, chat_client(args, base_url), storage)
            shutil.rmtree(storage, ignore_errors=True)
        before = server.count() if server else None
        groups: dict[str, list[str]] = {}
        for name in systems:  # one LENS run per interpreter, in the order of the systems
            groups.setdefault(pythons.get(name, sys.executable), []).append(name)
        runs, failed = [], {}
        for py, names in groups.items():
            try:
                runs.append(lens_run(names, args, base_url, workdir, py))
            except LensRunError as exc:
                failed.update(dict.fromkeys(names, str(exc)))  # the rest of the table stands; these rows say why
        report(systems, merged(runs), timings, failed, args, server, before, base_url)


def report(
    systems: list[str], artifact: dict[str, Any], timings: dict[str, dict[str, Any]], failed: dict[str, str], args: argparse.Namespace,
    server: Any, before: int | None, base_url: str,
) -> None:
    """The slice, the model, the requests, the table, and below it why each system without a full row has none."""
    extractor = " (the empty extractor: every memory-building request answered empty)" if args.empty_extraction else ""
    model = f"the scripted test server{extractor}" if server else f"{args.model} at {base_url}"
    print(f"slice: {Path(args.dataset).name}; model: {model}; cache: {args.cache} ({args.cache_mode})")
    if server is not None:
        print(f"requests the LENS runs sent: {server.count() - (before or 0)}")
    print(markdown(*rows(systems, artifact, timings, failed, all_metrics=args.all_metrics)))
    for line in fault_lines(systems, artifact):
        print(line)
    for name in systems:
        for why in ("unavailable", "fault"):
            if why in timings.get(name, {}):
                print(f"{name}: {why} while streaming the slice: {timings[name][why]}")
        if name in failed:
            print(f"{name}: no LENS row: {failed[name]}")


if __name__ == "__main__":
    main()
