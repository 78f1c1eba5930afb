"""MEME's LLM judge: the paper's judging protocol through the run's judge model.

One request per probe, at temperature 0 in JSON mode, answered with
``{"correct": true|false, "reason": "one sentence"}`` (Aggregation adds the per-value
``results``). Each task has its own prompt, written from the paper's description:

- Tracking: every value of the history, in the exact chronological order;
- Aggregation: every value present (one call listing each value; partial credit = the share present);
- Cascade: the new value as the sole, definitive answer (old value too, hedging, future or
  conditional phrasing, or "I don't know" fail);
- Absence: uncertainty expressed, or the upstream change acknowledged, and no confident stale value;
- Deletion: the deleted value not revealed in any way;
- before-probes (all tasks): one common semantic-equivalence prompt against the value held then.

Exact Recall stays the mechanical substring match (lower-cased, whitespace collapsed), in both
phases, as in the paper. Tracking's partial credit is the paper's position-based count, computed
mechanically (:func:`~pytest_lens.suites.meme.tasks.judge_tracking`); its pass/fail is the model's.

An unusable reply (no JSON object, a field missing or of the wrong type, an Aggregation value left
out) gets one repair request; if that fails too, or the endpoint fails, :class:`JudgeError` is raised
and the probe's MEME metric stays absent (recorded as a scoring failure, never a pass or a fail).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_lens.judging.judge import JudgeError
from pytest_lens.suites.answers import strip_citations
from pytest_lens.suites.meme.tasks import ProbeVerdict, judge_probe, judge_tracking
from pytest_lens.suites.verdicts import VERDICT_FORMAT, UnusableReply, ask_for_verdict, json_object, read_reason, read_verdict
from pytest_lens.text import normalize

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Question
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "ANSWER_CLOSE",
    "ANSWER_OPEN",
    "JUDGE_PREAMBLE",
    "LLM_JUDGED",
    "PROMPT_KINDS",
    "VALUE_LABELS",
    "JudgedProbe",
    "MemeLLMJudge",
    "UnusableReply",
    "prompt_kind",
    "read_reply",
    "render_prompt",
]

#: The first line of every MEME judge prompt (test servers recognise the request by it).
JUDGE_PREAMBLE = "You are grading an AI assistant's answer in MEME, a benchmark of long-term conversational memory."
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
#: Tasks the LLM judges (Exact Recall is always a substring match).
LLM_JUDGED = ("tracking", "aggregation", "deletion", "cascade", "absence")

#: Prompt kinds: ``before`` (every before-probe) and the after-probe tasks. Title and what the task is.
PROMPT_KINDS: dict[str, tuple[str, str]] = {
    "before": (
        "Recall before the change",
        "The user told the assistant a fact earlier in the conversation, and nothing has changed it yet.",
    ),
    "tracking": (
        "Tracking",
        "The user updated this fact several times; the question asks for its whole history.",
    ),
    "aggregation": (
        "Aggregation",
        "The question asks for several related facts at once, which the user mentioned at different times "
        "and which the question does not name one by one.",
    ),
    "cascade": (
        "Cascade",
        "This fact depends on another one, and the user said in advance what it would become if that other fact "
        "changed. That other fact has since changed, so the fact now has its announced new value.",
    ),
    "absence": (
        "Absence",
        "This fact depends on another one that has since changed, and the user never said what the fact became. "
        "The right behaviour is to be uncertain about its current value.",
    ),
    "deletion": (
        "Deletion",
        "The user told the assistant this fact and later asked it to delete the fact from its memory.",
    ),
}

#: The labelled value lists each prompt kind shows: (label, which values).
VALUE_LABELS: dict[str, tuple[tuple[str, str], ...]] = {
    "before": (("Expected value", "expected"),),
    "tracking": (("Gold history, oldest first", "expected"),),
    "aggregation": (("Values that must all be present", "expected"),),
    "cascade": (("Current value", "expected"), ("Outdated value", "stale")),
    "absence": (("Previously stated value, which may no longer hold", "stale"),),
    "deletion": (("Deleted value", "stale"),),
}

_CRITERIA: dict[str, str] = {
    "before": (
        "The answer is correct if it states the expected value or something semantically equivalent to it "
        "(other wording, extra detail or a fuller form are fine). It is incorrect if it gives a different value, "
        "contradicts the expected value, or says it does not know."
    ),
    "tracking": (
        "The answer is correct only if it contains ALL of the gold values, in the EXACT chronological order listed "
        "(oldest first; other wording is fine). Leaving out any value, or giving the values in another order, "
        "makes it incorrect."
    ),
    "aggregation": (
        "For each listed value, decide whether the answer states it (the same value in other words counts; a different "
        "value does not). The answer is correct only if every listed value is present."
    ),
    "cascade": (
        "The answer is correct only if it gives the current value as the sole, definitive answer. It is incorrect if it "
        "also gives the outdated value, hedges between values, states the current value only as a future or conditional "
        'rule (for example "it will be ... if ..."), or says it does not know.'
    ),
    "absence": (
        'The answer is correct if it says it does not know or is not sure (for example "I don\'t know", "not sure", '
        '"unknown", "none"), or acknowledges that the fact it depends on changed so the value may be different now; '
        "mentioning the previous value as the previous one is fine then. It is incorrect if it confidently states the "
        "previous value as the current one, or confidently states any other value."
    ),
    "deletion": (
        "The answer is correct if it says it does not have that information (or similar) WITHOUT revealing the deleted "
        "value in any way. It is incorrect if it reveals the deleted value, fully or in part, even while noting that it "
        "was deleted."
    ),
}

_AGGREGATION_FORMAT = (
    '{"results": [{"value": "<a listed value, verbatim>", "present": true or false}, ...], '
    '"correct": true or false, "reason": "one sentence"}'
)


@dataclass(frozen=True)
class JudgedProbe:
    """A probe's verdict and how it was reached: ``by`` ``llm`` (with the raw reply and attempts) or ``mechanical``."""

    verdict: ProbeVerdict
    by: str
    raw: str = ""
    attempts: int = 0


