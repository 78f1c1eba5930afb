"""Serial vs concurrent questions with the LLM agent, side by side, in one invocation.

Runs LENS scope 01 (``../shared/datasets/lens/scope_01_with_distractors.json``, or ``--dataset``)
at 16k with ``--lens-agent=llm`` through the project's local OpenAI-compatible test server, which
adds ``--latency-ms`` to every completion (a stand-in for a remote model), once with
``--lens-concurrency=1`` and once with ``--lens-concurrency=N``, as whole ``pytest`` commands with
the request cache off (every request reaches the server). It prints the wall times, the requests
the server received and pytest-lens counted, the ratio, and whether every question's result is
identical (answer, citations, tool calls, metrics, composite, LLM counts; timings aside).

    python benchmarks/llm_throughput.py                          # 300 ms, concurrency 8, bm25
    python benchmarks/llm_throughput.py --latency-ms 0 300 --repeat 3 --judge
    python benchmarks/llm_throughput.py --offline                # also the offline agent (no server), serial vs concurrent
    python benchmarks/llm_throughput.py --occupancy --bundled --slots 8 --judge   # how busy an 8-slot server is kept

``--occupancy`` measures instead how busy the run keeps a server that generates ``--slots`` completions at once, each
holding its slot for ``--latency-ms`` (llama.cpp's ``-np N`` with a model of that speed): the run's requests
x latency / slots is the server's floor, and floor / the time from the first request to the last is its
occupancy once answering starts. It says where the rest goes: before the first request (start-up, the first
stream's ingestion), between requests (slot-seconds idle while answering, by what was running: agent turns, judge
calls, or nothing of that scope), and after the last (summary, statistics, artifact). ``--bundled`` runs the six
bundled scopes (the generator's V1-style scopes) instead of ``--dataset``.

With ``--repeat`` the two modes alternate and the medians are shown. The machine may be shared:
quote ratios measured in one invocation, with the load averages printed beside them. "cpu s" is the
CPU time (user + system) of each pytest command: on a busy machine its wall time is that CPU work
stretched by the competition, while the model's latency is not, so the CPU column says how much of
a ratio is the machine's. The pytest commands may write bytecode caches (``PYTHONDONTWRITEBYTECODE``
is dropped for them) and one untimed collection runs first, so both modes start warm, as a user's
repeated runs do.

Plugins a LENS run does not need are disabled in both modes: the cache provider, hypothesis's and
xdist's plugins, and anyio's, whose start-up imports trio wherever trio is installed (this
checkout's test dependencies install it for selenium; about 0.5 s of CPU per command here, more
than all 24 questions' scoring), a cost of the environment, not of pytest-lens.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json
from pytest_process import pytest_command

REPO = Path(__file__).resolve().parents[1]
SCOPE = Path("shared") / "datasets" / "lens" / "scope_01_with_distractors.json"
# ../shared beside the repository (a worktree may sit one level deeper).
DEFAULT_DATASET = next((base / SCOPE for base in REPO.parents if (base / SCOPE).exists()), REPO.parent / SCOPE)
_SESSION_TIME = re.compile(r" in ([0-9.]+)s")
#: The benchmark's commands may cache bytecode, as a user's Python does.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Run:
    wall_s: float
    session_s: float
    cpu_s: float
    server_requests: int
    counted: dict[str, int]
    results: dict[str, Any]


def lens_command(args: argparse.Namespace, workdir: Path, base_url: str | None, concurrency: int, name: str) -> list[str]:
    command = pytest_command(
        f"--lens-adapter={args.adapter}",
        *(f"--lens-dataset={dataset}" for dataset in args.datasets),
        f"--lens-budget={args.budget}",
        f"--lens-concurrency={concurrency}",
        f"--lens-json={workdir / name}.json",
    )
    if base_url is not None:
        command += [
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={base_url}",
            "--lens-llm-cache-mode=off",
            f"--lens-max-connections={args.max_connections}",
        ]
        if args.judge:
            command.append("--lens-judge=llm")
    elif args.judge:
        command.append("--lens-judge=offline")
    return command


def run_once(args: argparse.Namespace, server: Any, concurrency: int, name: str) -> Run:
    with tempfile.TemporaryDirectory(prefix="lens-throughput-") as tmp:
        workdir = Path(tmp)
        if server is not None:
            server.reset()
        command = lens_command(args, workdir, server.base_url if server is not None else None, concurrency, name)
        cpu_before = _children_cpu()
        started = time.perf_counter()
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False, env=ENV)
        wall = time.perf_counter() - started
        cpu = _children_cpu() - cpu_before
        if done.returncode not in (0, 1):
            raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        artifact = read_artifact_json(workdir / f"{name}.json")
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    session = _SESSION_TIME.search(last)
    llm = (artifact["run"].get("llm") or {}).get("requests") or {}
    return Run(
        wall_s=wall,
        session_s=float(session.group(1)) if session else float("nan"),
        cpu_s=cpu,
        server_requests=server.count(path="/v1/chat/completions") if server is not None else 0,
        counted=llm,
        results={r["question_id"]: comparable(r) for r in artifact["results"]},
    )


def _children_cpu() -> float:
    """User + system CPU seconds of the child processes waited for so far (each pytest command, once it has ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A question's result without its timings."""
    data = {key: value for key, value in result.items() if key != "duration_s"}
    data["tool_calls"] = [{k: v for k, v in call.items() if k != "duration_ms"} for call in result["tool_calls"]]
    return data


def measure(args: argparse.Namespace, server: Any, label: str) -> list[tuple[str, ...]]:
    modes = {"serial": 1, "concurrent": args.concurrency}
    runs: dict[str, list[Run]] = {mode: [] for mode in modes}
    for repetition in range(args.repeat):
        order = list(modes) if repetition % 2 == 0 else list(reversed(modes))  # alternate, so drift hits both
        for mode in order:
            runs[mode].append(run_once(args, server, modes[mode], mode))
    serial, concurrent = runs["serial"], runs["concurrent"]
    identical = all(run.results == serial[0].results for run in serial + concurrent)
    rows: list[tuple[str, ...]] = []
    for mode, mode_runs in runs.items():
        wall = statistics.median(run.wall_s for run in mode_runs)
        session = statistics.median(run.session_s for run in mode_runs)
        cpu = statistics.median(run.cpu_s for run in mode_runs)
        rows.append(
            (
                label,
                f"{mode} ({modes[mode]})",
                f"{wall:.2f}",
                f"{session:.2f}",
                f"{cpu:.2f}",
                str(mode_runs[0].server_requests) if server is not None else "-",
                str(mode_runs[0].counted.get("requests", 0)),
                str(mode_runs[0].counted.get("http_requests", 0)),
                str(len(mode_runs[0].results)),
            )
        )
    wall_ratio = statistics.median(r.wall_s for r in serial) / statistics.median(r.wall_s for r in concurrent)
    session_ratio = statistics.median(r.session_s for r in serial) / statistics.median(r.session_s for r in concurrent)
    verdict = "identical" if identical else "DIFFERENT"
    rows.append((label, "serial / concurrent", f"{wall_ratio:.2f}x", f"{session_ratio:.2f}x", "", "", "", "", verdict))
    return rows


def occupancy(args: argparse.Namespace) -> None:
    """``--occupancy``: one concurrent run against a server of ``--slots`` slots, and where its slots idle."""
    from lens_fixtures.openai_server import Fault, OpenAITestServer

    latency = args.latency_ms[0] / 1000
    slow = Fault("slow", delay_s=latency, permanent=True)  # every completion holds its slot for the latency
    with OpenAITestServer(slots=args.slots, faults=[slow]) as server, tempfile.TemporaryDirectory(prefix="lens-busy-") as tmp:
        workdir = Path(tmp)
        command = lens_command(args, workdir, server.base_url, args.concurrency, "busy")
        load_before = os.getloadavg()
        started = time.perf_counter()
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False, env=ENV)
        ended = time.perf_counter()
        if done.returncode not in (0, 1):
            raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        spans = server.served_spans()
        kinds = [r.kind for r in server.requests if r.path == "/v1/chat/completions" and r.status == 200]
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    floor = len(spans) * latency / args.slots
    window = last - first
    idle = args.slots * window - sum(b - a for a, b in spans)
    print(
        f"occupancy: {len(spans)} completions ({', '.join(f'{kind} {n}' for kind, n in sorted(Counter(kinds).items()))}) x "
        f"{latency * 1000:g} ms / {args.slots} slots = floor {floor:.1f} s"
    )
    print(f"load average {_load(load_before)} before, {_load(os.getloadavg())} after, on {os.cpu_count()} CPU(s)")
    print(f"  command wall {ended - started:.1f} s: floor / wall = {floor / (ended - started):.2f}")
    print(f"  before the first request (start-up, first ingestion): {first - started:.1f} s")
    print(f"  answering, first request to last: {window:.1f} s: floor / that = {floor / window:.2f} (slot-seconds idle {idle:.1f})")
    print(f"  after the last request (summary, statistics, artifact, exit): {ended - last:.1f} s")
    print(f"  busy slots over the answering window, in {args.columns} parts of {window / args.columns:.1f} s:")
    part = window / args.columns
    cells = []
    for index in range(args.columns):
        a, b = first + index * part, first + (index + 1) * part
        cells.append(sum(max(0.0, min(y, b) - max(x, a)) for x, y in spans) / part)
    for row in range(0, len(cells), 20):
        print("    " + " ".join(f"{cell:4.1f}" for cell in cells[row : row + 20]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[300.0], help="added to every completion (default 300)")
    parser.add_argument("--concurrency", type=int, default=8, help="--lens-concurrency of the concurrent runs (default 8)")
    parser.add_argument("--max-connections", type=int, default=16, help="--lens-max-connections (default 16)")
    parser.add_argument("--adapter", default="bm25")
    parser.add_argument("--budget", default="16k")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repeat", type=int, default=1, help="runs per mode; medians are shown (default 1)")
    parser.add_argument("--judge", action="store_true", help="also judge with the LLM judge (offline judge for --offline)")
    parser.add_argument("--offline", action="store_true", help="also time the offline agent (no LLM) serial vs concurrent")
    parser.add_argument("--occupancy", action="store_true", help="how busy the run keeps a server of --slots slots (see above)")
    parser.add_argument("--slots", type=int, default=8, help="--occupancy: completions the server generates at once (default 8)")
    parser.add_argument("--bundled", action="store_true", help="the six bundled scopes instead of --dataset")
    parser.add_argument("--columns", type=int, default=20, help="--occupancy: parts of the answering window shown")
    args = parser.parse_args()
    if args.bundled:
        from pytest_lens.datasets.bundled import bundled_dataset_paths

        args.datasets = [Path(path) for path in bundled_dataset_paths()]
    elif not args.dataset.exists():
        raise SystemExit(f"no dataset at {args.dataset}: pass --dataset PATH")
    else:
        args.datasets = [args.dataset.resolve()]
    if args.occupancy:
        occupancy(args)
        return

    from lens_fixtures.openai_server import OpenAITestServer

    load_before = os.getloadavg()
    rows: list[tuple[str, ...]] = []
    for index, latency in enumerate(args.latency_ms):
        with OpenAITestServer(latency_s=latency / 1000) as server:
            if index == 0:  # untimed: one question in each mode compiles and caches what both import
                with tempfile.TemporaryDirectory(prefix="lens-throughput-") as tmp:
                    for concurrency in (1, 2):
                        warm = lens_command(args, Path(tmp), server.base_url, concurrency, "warm")
                        subprocess.run([*warm, "-k", "q01"], cwd=tmp, capture_output=True, check=False, env=ENV)
            rows.extend(measure(args, server, f"llm agent, {latency:g} ms"))
    if args.offline:
        rows.extend(measure(args, None, "offline agent"))

    load_after = os.getloadavg()
    headers: tuple[str, ...] = ("agent", "mode (concurrency)", "wall s", "pytest s", "cpu s", "server requests", "llm requests")
    headers = (*headers, "http requests", "questions")
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    judge = "; LLM judge" if args.judge else ""
    print(
        f"dataset: {', '.join(dataset.name for dataset in args.datasets)}; adapter {args.adapter}; budget {args.budget}{judge}; "
        f"{args.repeat} run(s) per mode (medians); request cache off; wall = the whole pytest command, pytest s = its session, "
        "cpu s = its user + system CPU time"
    )
    print(f"load average (1, 5, 15 min): {_load(load_before)} before, {_load(load_after)} after, on {os.cpu_count()} CPU(s)")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{value:.2f}" for value in averages)


if __name__ == "__main__":
    main()
