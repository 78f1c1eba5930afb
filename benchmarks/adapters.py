"""Throughput and latency of the reference adapters, and the embedding floor (prints tables).

    python benchmarks/adapters.py                       # everything (about 15-30 minutes on 2 cores)
    python benchmarks/adapters.py --sizes 120,1000 --adapters bm25,sqlite-hybrid --skip-rerun

Streams are the public LENS scope (``../shared/datasets/lens/scope_01_with_distractors.json``,
or ``--dataset``) replicated with new ids to 1,000 and 10,000 episodes. The replicas repeat
the scope's texts, so beyond the first 120 episodes every embedding is a cache hit: the
"ingest" columns measure the adapters' own work with a warm cache (ingest of every episode
plus ``prepare``, which embeds queued chunks), and the cold cost of embedding is measured
separately at 120 episodes against the bare model ("embedding floor"). Search latency is
over the scope's 24 questions (3 passes); the first pass, which must embed each question,
is reported as "cold query p50".

The last section times a whole ``pytest`` LENS run of sqlite-hybrid on the scope twice with
a fresh embedding cache: cold (model loaded, every chunk embedded) and warm (every vector
from the cache, the model never loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCOPE = Path("shared") / "datasets" / "lens" / "scope_01_with_distractors.json"
# ../shared beside the repository (a worktree may sit one level deeper).
DEFAULT_DATASET = next((base / SCOPE for base in REPO.parents if (base / SCOPE).exists()), REPO.parent / SCOPE)
ADAPTERS = ["bm25", "embedding", "sqlite-hybrid", "cognis-hybrid", "mem0"]


def load_scope(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    data = json.loads(path.read_text())
    scope = data["scopes"][0]
    return scope["episodes"], [question["prompt"] for question in data["questions"]]


def replicate(episodes: list[dict[str, Any]], size: int) -> list[tuple[str, str, str]]:
    """``size`` episodes: the scope's, then copies with new ids and later timestamps."""
    stream = []
    span = timedelta(days=60)
    for index in range(size):
        copy, position = divmod(index, len(episodes))
        episode = episodes[position]
        moment = datetime.fromisoformat(episode["timestamp"]) + copy * span
        ref = episode["episode_id"] if copy == 0 else f"{episode['episode_id']}~r{copy}"
        stream.append((ref, moment.isoformat(), episode["text"]))
    return stream


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def make_adapter(name: str, storage: Path, **options: Any) -> Any:
    from pytest_lens.contract.registry import accepts_keyword, load_adapter_class

    cls = load_adapter_class(name)
    if accepts_keyword(cls, "storage_dir", via_kwargs=False):
        options["storage_dir"] = str(storage)
    return cls(**{key: value for key, value in options.items() if accepts_keyword(cls, key)})


def measure(name: str, stream: list[tuple[str, str, str]], questions: list[str], passes: int = 3) -> dict[str, float]:
    """Ingest (plus prepare) the stream, then time ``passes`` rounds of the questions (the first round warms up)."""
    with tempfile.TemporaryDirectory() as storage:
        adapter = make_adapter(name, Path(storage))
        adapter.reset("bench")
        started = time.perf_counter()
        for ref, timestamp, text in stream:
            adapter.ingest(ref, "bench", timestamp, text, {})
        if hasattr(adapter, "prepare"):
            adapter.prepare("bench", len(stream))
        ingest_s = time.perf_counter() - started
        latencies, cpu = [], []
        for round_ in range(passes):
            for question in questions:
                started, started_cpu = time.perf_counter(), time.process_time()
                results = adapter.search(question, None, 10)
                if round_ or passes == 1:
                    latencies.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - started_cpu)
                assert len(results) <= 10
        if hasattr(adapter, "close"):
            adapter.close()
    return {
        "ingest_s": ingest_s,
        "episodes_per_s": len(stream) / ingest_s,
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "cpu_p50_ms": percentile(cpu, 0.5) * 1000,
    }


def query_encode_ms(questions: list[str]) -> float:
    """Median time for MiniLM to embed one question (what a query not yet in the cache adds to a search)."""
    from pytest_lens.embedding import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()
    model.encode(["warm up the model"])
    times = []
    for question in questions:
        started = time.perf_counter()
        model.encode([question])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def floor(episodes: list[dict[str, Any]], repeats: int) -> dict[str, float]:
    """sqlite-hybrid's cold ingest (cache off) vs the bare model embedding the same chunks."""
    from lens_fixtures.adapters.chunking import chunk_episode
    from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
    from pytest_lens.embedding import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()
    model.encode(["warm up the model"])
    chunks = [chunk.text for episode in episodes for chunk in chunk_episode(episode["text"], 100, 60)]
    bare_times, hybrid_times = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        model.encode(chunks)
        bare_times.append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as storage:
            adapter = SQLiteHybridAdapter(storage_dir=storage, cache=False)
            adapter.reset("bench")
            started = time.perf_counter()
            for episode in episodes:
                adapter.ingest(episode["episode_id"], "bench", episode["timestamp"], episode["text"], {})
            adapter.prepare("bench", len(episodes))
            hybrid_times.append(time.perf_counter() - started)
            adapter.close()
    bare, hybrid = statistics.median(bare_times), statistics.median(hybrid_times)
    return {"chunks": len(chunks), "bare_s": bare, "hybrid_s": hybrid, "ratio": hybrid / bare, "chunks_per_s": len(chunks) / bare}


