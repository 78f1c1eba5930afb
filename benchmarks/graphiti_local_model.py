"""Graphiti on a real local model: ingest the first episodes of a dataset, then search for a few of its questions.

Streams the first ``--episodes`` episodes of the dataset's first scope through the ``graphiti`` adapter (each one
``Graphiti.add_episode``) with a running OpenAI-compatible server as its model (e.g. ``llama-server`` with
SmolLM2-135M, see docs/systems/graphiti.md) and the offline MiniLM, every request through a request cache
(``--cache``, recorded; ``--replay`` rebuilds the same graph from it with no request). Prints, per episode: the
wall time of ``ingest``, Graphiti's requests and tokens, the entities and facts it returned, and the fault (the
adapter's message) where there was one; then, for up to 4 questions whose evidence was ingested, the refs search
returns against the refs the question needs.

    python benchmarks/graphiti_local_model.py --base-url http://127.0.0.1:18931/v1 --model smollm2-135m --episodes 3

Never run in CI (minutes per episode on a CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from lens_fixtures.adapters.graphiti_memory import GraphitiAdapter
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--dataset", type=Path, default=REPO / "examples" / "cold_chain_demo.json")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("graphiti-local-model.sqlite"))
    parser.add_argument("--replay", action="store_true", help="replay the cache: no request")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one request may take")
    parser.add_argument("--max-tokens", type=int, default=1024, help="the most one Graphiti request may generate")
    parser.add_argument("--structured-output", default="json_schema", choices=["json_schema", "json_object"])
    args = parser.parse_args()
    # A key no prompt contains: the key is masked out of requests once read, cache keys included.
    os.environ.setdefault("LENS_LOCAL_MODEL_KEY", "lens-local-model-no-key")

    data = json.loads(args.dataset.read_text())
    scope = data["scopes"][0]
    episodes = scope["episodes"][: args.episodes]
    endpoint = LLMEndpoint(args.base_url, api_key_env="LENS_LOCAL_MODEL_KEY", timeout_s=args.timeout, retries=0)
    stats = LLMStats()
    llm = ChatClient(endpoint, args.model, cache=RequestCache(args.cache, "replay" if args.replay else "record"), stats=stats)
    with tempfile.TemporaryDirectory(prefix="graphiti-local-") as storage:
        adapter = GraphitiAdapter(storage, lens_llm=llm, extraction_max_tokens=args.max_tokens, structured_output=args.structured_output)
        adapter.reset(scope["scope_id"])
        print("| episode | chars | ingest s | requests | prompt tokens | completion tokens | entities | facts | fault |")
        print("|---|---|---|---|---|---|---|---|---|")
        for episode in episodes:
            before = adapter.lens_stats()
            started = time.perf_counter()
            fault = ""
            try:
                adapter.ingest(episode["episode_id"], scope["scope_id"], episode["timestamp"], episode["text"])
            except Exception as exc:  # reported, as the run would record it
                fault = f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
            seconds = time.perf_counter() - started
            after = adapter.lens_stats()
            delta = {key: after[key] - before.get(key, 0) for key in after}
            print(
                f"| {episode['episode_id']} | {len(episode['text'])} | {seconds:.1f} | {delta['extraction_calls']} | "
                f"{delta['extraction_prompt_tokens']} | {delta['extraction_completion_tokens']} | {delta['entities']} | {delta['facts']} | "
                f"{fault or '-'} |",
                flush=True,
            )
        print()
        held = {episode["episode_id"] for episode in episodes}
        questions = [q for q in data["questions"] if set(q["ground_truth"].get("required_evidence_refs") or ["-"]) <= held]
        for question in questions[:4]:  # those whose evidence was ingested (the checkpoint may lie later)
            started = time.perf_counter()
            hits = adapter.search(question["prompt"], None, 5)
            needed = question["ground_truth"].get("required_evidence_refs", [])
            print(f"{question['question_id']}: needs {needed}; search ({(time.perf_counter() - started) * 1000:.0f} ms) returned")
            for hit in hits:
                print(f"  {hit.ref_id} {hit.score}: {' | '.join(hit.text.splitlines()[:3])[:160]}")
        print()
        print(f"adapter stats: {adapter.lens_stats()}")
        adapter.close()


if __name__ == "__main__":
    main()
