"""Issue 32: one adapter call that never ends faults its own question only; the questions queued behind it are answered.

A search that sleeps ten minutes in C code (``time.sleep``) cannot be interrupted: ``--lens-call-timeout`` gives up on
it and abandons its adapter instance. Every later question of that adapter used to fail with the ``abandoned`` fault
(24 of 24 at ``--lens-concurrency=8``, 22 of 24 serially); now they go to a fresh instance streamed to the same state.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.plugin import options
from pytest_lens.records.rows import read_artifact_json

HANG_MEMORY = """
import os
import time

from lens_fixtures.adapters.bm25 import BM25Adapter


class SleepHang(BM25Adapter):
    # The ember question's first search sleeps ten minutes in C code: no timeout raised inside the call ends it.

    def __init__(self, storage_dir=None):
        super().__init__(storage_dir=storage_dir)
        with open(os.path.join(os.getcwd(), "instances"), "a") as built:
            built.write("built\\n")

    def search(self, query, filters=None, limit=None):
        if "ember" in query and not os.path.exists("slept"):
            open("slept", "w").close()
            time.sleep(600)
        return super().search(query, filters, limit)


class AlwaysHangs(SleepHang):
    # From the ember question on, every search sleeps: each rebuilt instance hangs again, until the adapter is given up.

    def search(self, query, filters=None, limit=None):
        if "ember" in query or os.path.exists("slept"):
            open("slept", "w").close()
            time.sleep(600)
        return super().search(query, filters, limit)
"""

WORDS = [
    *("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "jasper", "krypton", "lagoon"),
    *("marble", "nickel", "onyx", "pebble", "quartz", "raven", "sierra", "tundra", "umber", "violet", "willow", "zephyr"),
]


def two_checkpoint_needles(path: Path) -> Path:
    """24 questions, each answered by one episode; the first 12 asked after 12 episodes, the rest after all 24."""
    episodes = [
        {
            "episode_id": f"n{i:02d}",
            "scope_id": "needles",
            "timestamp": f"2025-02-{i + 1:02d}T08:00:00",
            "text": f"## 2025-02-{i + 1:02d} Maintenance log\n- Sensor {word} logged fault code {word.upper()}-{i} at the {word} site.",
            "meta": {},
        }
        for i, word in enumerate(WORDS)
    ]
    questions = [
        {
            "question_id": f"needle_{word}",
            "scope_id": "needles",
            "checkpoint_after": 12 if i < 12 else 24,
            "question_type": "longitudinal",
            "prompt": f"Which fault code did the {word} sensor log?",
            "ground_truth": {
                "canonical_answer": f"{word.upper()}-{i}",
                "required_evidence_refs": [f"n{i:02d}"],
                "key_facts": [f"{word.upper()}-{i}"],
            },
        }
        for i, word in enumerate(WORDS)
    ]
    path.write_text(json.dumps({"version": "0.1.0", "scopes": [{"scope_id": "needles", "episodes": episodes}], "questions": questions}))
    return path


def hung_run(pytester: pytest.Pytester, adapter: str, concurrency: int) -> tuple[pytest.RunResult, dict[str, list[str]], float]:
    pytester.makepyfile(hang_memory=HANG_MEMORY)
    dataset = two_checkpoint_needles(pytester.path / "needles.json")
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        f"--lens-adapter=hang=hang_memory:{adapter}",
        f"{options.DATASET}={dataset}",
        "--lens-call-timeout=1",
        f"--lens-concurrency={concurrency}",
        "--lens-json=out.json",
        "-p",
        "no:cacheprovider",
        timeout=240,
    )
    elapsed = time.monotonic() - started
    document: dict[str, Any] = read_artifact_json(pytester.path / "out.json")
    faults = {r["question_id"]: [f["kind"] for f in r["faults"]] for r in document["results"]}
    return result, faults, elapsed


@pytest.mark.parametrize("concurrency", [1, 8])
def test_a_call_that_never_ends_faults_its_own_question_only(pytester: pytest.Pytester, concurrency: int) -> None:
    result, faults, elapsed = hung_run(pytester, "SleepHang", concurrency)
    assert len(faults) == 24
    assert faults.pop("needle_ember") == ["timeout"]  # its search was given up on, then it went on with a fresh instance
    assert faults == {question: [] for question in faults}  # the 23 others: no fault (they used to be abandoned with it)
    # The first instance (two at concurrency 8: each checkpoint of this adapter has one), and the one rebuilt.
    assert (pytester.path / "instances").read_text().count("built") == (2 if concurrency == 1 else 3)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("gated", 0) >= 23, outcomes
    assert elapsed < 120


def test_an_adapter_hanging_on_every_rebuild_is_given_up(pytester: pytest.Pytester) -> None:
    from pytest_lens.execution.runner import MAX_REBUILDS

    result, faults, elapsed = hung_run(pytester, "AlwaysHangs", 1)
    assert faults["needle_ember"][0] == "timeout"
    assert faults["needle_amber"] == []  # before the hang
    built = (pytester.path / "instances").read_text().count("built")
    assert built == 1 + MAX_REBUILDS  # the first instance and each rebuild hung
    given_up = [question for question, kinds in faults.items() if "abandoned" in kinds]
    assert "needle_lagoon" in given_up and "needle_zephyr" in given_up  # after the last rebuild hung, the rest fail as before
    assert result.ret != 0 and elapsed < 180
