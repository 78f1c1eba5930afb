"""Runs ended from outside or by their adapters: calls holding the GIL, SIGTERM, adapters that end or keep the process.

Each runs pytest in a subprocess of its own: these runs are killed, signalled or ended.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pytest_lens.plugin import options
from tests.integration.test_baseline_gating import needle_dataset

NO_CACHE = ("-p", "no:cacheprovider")

REGEX_MEMORY = """
import re

from lens_fixtures.adapters.bm25 import BM25Adapter


class RegexHang(BM25Adapter):
    # A catastrophic regular expression for the ember question: re holds the GIL until it ends (centuries).

    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            re.match(r"(a+)+$", "a" * 64 + "b")
        return super().search(query, filters, limit)
"""


@pytest.fixture
def few_needles(pytester: pytest.Pytester) -> str:
    return f"{options.DATASET}={needle_dataset(pytester.path / 'few.json', count=6)}"


def artifact(pytester: pytest.Pytester, name: str = "out.json") -> dict[str, Any]:
    return json.loads((pytester.path / name).read_text())


def faults_by_question(document: dict[str, Any]) -> dict[str, list[str]]:
    return {r["question_id"]: [f["kind"] for f in r["faults"]] for r in document["results"]}


def test_a_call_holding_the_gil_ends_the_run_with_what_it_had(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 32, defect 2: the regex froze the run until it was killed at 240 s, with no artifact.
    pytester.makepyfile(regex_memory=REGEX_MEMORY)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--lens-adapter=rx=regex_memory:RegexHang",
        few_needles,
        "--lens-call-timeout=1",
        "--lens-json=out.json",
        f"{options.SAVE}=main",
        *NO_CACHE,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    assert result.ret != 0
    assert elapsed < 60  # the silence limit is 1 + 1 + 5 s; the rest is the run and its rescue
    document = artifact(pytester)
    assert faults_by_question(document) == {
        "needle_amber": [],
        "needle_basalt": [],
        "needle_cobalt": [],
        "needle_dune": [],
        "needle_ember": ["abandoned"],
    }
    assert document["incomplete"] == ["incomplete: 1 questions missing from groups rx:needles:16k (1)"]
    result.stderr.fnmatch_lines(["pytest-lens: adapter 'rx' search() held Python's interpreter lock*"])
    result.stdout.fnmatch_lines(["*LENS summary (written by the watchdog)*", "LENS verdict: FAIL*"])
    assert not list((pytester.path / ".lens").glob("*/*.json"))  # an incomplete run is never a baseline
