"""The deterministic LENS dataset generator (SPEC §3).

A planner lays a domain's storyline down as numeric progressions and discrete events
over the five-phase arc; a blind renderer turns each day into a structured report;
distractor reports from unrelated themes are interleaved; 24 questions of all ten types
are asked at checkpoints spread over the stream. Same seed, same bytes::

    from pytest_lens.generator import generate_scope
    scope = generate_scope("cascading_failure", seed=7)
    scope.write("cascading_failure_s07.json")
"""

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
