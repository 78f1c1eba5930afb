"""Start the scripted OpenAI-compatible server on its own, to try pytest-lens or a memory system without a model.

    python -m lens_fixtures.openai_server                         # http://127.0.0.1:8090/v1, every role scripted
    python -m lens_fixtures.openai_server --port 0                # any free port (printed)
    python -m lens_fixtures.openai_server --empty-extraction      # memory-building requests extract nothing

Then point a run at it: ``pytest --lens-llm-base-url=http://127.0.0.1:8090/v1 --lens-agent=llm
--lens-agent-model=scripted ...`` (any model name; no key is checked). It serves until interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import threading

from lens_fixtures.openai_server.empty import EmptyExtractionPolicy
from lens_fixtures.openai_server.policies import LensPolicy
from lens_fixtures.openai_server.server import OpenAITestServer


def main(argv: list[str] | None = None) -> None:
    """Parse the options, serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m lens_fixtures.openai_server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8090, help="the port (0: any free one; default 8090)")
    parser.add_argument(
        "--empty-extraction",
        action="store_true",
        help="answer every memory-building request (extraction, summaries, a Letta agent's memory step) well formed and empty",
    )
    args = parser.parse_args(argv)
    policy = EmptyExtractionPolicy(base=LensPolicy()) if args.empty_extraction else LensPolicy()
    try:
        server = OpenAITestServer(policy, host=args.host, port=args.port).start()
    except (OSError, ValueError) as exc:
        parser.error(f"cannot serve on {args.host}:{args.port}: {exc}")
    mode = "empty extractor" if args.empty_extraction else "scripted"
    print(f"scripted OpenAI-compatible server ({mode}) at {server.base_url}; Ctrl-C stops it", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
