"""The conformance catalogue against Letta: every clause, one Letta server for all examples (prints a table).

    python benchmarks/letta_conformance.py --server .venv-letta-server/bin/letta            # archival memory, 6 examples
    python benchmarks/letta_conformance.py --server ... --memorize --examples 3             # the agent writes core memory

``pytest --lens-adapter=letta --lens-conformance`` starts a Letta server (35-45 s) for every example; here one
server is started and each example creates and deletes its own agent on it (``server_url``), which is what the
clauses are about. The model is the project's scripted server (its Letta role makes the memory-tool calls Letta
asks for), the embedder the hashing one from the tests: the run needs no model download and no network.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("LENS_LETTA_SERVER"), help="the letta command (default: LENS_LETTA_SERVER)")
    parser.add_argument("--examples", type=int, default=6, help="examples per clause (6)")
    parser.add_argument("--memorize", action="store_true", help="letta-memorize: also send each episode to the agent")
    args = parser.parse_args()
    if not args.server:
        parser.error("name the Letta server's letta command with --server or LENS_LETTA_SERVER (docs/systems/letta.md)")
    sys.path.insert(0, str(REPO))  # the tests' hashing embedder
    from hypothesis import HealthCheck, Phase, settings
    from tests.unit.lens_fixtures.conftest import HashingEmbedder

    from lens_fixtures.adapters.letta_memory import LettaServer
    from lens_fixtures.openai_server import OpenAITestServer
    from pytest_lens.conformance import CLAUSES, ConformanceConfig, SubjectFactory, verify_clause
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats
    from pytest_lens.records.settings import AdapterSpec

    settings.register_profile(
        "letta-bench",
        max_examples=args.examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    failed = 0
    with tempfile.TemporaryDirectory(prefix="lens-letta-conformance-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        letta = LettaServer(args.server, root / "server")
        print(f"letta server up in {time.perf_counter() - started:.1f} s", flush=True)
        try:
            with OpenAITestServer() as model:
                endpoint = LLMEndpoint(model.base_url, api_key_env="LENS_TEST_KEY")
                llm = ChatClient(endpoint, "scripted", cache=RequestCache(root / "cache.sqlite", "off"), stats=LLMStats())
                options = {"server_url": letta.url, "embedder": HashingEmbedder()}
                target = "letta_memorize:LettaMemorizeAdapter" if args.memorize else "letta_memory:LettaAdapter"
                spec = AdapterSpec("letta", f"lens_fixtures.adapters.{target}", options)
                factory = SubjectFactory(spec, root / "s", lens_llm=llm)
                mode = "memorize" if args.memorize else "archival only"
                print(f"| clause | {mode} ({args.examples} examples) |\n|---|---|", flush=True)
                for clause in CLAUSES:
                    clause_started = time.perf_counter()
                    outcome = verify_clause(clause, factory, ConformanceConfig(profile="letta-bench"))
                    failed += outcome.status == "failed"
                    status = outcome.status.replace("_", " ")
                    if outcome.status == "failed":
                        status += ": " + " ".join(outcome.message.split())[:400]
                    print(f"| {clause.id} | {status} ({time.perf_counter() - clause_started:.1f} s) |", flush=True)
                print(f"model requests: {model.count()}; {time.perf_counter() - started:.0f} s in all")
        finally:
            letta.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
