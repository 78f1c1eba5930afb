"""What each retrieval reference costs per question on LoCoMo, cold and warm, beside the encoder's own floor.

    python benchmarks/references.py --dataset locomo.json                     # the five references
    python benchmarks/references.py --dataset locomo.json --adapters embedding --vs-spin

``--dataset`` is a LoCoMo file written by ``lens import locomo`` (all of it, or the first conversations of
it). Each adapter runs as a whole ``pytest`` LENS command (offline agent, 16k, the plugins a LENS run does not need
left out) with a fresh embedding cache (``LENS_CACHE_DIR``): "cold" meets an empty cache, every chunk and query
encoded; "warm" is the same command again, every vector from the cache (the model never loaded). Adapters that embed
nothing run once. The columns: wall and CPU seconds of the command (user + system, children's), per question, the
texts the adapter encoded (its cache misses) and the seconds it spent encoding them.

The floor is the encoder's own cost for those texts, measured in a process of its own with the bare model loaded
and warmed: the distinct chunks of the run's episodes encoded in batches of 32 (the adapters' queue) and the distinct
queries of the run's searches one at a time, as the agent asks them. "cold - warm" is what the cold cache added to
the command; "/ floor" divides it by the floor (the target is at most 1.2), in wall and in CPU seconds (the cold run's
CPU includes loading the model, which the floor's does not; on a shared machine the CPU ratio is the steadier).

``--vs-spin`` also runs each embedding adapter's cold command with ``OMP_WAIT_POLICY=ACTIVE``: torch's
threads spinning between operations, what every run did before pytest-lens set them to wait passively.

The machine may be shared: the load averages are printed; compare ratios from one invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REFERENCES = ["null", "random", "bm25", "embedding", "sqlite-hybrid"]
#: Chunk sizes (max, min words) of the adapters that embed, as their defaults chunk episodes.
CHUNKING = {"embedding": (100, 60), "sqlite-hybrid": (150, 60)}
QUEUE = 32

FLOOR = """
import json, sys, time
from lens_fixtures.adapters.chunking import chunk_episode
from pytest_lens.embedding import SentenceTransformerEmbedder
dataset, rows, most, least, QUEUE = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
document = json.load(open(dataset))
texts = [e["text"] for s in document["scopes"] for e in s["episodes"]]
chunks = list(dict.fromkeys(c.text for t in texts for c in chunk_episode(t, most, least)))
queries = []
for line in open(rows):
    queries += [c["arguments"]["query"] for c in json.loads(line)["tool_calls"] if c["name"] == "memory_search"]
queries = list(dict.fromkeys(q for q in queries if q.strip()))
model = SentenceTransformerEmbedder()
model.encode(["warm up the model"])
wall, cpu = time.perf_counter(), time.process_time()
for start in range(0, len(chunks), QUEUE):
    model.encode(chunks[start : start + QUEUE])
for query in queries:
    model.encode([query])
