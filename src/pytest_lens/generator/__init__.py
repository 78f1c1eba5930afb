"""The deterministic LENS dataset generator (SPEC §3).

A planner lays a domain's storyline down as numeric progressions and discrete events
over the five-phase arc; a blind renderer turns each day into a structured report;
distractor reports from unrelated themes are interleaved; 24 questions of all ten types
are asked at checkpoints spread over the stream. Same seed, same bytes::

    from pytest_lens.generator import generate_scope
    scope = generate_scope("cascading_failure", seed=7)
    scope.write("cascading_failure_s07.json")

Importing this package is cheap; the pipeline (and pydantic) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_lens._lazy import lazy_attributes

__all__ = [
    "DEFAULT_DISTRACTORS",
    "DEFAULT_SIGNAL",
    "DOMAINS",
    "GeneratedScope",
    "GeneratorError",
    "dataset_json",
    "generate_scope",
    "get_domain",
    "scaled_sizes",
]

_LAZY = {
    "DOMAINS": "pytest_lens.generator.domains",
    "get_domain": "pytest_lens.generator.domains",
    "DEFAULT_DISTRACTORS": "pytest_lens.generator.pipeline",
    "DEFAULT_SIGNAL": "pytest_lens.generator.pipeline",
    "GeneratedScope": "pytest_lens.generator.pipeline",
    "GeneratorError": "pytest_lens.generator.pipeline",
    "dataset_json": "pytest_lens.generator.pipeline",
    "generate_scope": "pytest_lens.generator.pipeline",
    "scaled_sizes": "pytest_lens.generator.pipeline",
}

if TYPE_CHECKING:
    from pytest_lens.generator.domains import DOMAINS, get_domain
    from pytest_lens.generator.pipeline import (
        DEFAULT_DISTRACTORS,
        DEFAULT_SIGNAL,
        GeneratedScope,
        GeneratorError,
        dataset_json,
        generate_scope,
        scaled_sizes,
    )


__getattr__ = lazy_attributes(__name__, _LAZY)
