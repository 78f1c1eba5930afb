"""Ingesting LENS V2-sized scopes: every reference adapter's per-call latency against its call timeout, and its
total ingest time against the bare embedding time of the same text (prints tables).

    python benchmarks/v2_ingest.py                                   # a generated 72 x 5,000-word scope, then scope 16
    python benchmarks/v2_ingest.py --episodes 40 --words 9000 --adapters sqlite-hybrid,cognis-hybrid
    python benchmarks/v2_ingest.py --skip-generated                  # the shared scope only
    python benchmarks/v2_ingest.py --embed-queue 512                 # A/B: embed only every 512 queued chunks

The generated scope is a LENS scope directory (the reference's V2 layout, read by pytest-lens's own loader): half
signal, half distractor episodes of chat lines ("[09:15] User: ..."), ~5,000 words each, ~360k words in all, the
size of the largest V2 scope. The shared one is ``../shared/datasets/lens-v2/16_parking_friction`` (40 episodes).

Each adapter is driven as a run drives it: through :class:`~pytest_lens.execution.calls.AdapterCaller` with the default
120 s call timeout, ``reset``, every episode ingested in stream order, ``prepare`` at each of the scope's
checkpoints, then one search. The embedding cache is off (every vector is computed, as in a first run on new
data) and the model is loaded before timing starts (its load time is printed apart). ``compaction`` runs against
the local OpenAI-compatible test server's scripted summariser: its figures are pytest-lens's side of the work,
not a model's. "encode s" is the time the model itself spent encoding that adapter's texts during the same
ingest (the adapter's ``embed_ms`` counter): the bare embedding time of the text it embeds, measured under the
same load, so "x encode" (total ingest / encode) is what the adapter adds around the model. ``--bare`` also times
MiniLM encoding every 100-word chunk of the scope in one call, apart (slow on a busy machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED_SCOPE = Path("shared") / "datasets" / "lens-v2" / "16_parking_friction"
DEFAULT_SHARED = next((base / SHARED_SCOPE for base in REPO.parents if (base / SHARED_SCOPE).exists()), REPO.parent / SHARED_SCOPE)
ADAPTERS = ["null", "bm25", "embedding", "sqlite-hybrid", "cognis-hybrid", "mem0", "compaction"]
#: Adapters whose chunk queue ``--embed-queue`` sets.
QUEUED = {"embedding", "sqlite-hybrid", "cognis-hybrid"}
TIMEOUT_S = 120.0
HEADERS = ["adapter", "ingest p50 ms", "p95 ms", "max ms", "prepare max ms", "slowest/timeout", "total s", "encode s", "x encode", "faults"]

_WORDS = (  # noqa: SIM905 (a paragraph reads better than 270 quoted words)
    "the a to and of in it for on that with is was this at my so be just have but can not do about what get like we if "
    "you they there one time out up all when me think going from know would really back some want need also could "
    "today tomorrow week weekend morning evening night later maybe sure okay thanks great sounds plan check send call "
    "meeting lunch dinner coffee friend team project deadline draft email report budget review update notes list order "
    "store market grocery recipe pasta salad soup bread cheese apples beans rice chicken salmon tofu spinach garlic "
    "apartment landlord lease package delivery couch lamp shelf paint kitchen window heater laundry neighbor hallway "
    "walk hike trail beach park museum concert movie show game tickets playlist podcast book chapter article photo "
    "train bus bike ride route map traffic bridge downtown station airport flight hotel trip bag jacket shoes umbrella "
    "rain fog sunny cold warm wind forecast early late noon hour minutes schedule calendar reminder alarm appointment "
    "doctor dentist gym class yoga run stretch water sleep tired busy calm happy stressed excited honest quick simple "
    "budgeting savings rent bill invoice refund receipt price cheap expensive discount coupon subscription account "
    "password app phone laptop charger screen update backup folder file share link message reply thread group chat"
).split()


def chat_text(rng: random.Random, words: int, day: int) -> str:
    """A chat transcript of about ``words`` words: short timestamped turns, as the V2 scopes' episodes are."""
    lines, count, minute = [], 0, 9 * 60
    while count < words:
        size = rng.randint(8, 40)
        speaker = "User" if len(lines) % 2 == 0 else "Assistant"
        text = " ".join(rng.choice(_WORDS) for _ in range(size))
        lines.append(f"[{minute // 60:02d}:{minute % 60:02d}] {speaker}: {text[0].upper()}{text[1:]} (day {day}).")
        count += size + 3
        minute += rng.randint(1, 4)
    return "\n".join(lines) + "\n"


