"""Strict verdict reading: a reply counts only when it is the verdict (token or JSON), for every judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.datasets.models import KeyFact
from pytest_lens.judging.judge import PAIRWISE, Comparison, Criterion, JudgeError, LLMJudge, parse_verdict
from pytest_lens.judging.verdicts import TokenVerdict, UnusableReply, ask_judge, json_object, reply_body
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.replies import strip_reasoning
from pytest_lens.llm.stats import LLMStats

#: Replies that are the pairwise verdict.
VERDICTS = [
    ("A", "A"),
    ("B", "B"),
    ("TIE", "TIE"),
    (" b\n", "B"),
    ("tie", "TIE"),
    ("Tie.", "TIE"),
    ("A.", "A"),
    ("B!", "B"),
    ("**A**", "A"),
    ("`TIE`", "TIE"),
    ('"B"', "B"),
    ("<think>A or B? Both mention it.</think>\nTIE", "TIE"),
    ("<THINK>\nB says it plainly.\n</THINK>B", "B"),
    ("the finding is in A.</think>\nA", "A"),  # a template that opened the block in the prompt
    ("```\nA\n```", "A"),
    ('{"verdict": "B"}', "B"),
    ('{"Verdict": "tie", "reason": "both state it"}', "TIE"),
    ('```json\n{"verdict": "A"}\n```', "A"),
]

#: Replies that are not a verdict: every one is a judge failure after the repair request, never A, B or TIE.
NOT_VERDICTS = [
    "I refuse to give a verdict",
    "As a language model I cannot judge this",
    "Both responses mention the finding, so I would call it a draw",
    "Response A",
    "Response B is better.",
    "A is better than B",
    "The answer is A",
    "A or B",
    "A, B",
    "Neither",
    "Both are fine",
    "I cannot decide",
    "It's a tie between A and B",
    "Verdict: TIE",
    "A\nBecause it states the pressure.",
    "AB",
    "TIED",
    "<think>Clearly A.",  # cut off while thinking: no verdict
    "<think>A</think>",  # the verdict only inside the reasoning
    "",
    "   ",
    '{"verdict": "C"}',
    '{"winner": 1}',
    '{"verdict": "A"} since A states it',
    '["A"]',
]


@pytest.mark.parametrize(("reply", "verdict"), VERDICTS)
def test_a_reply_that_is_the_verdict_counts(reply: str, verdict: str) -> None:
    assert PAIRWISE.read(reply) == verdict
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize("reply", NOT_VERDICTS)
def test_a_reply_that_only_contains_a_verdict_is_not_one(reply: str) -> None:
    with pytest.raises(UnusableReply, match=r"not one of A, B, TIE|no \"verdict\" field|empty"):
        PAIRWISE.read(reply)
    assert parse_verdict(reply) is None


def test_the_reader_takes_any_fixed_set_of_tokens() -> None:
    yes_no = TokenVerdict(("YES", "NO"))
    assert [yes_no.read(reply) for reply in ("yes", "NO.", "**Yes**", '{"verdict": "no"}')] == ["YES", "NO", "YES", "NO"]
    for reply in ("Yes, it does.", "I think no", "Y", "A"):
        with pytest.raises(UnusableReply, match="not one of YES, NO"):
            yes_no.read(reply)
    assert yes_no.instruction == "Respond with ONLY one word: YES or NO"
    assert PAIRWISE.instruction == "Respond with ONLY one word: A, B, or TIE"
    with pytest.raises(ValueError, match="non-empty tokens"):
        TokenVerdict((" A",))


@pytest.mark.parametrize(
    ("reply", "data"),
    [
        ('{"correct": true, "reason": "ok"}', {"correct": True, "reason": "ok"}),
        ('  ```json\n{"correct": false, "reason": "no"}\n```  ', {"correct": False, "reason": "no"}),
        ('<think>{"correct": true}</think>\n{"correct": false, "reason": "r"}', {"correct": False, "reason": "r"}),
    ],
)
def test_a_json_verdict_is_the_whole_reply(reply: str, data: dict[str, object]) -> None:
    assert json_object(reply) == data


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ('Verdict: {"correct": true, "reason": "ok"} (done)', "not only a JSON object"),
        ('{"correct": true, "reason": "cut', "not only a JSON object"),
        ("The answer is correct.", "not a JSON object"),
        ("[true]", "a JSON list, not an object"),
        ('"correct"', "a JSON str, not an object"),
    ],
)
def test_a_reply_around_or_without_a_json_object_is_unusable(reply: str, problem: str) -> None:
    with pytest.raises(UnusableReply, match=problem):
        json_object(reply)


def test_reasoning_and_fences_are_the_only_things_removed() -> None:
    assert strip_reasoning("<think>\nlet me see [x]\n</think>\nThe answer [a].") == "The answer [a]."
    assert strip_reasoning("<think>never closed") == "<think>never closed"
    assert reply_body("```\nbody\n```") == "body"
    assert reply_body("text ```\nbody\n```") == "text ```\nbody\n```"


def _client(server: OpenAITestServer, tmp_path: Path) -> ChatClient:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=0)
    return ChatClient(endpoint, "judge-m", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats(), max_tokens=16)


@pytest.mark.parametrize("reply", NOT_VERDICTS[:3])
def test_the_issue_replies_are_judge_failures_after_one_repair(tmp_path: Path, reply: str) -> None:
    comparison = Comparison("What happened?", Criterion.fact(KeyFact(fact="17.9 bar")), "It hit 17.9 bar.", "Nothing.", "s/q/aq/0")
    with OpenAITestServer(faults=[Fault("content", text=reply, permanent=True, only="judge")]) as server:
        judge = LLMJudge(_client(server, tmp_path), seed=42, max_tokens=16)
        with pytest.raises(JudgeError, match="no usable verdict"):
            judge.compare(comparison)
        sent = [r.body for r in server.requests]
    assert len(sent) == 2  # the question and one repair request
    assert [body["max_tokens"] for body in sent] == [16, 16]
    assert sent[1]["messages"][-1]["content"].endswith("Respond with ONLY one word: A, B, or TIE")


def test_a_reply_cut_off_at_the_token_limit_says_so(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("ramble", permanent=True)]) as server:
        with pytest.raises(JudgeError, match="cut off at the token limit"):
            ask_judge(_client(server, tmp_path), "Say A.", PAIRWISE.read, lambda problem: f"{problem}. {PAIRWISE.instruction}")
        assert [r.body["max_tokens"] for r in server.requests] == [16, 16]