def rerun(dataset: Path) -> dict[str, float]:
    """Wall time of the same pytest LENS run with a cold, then a warm, embedding cache."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as workdir:
        env = {**os.environ, "LENS_CACHE_DIR": cache}
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--lens-adapter=sqlite-hybrid", f"--lens-dataset={dataset}", "--lens-budget=16k", "--lens-json=run.json",
        ]  # fmt: skip
        times = []
        for _ in range(2):
            started = time.perf_counter()
            subprocess.run(command, cwd=workdir, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - started)
            stats = json.loads((Path(workdir) / "run.json").read_text())["summary"]["sqlite-hybrid"]["adapter_stats"]
            times.append(stats)  # type: ignore[arg-type]
    cold_s, cold_stats, warm_s, warm_stats = times
    return {"cold_s": cold_s, "warm_s": warm_s, "ratio": cold_s / warm_s, "cold": cold_stats, "warm": warm_stats}  # type: ignore[dict-item]


def table(headers: list[str], rows: list[list[str]]) -> str:
    from pytest_lens.analysis.format import format_table

    return "\n".join(format_table(headers, rows, [False, *([True] * (len(headers) - 1))]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--sizes", default="120,1000,10000")
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of the embedding-floor measurement (median)")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--skip-rerun", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    episodes, questions = load_scope(args.dataset)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = [name for name in args.adapters.split(",") if name]
    if "mem0" in names:
        import importlib.util

        if importlib.util.find_spec("mem0") is None:
            print("mem0: skipped (pip install 'pytest-lens[mem0]')")
            names.remove("mem0")

    with tempfile.TemporaryDirectory() as cache:
        os.environ["LENS_CACHE_DIR"] = cache  # a private cache: cold for the first 120 episodes, warm after
        print(f"dataset: {args.dataset.name} ({len(episodes)} episodes, {len(questions)} questions); machine: {os.cpu_count()} cores")
        if not args.skip_floor:
            result = floor(episodes, args.repeats)
            print("\nembedding floor at 120 episodes (cache off, model loaded, median of", args.repeats, "runs):")
            print(
                table(
                    ["what", "chunks", "seconds", "chunks/s", "x bare"],
                    [
                        [
                            "bare MiniLM encode of the chunks",
                            str(result["chunks"]),
                            f"{result['bare_s']:.2f}",
                            f"{result['chunks_per_s']:.1f}",
                            "1.00",
                        ],
                        [
                            "sqlite-hybrid ingest + prepare",
                            str(result["chunks"]),
                            f"{result['hybrid_s']:.2f}",
                            "",
                            f"{result['ratio']:.2f}",
                        ],
                    ],
                )
            )
        rows = []
        for name in names:
            measure(name, replicate(episodes, len(episodes)), questions, passes=1)  # fills the cache: every run below is warm
            for size in sizes:
                stream = replicate(episodes, size)
                started = time.perf_counter()
                result = measure(name, stream, questions)
                rows.append(
                    [
                        name,
                        f"{size:,}",
                        f"{result['episodes_per_s']:,.0f}",
                        f"{result['ingest_s']:.2f}",
                        f"{result['p50_ms']:.1f}",
                        f"{result['p99_ms']:.1f}",
                        f"{result['cpu_p50_ms']:.1f}",
                    ]
                )
                print(f"  measured {name} at {size:,} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        print("\ningest (warm embedding cache; ingest + prepare) and search latency (limit 10, query vectors cached):")
        print(table(["adapter", "episodes", "ingest ep/s", "ingest s", "search p50 ms", "search p99 ms", "search cpu p50 ms"], rows))
        load = os.getloadavg()[0]
        print(f"(wall-clock times; cpu = process CPU time per search, all threads; load average {load:.1f} on {os.cpu_count()} cores)")
        if any(name != "bm25" for name in names):
            print(f"a question not yet in the embedding cache adds one MiniLM encode: median {query_encode_ms(questions):.1f} ms")
    if not args.skip_rerun:
        result = rerun(args.dataset)
        print("\nwhole LENS run of sqlite-hybrid on the scope (pytest, 16k, offline agent), fresh cache:")
        print(
            table(
                ["run", "wall s", "cache hits", "cache misses"],
                [
                    ["cold", f"{result['cold_s']:.1f}", str(result["cold"]["embed_cache_hits"]), str(result["cold"]["embed_cache_misses"])],  # type: ignore[index]
                    ["warm", f"{result['warm_s']:.1f}", str(result["warm"]["embed_cache_hits"]), str(result["warm"]["embed_cache_misses"])],  # type: ignore[index]
                ],
            )
        )
        print(f"warm rerun is {result['ratio']:.1f}x faster than the cold run")


if __name__ == "__main__":
    main()