def write_scope(root: Path, episodes: int, words: int, seed: int) -> Path:
    """A scope directory: ``episodes`` files (half signal, half distractor), questions at four checkpoints."""
    rng = random.Random(seed)
    directory = root / "99_v2_ingest_bench"
    folder = directory / "generated" / "episodes"
    folder.mkdir(parents=True)
    signal = (episodes + 1) // 2
    for ordinal in range(1, signal + 1):
        (folder / f"signal_{ordinal:03d}.txt").write_text(chat_text(rng, words, ordinal), encoding="utf-8")
    for ordinal in range(1, episodes - signal + 1):
        theme = ("errands", "cooking", "social")[ordinal % 3]
        (folder / f"distractor_{theme}_{ordinal:03d}.txt").write_text(chat_text(rng, words, ordinal), encoding="utf-8")
    spec = (
        "scope_id: v2_ingest_bench_99\ndomain: personal_assistant\n"
        f"episodes:\n  count: {signal}\n  timeline:\n    start: '2025-01-06'\n    interval: 2d\n"
        f"distractors:\n  count: {episodes - signal}\n"
    )
    (directory / "spec.yaml").write_text(spec, encoding="utf-8")
    checkpoints = sorted({max(1, signal * k // 4) for k in (1, 2, 3, 4)})
    questions = [
        {
            "question_id": f"bench_q{index:02d}",
            "scope_id": "v2_ingest_bench_99",
            "checkpoint_after": checkpoint,
            "question_type": "longitudinal",
            "prompt": "What did the user plan for the weekend?",
            "ground_truth": {"canonical_answer": "-", "key_facts": ["weekend"], "required_evidence_refs": []},
        }
        for index, checkpoint in enumerate(checkpoints, start=1)
    ]
    (directory / "generated" / "questions.json").write_text(json.dumps(questions, indent=1), encoding="utf-8")
    return directory


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else 0.0


@contextmanager
def summariser() -> Iterator[Any]:
    """The run's LLM client against the local test server (scripted summaries), for ``compaction``."""
    from lens_fixtures.openai_server import OpenAITestServer
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    with OpenAITestServer() as server, tempfile.TemporaryDirectory() as cache:
        endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_BENCH_UNUSED_KEY")
        yield ChatClient(endpoint, "scripted", cache=RequestCache(Path(cache) / "llm.sqlite", "off"), stats=LLMStats())


def build(name: str, storage: Path, lens_llm: Any, embed_queue: int | None) -> Any:
    from pytest_lens.contract.registry import accepts_keyword, load_adapter_class

    cls = load_adapter_class(name)
    options: dict[str, Any] = {"storage_dir": str(storage), "cache": False, "lens_llm": lens_llm}
    if embed_queue is not None and name in QUEUED:
        options["embed_queue"] = embed_queue
    return cls(**{key: value for key, value in options.items() if accepts_keyword(cls, key, via_kwargs=False)})


def drive(name: str, scope: Any, lens_llm: Any, embed_queue: int | None) -> dict[str, Any]:
    """Reset, ingest the whole stream (prepare at each checkpoint), search once; every call timed through AdapterCaller."""
    from pytest_lens.execution.calls import AdapterCaller, AdapterCallError

    ingest_s: list[float] = []
    prepare_s: list[float] = []
    faults: list[str] = []
    checkpoints = set(scope.checkpoints)
    with tempfile.TemporaryDirectory() as storage:
        caller = AdapterCaller(build(name, Path(storage), lens_llm, embed_queue), name, TIMEOUT_S)

        def call(what: list[float] | None, method: str, *args: Any) -> None:
            started = time.perf_counter()
            try:
                getattr(caller, method)(*args)
            except AdapterCallError as exc:
                faults.append(exc.fault.describe())
            if what is not None:
                what.append(time.perf_counter() - started)

        total = time.perf_counter()
        call(None, "reset", scope.scope_id)
        for position, episode in enumerate(scope.stream, start=1):
            call(ingest_s, "ingest", episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, episode.meta)
            if position in checkpoints:
                call(prepare_s, "prepare", scope.scope_id, position)
        total_s = time.perf_counter() - total
        try:
            stats = caller.stats()
        except AdapterCallError:
            stats = {}
        search = time.perf_counter()
        call(None, "search", "what did the user plan for the weekend", None, 10)
        search_s = time.perf_counter() - search
        caller.close()
    calls = ingest_s + prepare_s
    return {
        "ingest_p50": percentile(ingest_s, 0.5),
        "ingest_p95": percentile(ingest_s, 0.95),
        "ingest_max": max(ingest_s, default=0.0),
        "prepare_max": max(prepare_s, default=0.0),
        "slowest": max(calls, default=0.0),
        "total": total_s,
        "search": search_s,
        "embed_s": stats.get("embed_ms", 0) / 1000,
        "faults": faults,
    }


def bare_embedding(texts: list[str]) -> tuple[float, int]:
    """Seconds for the bare model to encode every 100-word chunk of ``texts`` in one call, and how many chunks."""
    from lens_fixtures.adapters.chunking import chunk_episode
    from pytest_lens.embedding import SentenceTransformerEmbedder

    chunks = [chunk.text for text in texts for chunk in chunk_episode(text, 100, 60)]
    model = SentenceTransformerEmbedder()
    started = time.perf_counter()
    model.encode(chunks)
    return time.perf_counter() - started, len(chunks)


def report(label: str, scope: Any, names: list[str], embed_queue: int | None, bare: bool) -> None:
    from pytest_lens.analysis.format import format_table

    texts = [episode.text for episode in scope.stream]
    words = sum(len(text.split()) for text in texts)
    bare_s, chunks = bare_embedding(texts) if bare else (0.0, 0)
    load = os.getloadavg()[0]
    longest = max(len(text.split()) for text in texts)
    print(f"\n{label}: {scope.scope_id}, {len(scope.stream)} episodes, {words:,} words (the longest {longest:,})")
    if chunks:
        print(f"bare MiniLM encode of its {chunks:,} chunks of <= 100 words, one call: {bare_s:.1f} s ({chunks / bare_s:.1f} chunks/s)")
    rows = []
    with summariser() as lens_llm:
        for name in names:
            found = drive(name, scope, lens_llm, embed_queue)
            rows.append(
                [
                    name,
                    f"{found['ingest_p50'] * 1000:,.0f}",
                    f"{found['ingest_p95'] * 1000:,.0f}",
                    f"{found['ingest_max'] * 1000:,.0f}",
                    f"{found['prepare_max'] * 1000:,.0f}",
                    f"{found['slowest'] / TIMEOUT_S:.1%}",
                    f"{found['total']:.1f}",
                    f"{found['embed_s']:.1f}",
                    f"{found['total'] / found['embed_s']:.2f}" if found["embed_s"] else "-",
                    str(len(found["faults"])),
                ]
            )
            for fault in found["faults"][:3]:
                print(f"  {fault}", file=sys.stderr)
            # Each adapter's figures as soon as they exist: a long run on a busy machine may not reach the table.
            print(f"  {name}: " + ", ".join(f"{h} {v}" for h, v in zip(HEADERS[1:], rows[-1][1:], strict=True)), flush=True)
    print("\n".join(format_table(HEADERS, rows, [False, *([True] * (len(HEADERS) - 1))])))
    queue = f"embed queue {embed_queue} chunks" if embed_queue is not None else "adapters' default embed queue"
    after = os.getloadavg()[0]
    print(f"(cache off, {queue}, call timeout {TIMEOUT_S:g} s; load average {load:.1f} -> {after:.1f} on {os.cpu_count()} cores)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=72, help="episodes of the generated scope (default 72)")
    parser.add_argument("--words", type=int, default=5000, help="words per generated episode (default 5,000)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="a real scope directory (default: the shared scope 16)")
    parser.add_argument("--skip-generated", action="store_true")
    parser.add_argument("--skip-shared", action="store_true")
    parser.add_argument("--embed-queue", type=int, default=None, help="chunks queued before embedding (default: the adapters')")
    parser.add_argument("--bare", action="store_true", help="also time the bare model encoding the scope's chunks in one call")
    args = parser.parse_args(argv)
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = [name for name in args.adapters.split(",") if name]
    if "mem0" in names and importlib.util.find_spec("mem0") is None:
        print("mem0: skipped (pip install 'pytest-lens[mem0]')")
        names.remove("mem0")

    from pytest_lens.datasets import load_dataset
    from pytest_lens.embedding import SentenceTransformerEmbedder

    started = time.perf_counter()
    SentenceTransformerEmbedder().encode(["load the model before anything is timed"])
    print(f"MiniLM loaded in {time.perf_counter() - started:.1f} s (once per process; not in the figures below)")
    if not args.skip_generated:
        with tempfile.TemporaryDirectory() as root:
            directory = write_scope(Path(root), args.episodes, args.words, args.seed)
            (scope,) = load_dataset(directory).scopes
            report("generated V2-sized scope", scope, names, args.embed_queue, args.bare)
    if not args.skip_shared:
        if not (args.shared / "spec.yaml").exists():
            print(f"\nshared scope: not found at {args.shared} (--shared DIR)")
        else:
            (scope,) = load_dataset(args.shared).scopes
            report("shared scope", scope, names, args.embed_queue, args.bare)


if __name__ == "__main__":
    main()
