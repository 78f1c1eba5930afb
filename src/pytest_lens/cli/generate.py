"""``lens generate``: write generated LENS scopes (one domain to a file, or every domain to a directory)."""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.llm.settings import DEFAULT_MAX_TOKENS

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["add_generate", "run_generate"]

_ALL = "all"


def add_generate(sub: Any) -> argparse.ArgumentParser:
    """Register ``lens generate``."""
    from pytest_lens.generator.domains import DOMAINS

    parser: argparse.ArgumentParser = sub.add_parser(
        "generate",
        help="write a seeded LENS scope (same seed, same bytes)",
        description="Generate LENS-format scopes: a storyline over the five-phase arc, format-matched distractors, "
        "24 questions of all ten types. The output is checked against every generator guarantee before it is written.",
    )
    parser.add_argument("--domain", required=True, choices=[*DOMAINS, _ALL], help=f"signal domain, or '{_ALL}' for one file per domain")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1, the bundled scopes' seed)")
    parser.add_argument("--out", type=Path, required=True, metavar="PATH", help="output file; a directory for --domain all")
    parser.add_argument("--signal", type=int, default=None, metavar="N", help="signal episodes (default 30, at least 30)")
    parser.add_argument("--distractors", type=int, default=None, metavar="M", help="distractor episodes (default 90)")
    parser.add_argument(
        "--scale",
        type=int,
        default=None,
        metavar="N",
        help="total episodes per scope (1,000 to 100,000 for performance work): longer arcs and more distractors",
    )
    parser.add_argument("--scope-id", default=None, help="scope id (default <domain>_s<seed>)")
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write ground-truth labels (a directory for --domain all); name them NAME.labels.json beside NAME.json "
        "and runs read them for signal_precision (scorer only, never shown to an agent)",
    )
    parser.add_argument("--no-verify", action="store_true", help="skip the guarantee checks (only for timing the generator)")
    llm = parser.add_argument_group("optional LLM stage (richer text; every piece checked, the deterministic text where it fails)")
    llm.add_argument("--llm-base-url", default=None, metavar="URL", help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1)")
    llm.add_argument("--llm-model", default=None, metavar="NAME", help="model for the planner and the blind renderer")
    llm.add_argument("--llm-api-key-env", default="OPENAI_API_KEY", metavar="VAR", help="environment variable holding the API key")
    llm.add_argument("--llm-cache", type=Path, default=Path(".lens") / "llm-cache.sqlite", metavar="PATH", help="request cache file")
    llm.add_argument("--llm-cache-mode", choices=("record", "replay", "off"), default="record", help="replay regenerates offline")
    llm.add_argument(
        "--llm-max-tokens", type=int, default=DEFAULT_MAX_TOKENS, metavar="N", help=f"max_tokens per request (default {DEFAULT_MAX_TOKENS})"
    )
    return parser


def run_generate(args: argparse.Namespace) -> int:
    """Generate, check, write; exit 2 with a message naming the option for bad input."""
    from pytest_lens.datasets.labels import LABELS_SUFFIX
    from pytest_lens.generator.arc import MIN_SIGNAL
    from pytest_lens.generator.domains import DOMAINS
    from pytest_lens.generator.pipeline import DEFAULT_DISTRACTORS, DEFAULT_SIGNAL, GeneratorError, generate_scope, scaled_sizes

    if args.scale is not None and (args.signal is not None or args.distractors is not None):
        return _usage("--scale sets the signal and distractor counts itself; drop --signal/--distractors or --scale")
    if args.domain == _ALL and args.scope_id:
        return _usage("--scope-id names one scope; use it with a single --domain")
    if args.signal is not None and args.signal < MIN_SIGNAL:
        return _usage(f"--signal {args.signal}: the five-phase arc needs at least {MIN_SIGNAL} signal episodes")
    if args.distractors is not None and args.distractors < 0:
        return _usage(f"--distractors {args.distractors}: must be 0 or more")
    try:
        if args.scale is not None:
            signal, distractors = scaled_sizes(args.scale)
        else:
            signal = DEFAULT_SIGNAL if args.signal is None else args.signal
            distractors = DEFAULT_DISTRACTORS if args.distractors is None else args.distractors
    except GeneratorError as exc:
        return _usage(f"--scale: {exc}")

    if args.llm_max_tokens < 1:
        return _usage(f"--llm-max-tokens must be at least 1, got {args.llm_max_tokens}")
    if args.llm_base_url and not args.llm_model:
        return _usage("--llm-base-url needs --llm-model (the model the planner and renderer use)")
    llm = _llm_client(args) if args.llm_model else None

    domains = list(DOMAINS) if args.domain == _ALL else [args.domain]
    if args.domain == _ALL:
        if args.out.exists() and not args.out.is_dir():
            return _usage(f"--out {args.out}: --domain all writes one file per domain; give a directory")
        if args.labels is not None and (args.labels.is_file() or (not args.labels.exists() and args.labels.suffix == ".json")):
            return _usage(f"--labels {args.labels}: --domain all writes one labels file per domain; give a directory")
        args.out.mkdir(parents=True, exist_ok=True)
    for name in domains:
        started = time.perf_counter()
        try:
            scope = generate_scope(
                name, args.seed, signal=signal, distractors=distractors, scope_id=args.scope_id, verify=not args.no_verify, llm=llm
            )
        except GeneratorError as exc:
            return _usage(str(exc))
        target = args.out / f"{scope.scope_id}.json" if args.domain == _ALL else args.out
        labels = args.labels / f"{scope.scope_id}{LABELS_SUFFIX}" if args.domain == _ALL and args.labels is not None else args.labels
        text = scope.to_json()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            if labels is not None:
                labels.parent.mkdir(parents=True, exist_ok=True)
                labels.write_text(scope.labels_json(), encoding="utf-8")
        except OSError as exc:
            return _usage(f"--out {target}: cannot write: {exc}")
        episodes = len(scope.dataset.scopes[0].episodes)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        print(
            f"wrote {target}: {scope.scope_id}, {episodes:,} episodes ({signal:,} signal, {distractors:,} distractors), "
            f"{len(scope.dataset.questions)} questions, sha256 {digest}, {time.perf_counter() - started:.1f} s"
        )
        for line in scope.llm_report.lines() if scope.llm_report else ():
            print(f"  {line}")
    if llm is not None:
        llm.cache.close()
    return 0


def _llm_client(args: argparse.Namespace) -> ChatClient:
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    endpoint = LLMEndpoint(args.llm_base_url, api_key_env=args.llm_api_key_env)
    cache = RequestCache(args.llm_cache, args.llm_cache_mode)
    return ChatClient(endpoint, args.llm_model, cache=cache, stats=LLMStats(), seed=args.seed, max_tokens=args.llm_max_tokens)


def _usage(message: str) -> int:
    print(f"lens generate: error: {message}")
    return 2
