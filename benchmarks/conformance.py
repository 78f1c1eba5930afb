"""Runtime of the conformance suite per adapter (prints a table; not a test).

    python benchmarks/conformance.py                      # every registered adapter, the example and faceted ones
    python benchmarks/conformance.py --adapter bm25 --profile thorough
    python benchmarks/conformance.py --cold               # adapters with an embedding cache start from an empty one
    python benchmarks/conformance.py --adapter mem0-extract --scripted-model --examples 3   # an LLM-built memory

``--scripted-model`` gives adapters that need a model (``lens_llm``: mem0-extract, graphiti, cognee, letta,
graphrag-light, hierarchical) the project's OpenAI-compatible server on 127.0.0.1, scripted to answer their
extraction and summary prompts with well-formed replies built from the input (as in CI); their embedder is their
default, the offline MiniLM. ``--model-url URL --model NAME`` gives them a real OpenAI-compatible endpoint instead
(e.g. a local ``llama-server``; ``--call-timeout`` raises the 120 s per adapter call a slow model needs).
``--examples N`` runs N examples per clause, derandomized, without shrinking; ``--clause`` picks clauses.

Runs every clause through the core API (no pytest), as ``pytest --lens-adapter=A --lens-conformance``
does, and reports per adapter: clauses passed / failed / not applicable, examples, adapter
instances built, wall time, the slowest clause, and every failure message.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pytest_lens.analysis.format import format_table
from pytest_lens.conformance.catalog import select_clauses
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from pytest_lens.contract.registry import accepts_keyword, load_adapter_class, registered_adapters
from pytest_lens.records.settings import AdapterSpec, parse_option_value

EXTRA = ["examples.my_memory:DictMemory", "lens_fixtures.adapters.faceted:FacetedMemory"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", action="append", help="registered name or module:Class (repeatable; default: all)")
    parser.add_argument("--profile", default="ci", help="ci (default), dev, thorough or a registered hypothesis profile")
    parser.add_argument("--cold", action="store_true", help="give adapters taking cache_dir an empty embedding cache")
    parser.add_argument("--scripted-model", action="store_true", help="serve lens_llm from the project's scripted server")
    parser.add_argument("--model-url", help="serve lens_llm from this OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1)")
    parser.add_argument("--model", default="default", help="the model name sent to --model-url")
    parser.add_argument("--call-timeout", type=float, default=120.0, help="seconds per adapter call (120)")
    parser.add_argument("--examples", type=int, help="examples per clause (a profile of its own, in place of --profile)")
    parser.add_argument("--clause", action="append", help="a clause id or prefix (repeatable; default: the whole catalogue)")
    parser.add_argument("--adapter-option", action="append", default=[], metavar="KEY=VALUE", help="an adapter option (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parents[1]))  # for examples.my_memory
    targets = args.adapter or [*sorted(registered_adapters()), *EXTRA]
    profile = args.profile if args.examples is None else examples_profile(args.examples)
    rows: list[list[str]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lens-conformance-bench-") as tmp, ExitStack() as stack:
        lens_llm = None
        if args.scripted_model:
            lens_llm = stack.enter_context(scripted_model(Path(tmp)))
        elif args.model_url:
            lens_llm = model_client(args.model_url, args.model, Path(tmp))
        for target in targets:
            options: dict[str, object] = {
                key: parse_option_value(value) for key, _, value in (o.partition("=") for o in args.adapter_option)
            }
            if args.cold and accepts_keyword(load_adapter_class(target), "cache_dir", via_kwargs=False):
                options["cache_dir"] = str(Path(tmp) / f"cache-{len(rows)}")
            spec = AdapterSpec(target.rpartition(":")[2] or target, target, options)
            started = time.perf_counter()
            factory = SubjectFactory(spec, Path(tmp) / "storage", call_timeout=args.call_timeout, lens_llm=lens_llm)
            outcomes = []
            for clause in select_clauses(args.clause):
                outcome = verify_clause(clause, factory, ConformanceConfig(profile))
                outcomes.append(outcome)
                print(f"  {spec.label} {clause.id}: {outcome.status} ({outcome.duration_s:.1f} s)", file=sys.stderr, flush=True)
            wall = time.perf_counter() - started
            slowest = max(outcomes, key=lambda o: o.duration_s)
            count = {status: sum(o.status == status for o in outcomes) for status in ("passed", "failed", "not_applicable")}
            rows.append(
                [
                    spec.label,
                    str(count["passed"]),
                    str(count["failed"]),
                    str(count["not_applicable"]),
                    f"{sum(o.examples for o in outcomes):,}",
                    f"{sum(o.instances for o in outcomes):,}",
                    f"{wall:.1f}",
                    f"{slowest.clause} {slowest.duration_s:.1f} s",
                ]
            )
            failures.extend(o.message for o in outcomes if o.failed)
            print(f"{spec.label}: {wall:.1f} s", file=sys.stderr, flush=True)
    model = ", the scripted model" if args.scripted_model else f", model {args.model} at {args.model_url}" if args.model_url else ""
    print(f"conformance suite, hypothesis profile {profile}{', cold embedding cache' if args.cold else ''}{model}\n")
    headers = ["adapter", "passed", "failed", "n/a", "examples", "instances", "wall s", "slowest clause"]
    print("\n".join(format_table(headers, rows, [False, True, True, True, True, True, True, False])))
    for message in failures:
        print("\n" + message)
    return 1 if failures else 0


def examples_profile(examples: int) -> str:
    """A hypothesis profile of ``examples`` examples per clause: derandomized, no deadline, no shrinking."""
    from hypothesis import HealthCheck, Phase, settings

    name = f"bench-{examples}"
    settings.register_profile(
        name,
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    return name


def model_client(url: str, model: str, root: Path) -> Any:
    """A chat client for ``model`` at ``url``, without retries (a slow local model is not a flaky one)."""
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.settings import DEFAULT_API_KEY_ENV
    from pytest_lens.llm.stats import LLMStats

    endpoint = LLMEndpoint(url, api_key_env=DEFAULT_API_KEY_ENV, retries=0, timeout_s=3600)
    return ChatClient(endpoint, model, cache=RequestCache(root / "cache.sqlite", "off"), stats=LLMStats())


@contextmanager
def scripted_model(root: Path) -> Iterator[Any]:
    """A chat client on the project's scripted OpenAI-compatible server (every LLM-built memory's prompts answered)."""
    from lens_fixtures.openai_server import LensPolicy, OpenAITestServer
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    with OpenAITestServer(LensPolicy()) as server:
        endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY")
        yield ChatClient(endpoint, "scripted", cache=RequestCache(root / "cache.sqlite", "off"), stats=LLMStats())
        print(f"scripted model: {server.count()} requests", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