def prompt_kind(question: Question) -> str | None:
    """The prompt a probe gets (``before`` or its task); ``None`` when it is judged mechanically (Exact Recall)."""
    if question.question_type == "exact_recall":
        return None
    return "before" if question.phase == "before" else question.question_type


def _values(question: Question, which: str) -> list[str]:
    if which == "stale":
        return list(question.stale_values)
    return [fact.fact for fact in question.ground_truth.key_facts]


def render_prompt(question: Question, answer: str) -> str:
    """The judge prompt for ``answer`` to ``question`` (citations removed); :class:`JudgeError` for a probe with no LLM protocol."""
    kind = prompt_kind(question)
    if kind not in PROMPT_KINDS:
        raise JudgeError(f"MEME has no LLM judging protocol for task {question.question_type!r}")
    title, description = PROMPT_KINDS[kind]
    lines = [JUDGE_PREAMBLE, "", f"Task: {title}", description, "", f"Question: {question.prompt}"]
    lines.append(f"Reference answer: {question.ground_truth.canonical_answer}")
    for label, which in VALUE_LABELS[kind]:
        values = _values(question, which)
        if not values:
            raise JudgeError(f"{question.question_id}: a {title} probe needs the {label.lower()}, and the question has none")
        lines.append(f"{label}:")
        lines.extend(f"- {' '.join(value.split())}" for value in values)
    # Ref ids like [ep_003] mean nothing to the judge: drop them (as the mechanical judges do).
    shown = "\n".join(" ".join(line.split()) for line in strip_citations(answer).splitlines()).strip() or "(empty answer)"
    lines += ["", "The assistant's answer:", ANSWER_OPEN, shown, ANSWER_CLOSE, "", _CRITERIA[kind], ""]
    lines.append(f"Reply with ONLY a JSON object, no other text: {_AGGREGATION_FORMAT if kind == 'aggregation' else VERDICT_FORMAT}")
    return "\n".join(lines)


def read_reply(text: str, kind: str, expected: Sequence[str]) -> ProbeVerdict:
    """The verdict in a judge reply; :class:`UnusableReply` naming what is missing or malformed.

    ``correct`` must be a JSON boolean and ``reason`` a non-empty string. For Aggregation,
    ``results`` must say for every expected value whether it is present; the probe passes
    only when all are (whatever ``correct`` says), with the share present as partial credit.
    """
    data = json_object(text)
    if kind != "aggregation":
        return ProbeVerdict(*read_verdict(data))
    reason = read_reason(data)
    results = data.get("results")
    if not isinstance(results, list):
        raise UnusableReply('"results" is missing or not a list')
    present: dict[str, bool] = {}
    for entry in results:
        if isinstance(entry, Mapping) and isinstance(entry.get("value"), str) and isinstance(entry.get("present"), bool):
            present.setdefault(normalize(entry["value"]), entry["present"])
    missing = [value for value in expected if normalize(value) not in present]
    if missing:
        raise UnusableReply(f'"results" says nothing usable about {", ".join(repr(v) for v in missing)}')
    found = sum(present[normalize(value)] for value in expected)
    return ProbeVerdict(found == len(expected), reason, found / len(expected))


class MemeLLMJudge:
    """Judges MEME probes with an LLM following the paper's protocol (see the module docstring).

    Requests go through the run's :class:`~pytest_lens.llm.client.ChatClient`, so they are cached
    and replayed like every other LLM request; endpoint failures become :class:`JudgeError`.
    """

    name = "llm"

    def __init__(self, client: ChatClient, *, repairs: int = 1, max_tokens: int | None = None) -> None:
        self.client = client
        self.repairs = repairs
        self.max_tokens = max_tokens
        self.description = f"llm ({client.description}; MEME per-task prompts, JSON verdicts at temperature 0; ER by substring match)"

    def judge(self, question: Question, answer: str) -> JudgedProbe:
        """Judge one probe; :class:`JudgeError` when no usable verdict could be had."""
        kind = prompt_kind(question)
        if kind is None:
            return JudgedProbe(judge_probe(question, answer), "mechanical")
        expected = _values(question, "expected")
        asked = ask_for_verdict(
            self.client,
            render_prompt(question, answer),
            lambda raw: read_reply(raw, kind, expected),
            reply_format=_AGGREGATION_FORMAT if kind == "aggregation" else VERDICT_FORMAT,
            repairs=self.repairs,
            max_tokens=self.max_tokens,
            subject="MEME verdict",
        )
        verdict = asked.verdict
        if kind == "tracking":  # partial credit: the paper's position-based count, mechanically
            verdict = ProbeVerdict(verdict.passed, verdict.reason, judge_tracking(expected, answer).partial)
        return JudgedProbe(verdict, "llm", asked.raw, asked.attempts)
