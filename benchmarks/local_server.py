"""The same slice against a local model server with 1 and 4 slots, at pytest-lens's default settings.

A local server (llama.cpp's ``llama-server -np N``) generates N completions at once and queues the rest. This runs
``bm25`` on 6 questions of LENS scope 01 at 16k with ``--lens-agent=llm`` (no other LLM option: default
concurrency, max_tokens and timeout), the request cache off, as whole ``pytest`` commands, against:

- the project's test server (default): ``OpenAITestServer(slots=N, seconds_per_token=...)``, which generates one
  completion per slot with a per-token delay and says ``total_slots`` at ``/props`` like llama.cpp; a share of the
  agent's answers ramble to ``max_tokens`` (a small model that never stops by itself). Each slot caches the last
  prompt it read, as llama.cpp's do, and reads only what follows the cached prefix (``--seconds-per-prompt-token``
  per token read; the "prompt read" column counts them): interleaving two conversations on one slot makes it read
  each again. ``--silent`` leaves ``/props`` and ``/slots`` out (llama-cpp-python's server, Ollama: the capacity is
  unknown);
- a real ``llama-server`` (``--llama-server PATH --model GGUF``), started here for each slot count with ``-t 1``.

For each server it prints the wall time, requests sent against answers received, duplicates (the same request
body sent again: a retry), questions not measured, and the server's busy fraction (test server: time any slot was
generating; llama-server: share of ``/slots`` samples, every 0.5 s, with a slot processing). With 1 slot it also
runs ``--lens-concurrency=1``: concurrency must not be slower than one question at a time. ``--rounds R`` runs each
setting R times, alternating which goes first (on a shared machine a single pair is at the mercy of the load), and
prints the ratio of the total wall times.

    python benchmarks/local_server.py                                     # test server, 1 and 4 slots
    python benchmarks/local_server.py --silent                            # a server that does not say its slots
    python benchmarks/local_server.py --llama-server /path/llama-server --model SmolLM2-135M-Instruct.Q4_1.gguf

Never run in CI (a real server takes minutes per run on a CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json
from pytest_process import pytest_command

REPO = Path(__file__).resolve().parents[1]
SCOPE = Path("shared") / "datasets" / "lens" / "scope_01_with_distractors.json"
DEFAULT_DATASET = next((base / SCOPE for base in REPO.parents if (base / SCOPE).exists()), REPO.parent / SCOPE)
#: Six questions at the early checkpoints (18, 38, 58): each run ingests up to episode 58.
QUESTIONS = "q01_ or q02_ or q05_ or q09_ or q10_ or q13_"
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Row:
    server: str
    slots: int
    concurrency: str
    wall_s: float
    sent: int
    answered: int
    duplicates: int
    not_measured: int
    measured: int
    busy: float
    queued_s: float
    #: Prompt tokens the server read, not found in its slot's cache (the test server counts them; ``None``: unknown).
    prompt_read: int | None = None


def lens_command(args: argparse.Namespace, workdir: Path, base_url: str, model: str, extra: list[str]) -> list[str]:
    return pytest_command(
        "--lens-adapter=bm25",
        f"--lens-dataset={args.dataset}",
        "--lens-budget=16k",
        "--lens-agent=llm",
        f"--lens-agent-model={model}",
        f"--lens-llm-base-url={base_url}",
        "--lens-llm-cache-mode=off",
        f"--lens-json={workdir / 'run.json'}",
        "-k",
        QUESTIONS,
        *extra,
    )


def run_pytest(args: argparse.Namespace, base_url: str, model: str, extra: list[str]) -> tuple[float, dict[str, Any], str]:
    with tempfile.TemporaryDirectory(prefix="lens-local-server-") as tmp:
        workdir = Path(tmp)
        started = time.perf_counter()
        done = subprocess.run(
            lens_command(args, workdir, base_url, model, extra), cwd=workdir, capture_output=True, text=True, check=False, env=ENV
        )
        wall = time.perf_counter() - started
        if not (workdir / "run.json").exists():
            raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        artifact = read_artifact_json(workdir / "run.json")
    return wall, artifact, done.stdout + done.stderr


def summarise(server: str, slots: int, concurrency: str, wall: float, artifact: dict[str, Any], duplicates: int, busy: float) -> Row:
    results = artifact["results"]
    counts = (artifact["run"].get("llm") or {}).get("requests") or {}
    return Row(
        server=server,
        slots=slots,
        concurrency=concurrency,
        wall_s=wall,
        sent=int(counts.get("http_requests", 0)),
        answered=int(counts.get("cache_misses", 0)) - int(counts.get("failures", 0)),
        duplicates=duplicates,
        not_measured=sum(1 for r in results if r.get("not_measured")),
        measured=sum(1 for r in results if not r.get("not_measured") and not r.get("skipped")),
        busy=busy,
        queued_s=sum(float(r.get("queued_s", 0.0)) for r in results),
    )


def concurrency_modes(slots: int, round_: int = 0) -> list[tuple[str, list[str]]]:
    """pytest-lens's defaults; with one slot also one question at a time, which defaults must be no slower than.

    Odd rounds run them in the other order.
    """
    modes = [("default", [])] + ([("1", ["--lens-concurrency=1"])] if slots == 1 else [])
    return modes if round_ % 2 == 0 else modes[::-1]


def test_server_rows(args: argparse.Namespace) -> list[Row]:
    sys.path.insert(0, str(REPO / "src"))
    from lens_fixtures.openai_server import Fault, OpenAITestServer

    rows = []
    label = "test server" + (" (silent)" if args.silent else "")
    for slots in args.slots:
        for round_ in range(args.rounds):
            for name, extra in concurrency_modes(slots, round_):
                # A third of the agent's requests ramble to max_tokens; every token takes seconds_per_token in its slot.
                rambling = Fault("ramble", rate=args.ramble, only="agent", permanent=True)
                server = OpenAITestServer(
                    slots=slots,
                    seconds_per_token=args.seconds_per_token,
                    seconds_per_prompt_token=args.seconds_per_prompt_token,
                    faults=[rambling],
                    advertise_slots=not args.silent,
                )
                with server:
                    started = time.perf_counter()
                    wall, artifact, output = run_pytest(args, server.base_url, "scripted", extra)
                    busy = server.busy_fraction(started, time.perf_counter())
                    row = summarise(label, slots, name, wall, artifact, server.duplicates(), busy)
                    row.prompt_read = server.prompt_tokens_read
                    rows.append(row)
                    if args.show_output:
                        print(output)
    return rows


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def sample_slots(port: int, samples: list[bool], stop: threading.Event) -> None:
    """Every 0.5 s until ``stop``: whether any slot of the llama-server at ``port`` is processing."""
    while not stop.is_set():
        listed = _get(f"http://127.0.0.1:{port}/slots")
        if isinstance(listed, list):
            samples.append(any(slot.get("is_processing") for slot in listed))
        stop.wait(0.5)


def llama_rows(args: argparse.Namespace) -> list[Row]:
    rows = []
    for slots in args.slots:
        port = free_port()
        command = [
            args.llama_server,
            "-m",
            args.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-t",
            str(args.threads),
            "-np",
            str(slots),
            "-c",
            str(args.context * slots),
            "--jinja",
            *args.server_arg,
        ]
        with tempfile.TemporaryFile() as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 600
                while (_get(f"http://127.0.0.1:{port}/health") or {}).get("status") != "ok":
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        raise SystemExit(f"llama-server did not start:\n{log.read().decode(errors='replace')[-3000:]}")
                    time.sleep(1)
                for name, extra in [mode for round_ in range(args.rounds) for mode in concurrency_modes(slots, round_)]:
                    samples: list[bool] = []
                    stop = threading.Event()
                    sampler = threading.Thread(target=sample_slots, args=(port, samples, stop), daemon=True)
                    sampler.start()
                    wall, artifact, output = run_pytest(args, f"http://127.0.0.1:{port}/v1", "smollm2", extra)
                    stop.set()
                    sampler.join()
                    counts = (artifact["run"].get("llm") or {}).get("requests") or {}
                    duplicates = int(counts.get("http_requests", 0)) - int(counts.get("cache_misses", 0))  # every resend
                    busy = sum(samples) / len(samples) if samples else 0.0
                    rows.append(summarise("llama-server", slots, name, wall, artifact, duplicates, busy))
                    if args.show_output:
                        print(output)
            finally:
                process.terminate()
                process.wait(timeout=30)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--seconds-per-token", type=float, default=0.004, help="test server: generation time per token")
    parser.add_argument("--ramble", type=float, default=0.34, help="test server: share of agent requests that run to max_tokens")
    parser.add_argument(
        "--seconds-per-prompt-token", type=float, default=0.0005, help="test server: reading time per prompt token not cached"
    )
    parser.add_argument("--silent", action="store_true", help="test server: no /props or /slots")
    parser.add_argument("--rounds", type=int, default=1, help="run each setting this many times, alternating the order")
    parser.add_argument("--llama-server", help="a llama-server binary (scripts/build-llama-server.sh builds one)")
    parser.add_argument("--model", help="the GGUF file for --llama-server")
    parser.add_argument("--threads", type=int, default=1, help="llama-server -t")
    parser.add_argument("--context", type=int, default=16384, help="llama-server context per slot (-c is this times the slots)")
    parser.add_argument("--server-arg", action="append", default=[], help="one more llama-server argument (repeatable)")
    parser.add_argument("--show-output", action="store_true", help="print each pytest command's output")
    args = parser.parse_args()
    if not args.dataset.exists():
        raise SystemExit(f"no dataset at {args.dataset} (pass --dataset)")
    if args.llama_server and not args.model:
        raise SystemExit("--llama-server needs --model GGUF")
    rows = llama_rows(args) if args.llama_server else test_server_rows(args)
    load = os.getloadavg()
    print(f"bm25, 6 questions of LENS scope 01 at 16k, --lens-agent=llm, defaults; load averages {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    header = ("server", "slots", "concurrency", "wall s", "sent", "answers", "duplicates", "not measured", "measured", "busy", "queued s")
    print(" | ".join((*header, "prompt read")))
    for row in rows:
        print(
            f"{row.server} | {row.slots} | {row.concurrency} | {row.wall_s:.1f} | {row.sent} | {row.answered} | {row.duplicates} | "
            f"{row.not_measured} | {row.measured} | {row.busy:.0%} | {row.queued_s:.1f} | "
            + (f"{row.prompt_read:,}" if row.prompt_read is not None else "-")
        )
    for slots in args.slots:
        walls = {mode: sum(r.wall_s for r in rows if r.slots == slots and r.concurrency == mode) for mode in ("default", "1")}
        if walls["1"]:
            print(f"{slots} slot(s): default / concurrency 1 = {walls['default'] / walls['1']:.2f}x over {args.rounds} round(s)")


if __name__ == "__main__":
    main()