print(json.dumps({"chunks": len(chunks), "queries": len(queries), "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""


def _environment(cache: Path, spin: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "PYTHONDONTWRITEBYTECODE")}
    env["LENS_CACHE_DIR"] = str(cache)
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env | ({"OMP_WAIT_POLICY": "ACTIVE"} if spin else {})


def run_lens(adapter: str, dataset: Path, workdir: Path, cache: Path, name: str, spin: bool = False) -> dict[str, Any]:
    """One pytest LENS command: wall, CPU, questions and the adapter's embedding counters."""
    artifact = workdir / f"{name.replace(', ', '-')}.json"
    command = [
        sys.executable, "-m", "pytest", "-q", "-m", "lens", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
        "-p", "no:xdist", "-p", "no:anyio", f"--lens-adapter={adapter}", f"--lens-dataset={dataset}",
        "--lens-budget=16k", f"--lens-json={artifact}",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=workdir, env=_environment(cache, spin), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{adapter} {name}: pytest exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    document = json.loads(artifact.read_text())
    summaries = [by_adapter[adapter] for by_adapter in document["suite_summaries"].values() if adapter in by_adapter]
    stats = summaries[0].get("adapter_stats", {}) if summaries else {}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    questions = sum(s["n_questions"] for s in summaries)
    return {"name": name, "wall": wall, "cpu": cpu, "questions": questions, "stats": stats, "rows": artifact.with_suffix(".rows.jsonl")}


def floor(adapter: str, dataset: Path, rows: Path) -> dict[str, Any]:
    """The bare model's seconds for the run's distinct chunks (batches of 32) and queries (one at a time)."""
    most, least = CHUNKING[adapter]
    with tempfile.TemporaryDirectory(prefix="lens-floor-") as cache:
        command = [sys.executable, "-c", FLOOR, str(dataset), str(rows), str(most), str(least), str(QUEUE)]
        done = subprocess.run(command, env=_environment(Path(cache), spin=False), capture_output=True, text=True, check=True)
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def row(adapter: str, run: dict[str, Any], warm: dict[str, Any] | None, bottom: dict[str, Any] | None) -> list[str]:
    per_question = 1000 * run["wall"] / max(1, run["questions"])
    cpu_per_question = 1000 * run["cpu"] / max(1, run["questions"])
    stats = run["stats"]
    cells = [adapter, run["name"], str(run["questions"]), f"{run['wall']:.1f}", f"{run['cpu']:.1f}", f"{per_question:.0f}"]
    encode_s = f"{stats['embed_ms'] / 1000:.1f}" if "embed_ms" in stats else "-"
    cells += [f"{cpu_per_question:.0f}", str(stats.get("embed_cache_misses", "-")), encode_s]
    if warm is None or bottom is None:
        return [*cells, "-", "-", "-", "-", "-", "-"]
    added = run["wall"] - warm["wall"]
    cells += [f"{added:.1f}", f"{bottom['wall']:.1f} ({bottom['cpu']:.1f} CPU)", f"{bottom['chunks']}+{bottom['queries']}"]
    added_cpu = run["cpu"] - warm["cpu"]
    return [*cells, f"{added / bottom['wall']:.2f}", f"{added_cpu:.1f}", f"{added_cpu / bottom['cpu']:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True, help="a LoCoMo file written by `lens import locomo`")
    parser.add_argument("--adapters", default=",".join(REFERENCES))
    parser.add_argument("--vs-spin", action="store_true", help="also the embedding adapters' cold run with OMP_WAIT_POLICY=ACTIVE")
    args = parser.parse_args()
    dataset = args.dataset.resolve()
    print(f"{dataset.name}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, {os.cpu_count()} CPU(s)", flush=True)
    headers = ["adapter", "run", "questions", "wall s", "CPU s", "ms/q", "CPU ms/q", "encoded", "encode s"]
    headers += ["cold - warm s", "floor s", "texts", "/ floor", "cold - warm CPU s", "/ floor CPU"]
    table: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="lens-references-") as tmp:
        for adapter in args.adapters.split(","):
            workdir = Path(tmp) / adapter
            workdir.mkdir()
            if adapter not in CHUNKING:
                table.append(row(adapter, run_lens(adapter, dataset, workdir, workdir / "cache", "run"), None, None))
                print("  ".join(table[-1]), flush=True)
                continue
            cold = run_lens(adapter, dataset, workdir, workdir / "cache", "cold")
            warm = run_lens(adapter, dataset, workdir, workdir / "cache", "warm")
            bottom = floor(adapter, dataset, cold["rows"])
            runs = [row(adapter, cold, warm, bottom), row(adapter, warm, None, None)]
            if args.vs_spin:
                spinning = run_lens(adapter, dataset, workdir, workdir / "cache-spinning", "cold, spinning", spin=True)
                runs.insert(0, row(adapter, spinning, warm, bottom))
            print("\n".join("  ".join(cells) for cells in runs), flush=True)
            table += runs
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    from pytest_lens.analysis.format import format_table

    print("\n".join(format_table(headers, table, [False, False, *([True] * (len(headers) - 2))])))


if __name__ == "__main__":
    main()
