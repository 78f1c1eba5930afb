"""Hooks other plugins and ``conftest.py`` files may implement (``pytest_lens_*``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_lens.records.results import QuestionResult

hookspec = pytest.hookspec


@hookspec
def pytest_lens_result(result: QuestionResult, config: pytest.Config) -> None:
    """Called on the controller for every question result as it arrives.

    For example, to stream scores to your own store::

        def pytest_lens_result(result, config):
            print(result.question_id, result.composite)
    """
