from __future__ import annotations

import json
from pathlib import Path

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.datasets.loader import LoadedScope, load_dataset
from pytest_lens.judging.baseline import BASELINE_SYSTEM_PROMPT, LLMBaseline, OfflineBaseline, stuffed_context
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.budget import parse_budget, result_tokens
from pytest_lens.records.cases import LensCase


def scope_with_misleading_ids(tmp_path: Path) -> LoadedScope:
    """Ids count down while the stream runs forward: id numbers say nothing about what has arrived."""
    episodes = [
        {
            "episode_id": f"ep_{10 - day:03d}",
            "scope_id": "s",
            "timestamp": f"2025-01-{day + 1:02d}T08:00:00",
            "text": f"Day {day + 1} report. Pump P-7 vibration reading: {day + 1}.{day} mm/s.",
        }
        for day in range(10)
    ]
    question = {
        "question_id": "q1",
        "scope_id": "s",
        "checkpoint_after": 4,
        "question_type": "longitudinal",
        "prompt": "How did pump P-7 vibration change?",
        "ground_truth": {"canonical_answer": "It rose.", "required_evidence_refs": ["ep_010"], "key_facts": ["4.3 mm/s"]},
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"version": "0.1.0", "scopes": [{"scope_id": "s", "episodes": episodes}], "questions": [question]}))
    return load_dataset(path).scopes[0]


def test_the_baseline_reads_by_stream_position_never_by_id_number(tmp_path: Path) -> None:
    scope = scope_with_misleading_ids(tmp_path)
    first, blocks = stuffed_context(scope.stream, 4, cap_tokens=10_000)
    assert first == 1
    assert [block.splitlines()[1] for block in blocks] == [
        f"Day {n} report. Pump P-7 vibration reading: {n}.{n - 1} mm/s." for n in (1, 2, 3, 4)
    ]
    text = "\n".join(blocks)
    assert "ep_" not in text  # ids (which may encode labels) are never shown
    assert "Day 5" not in text
    assert "Day 10" not in text


def test_over_the_cap_the_newest_episodes_are_kept(tmp_path: Path) -> None:
    scope = scope_with_misleading_ids(tmp_path)
    _, all_blocks = stuffed_context(scope.stream, 8, cap_tokens=10_000)
    per_block = result_tokens(all_blocks[0] + "\n\n")
    first, blocks = stuffed_context(scope.stream, 8, cap_tokens=3 * per_block + 1)
    assert first == 6
    assert len(blocks) == 3
    assert [block.splitlines()[0].split(" (")[0] for block in blocks] == ["### Record 6", "### Record 7", "### Record 8"]
    assert stuffed_context(scope.stream, 8, cap_tokens=1) == (9, [])


def test_offline_baseline_answers_extractively_within_the_budget_cap(tmp_path: Path) -> None:
    scope = scope_with_misleading_ids(tmp_path)
    case = LensCase("a", scope, scope.questions[0], parse_budget("results=10000"))
    answer = OfflineBaseline().answer(case)
    assert answer.episodes == 4
    assert answer.first_position == 1
    assert "4.3 mm/s" in answer.text
    assert "5.4" not in answer.text
    assert OfflineBaseline(cap_tokens=1).answer(case).episodes == 0


def test_llm_baseline_asks_once_per_question_and_cap(tmp_path: Path) -> None:
    scope = scope_with_misleading_ids(tmp_path)
    case = LensCase("a", scope, scope.questions[0], parse_budget("results=10000"))
    other_adapter = LensCase("b", scope, scope.questions[0], parse_budget("results=10000"))
    with OpenAITestServer() as server:
        endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY")
        baseline = LLMBaseline(ChatClient(endpoint, "m", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats()))
        first = baseline.answer(case)
        assert baseline.answer(other_adapter) == first
        assert server.count() == 1
        body = server.requests[0].body
        baseline.answer(LensCase("a", scope, scope.questions[0], parse_budget("results=60")))
        assert server.count() == 2  # another cap is another baseline
    assert body["messages"][0] == {"role": "system", "content": BASELINE_SYSTEM_PROMPT}
    assert body["messages"][1]["content"].endswith("Question: How did pump P-7 vibration change?")
    assert "tools" not in body
    assert "4.3 mm/s" in first.text
    assert first.episodes == 4
