"""The built-in LENS test, collected as ``lens::test_lens[<case id>]`` when pytest-lens is active.

A user's own test module can do the same with the public fixtures::

    def test_my_memory(lens_case, lens_run):
        result = lens_run(lens_case)
        assert result.metrics["evidence_grounding"] >= 0.5
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult


def test_lens(lens_case: LensCase, lens_run: Callable[[LensCase], QuestionResult]) -> None:
    """Answer one LENS question through the adapter and record its scores."""
    lens_run(lens_case)
