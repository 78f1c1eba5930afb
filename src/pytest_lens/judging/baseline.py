"""The naive baseline (SPEC §5, tier 3): the same answerer without a memory, reading the stream stuffed into its context.

It reads the episodes ingested so far **by stream position** (``scope.stream[:checkpoint]``),
never by id number (the public reference implementation's defect: its baseline saw
episodes from the future). When they do not all fit under the cap, the most recent
episodes that fit are kept (a context window drops the oldest first), shown in stream
order. The cap defaults to the question's result-token budget, so the baseline reads
as much as the agent may retrieve; tokens are counted like tool results (UTF-8 bytes // 4).
Episodes are shown by position and timestamp, never by id or metadata, so dataset
labels cannot leak into it.

A model's context is measured in *its* tokens, and real tokenizers count more than bytes / 4
(1.47x on LENS scope 01 for SmolLM2). Given the model's context (``--lens-llm-context``),
:class:`LLMBaseline` keeps the prompt's estimate under ``(context - answer tokens) / CONTEXT_MARGIN``;
and when the server still answers that the prompt is too long, it trims the records by what the
server said (or by half) and retries once.

:class:`LLMBaseline` asks the agent's model (cached per question, model and cap, in
process and in the request cache); :class:`OfflineBaseline` is the offline agent's
extractive answer over the same context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pytest_lens.records.budget import result_tokens

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Episode
    from pytest_lens.llm.client import ChatClient
    from pytest_lens.llm.errors import LLMContextLengthError
    from pytest_lens.records.cases import LensCase

__all__ = [
    "BASELINE_SYSTEM_PROMPT",
    "CONTEXT_MARGIN",
    "BaselineAnswer",
    "BaselineError",
    "LLMBaseline",
    "NaiveBaseline",
    "OfflineBaseline",
    "stuffed_context",
]

BASELINE_SYSTEM_PROMPT = (
    "You are a research assistant. Below are the records available so far, oldest first. "
    "Answer the user's question using only these records. Be concise and specific: give the exact values, dates "
    "and trends the records show, and say so clearly if they are not sufficient."
)


#: How many real tokens one estimated token (UTF-8 bytes / 4) may turn out to be, when sizing for a context window.
CONTEXT_MARGIN = 1.5
#: Estimated tokens of the chat template around the messages (role markers, separators).
_TEMPLATE_TOKENS = 32
#: After a context-length error, aim this far below what the server said fits.
_RETRY_SLACK = 0.9


class BaselineError(Exception):
    """The baseline answer could not be produced."""


@dataclass(frozen=True)
class BaselineAnswer:
    """The baseline's answer and what it read."""

    text: str
    episodes: int
    tokens: int
    first_position: int
    #: The first prompt was refused as longer than the model's context, and this answer is the trimmed retry's.
    trimmed: bool = False


class NaiveBaseline(Protocol):
    """Answers a case from the stuffed stream, without any memory system."""

    name: str

    def answer(self, case: LensCase) -> BaselineAnswer:
        """The baseline answer to ``case``; :class:`BaselineError` when it cannot be produced."""
        ...


def _render(position: int, episode: Episode) -> str:
    return f"### Record {position} ({episode.iso_timestamp})\n{episode.text.strip()}"


def stuffed_context(stream: tuple[Episode, ...], checkpoint: int, cap_tokens: int) -> tuple[int, list[str]]:
    """The newest of the first ``checkpoint`` episodes that fit in ``cap_tokens``, in stream order.

    Returns the 1-based position of the first episode kept and the rendered episodes.
    """
    kept: list[str] = []
    used = 0
    position = checkpoint
    for position in range(min(checkpoint, len(stream)), 0, -1):
        block = _render(position, stream[position - 1])
        cost = result_tokens(block + "\n\n")
        if used + cost > cap_tokens:
            position += 1
            break
        kept.append(block)
        used += cost
    else:
        position = 1
    return position, kept[::-1]


class _Memo:
    def __init__(self) -> None:
        self._answers: dict[tuple[str, str, int, int], BaselineAnswer] = {}

    def key(self, case: LensCase, cap: int) -> tuple[str, str, int, int]:
        return (case.scope.scope_id, case.question.question_id, case.checkpoint, cap)

    def get(self, key: tuple[str, str, int, int]) -> BaselineAnswer | None:
        return self._answers.get(key)

    def put(self, key: tuple[str, str, int, int], answer: BaselineAnswer) -> BaselineAnswer:
        self._answers[key] = answer
        return answer


class LLMBaseline:
    """The agent's model answering from the stuffed context (no tools), sized for the model's context window."""

    name = "llm"

    def __init__(
        self,
        client: ChatClient,
        cap_tokens: int | None = None,
        max_tokens: int | None = None,
        context_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.cap_tokens = cap_tokens
        self.max_tokens = max_tokens if max_tokens is not None else client.max_tokens
        self.context_tokens = context_tokens
        self._memo = _Memo()

    def records_cap(self, case: LensCase) -> int:
        """Estimated tokens of records to send: the budget's cap, or less when the model's context is smaller."""
        cap = self.cap_tokens or case.budget.result_token_cap
        if self.context_tokens is None:
            return cap
        fixed = result_tokens(BASELINE_SYSTEM_PROMPT) + result_tokens(f"\n\nQuestion: {case.question.prompt}") + _TEMPLATE_TOKENS
        room = (self.context_tokens - self.max_tokens) / CONTEXT_MARGIN - fixed
        return max(0, min(cap, int(room)))

    def answer(self, case: LensCase) -> BaselineAnswer:
        """Ask the model once per (question, checkpoint, cap); later calls reuse the answer."""
        from pytest_lens.llm.errors import LLMContextLengthError, LLMError

        cap = self.records_cap(case)
        key = self._memo.key(case, cap)
        known = self._memo.get(key)
        if known is not None:
            return known
        try:
            try:
                return self._memo.put(key, self._ask(case, cap))
            except LLMContextLengthError as exc:
                _, blocks = stuffed_context(case.scope.stream, case.checkpoint, cap)
                sent = sum(result_tokens(block + "\n\n") for block in blocks)
                trimmed = self._memo.put(key, self._ask(case, int(sent * self._shrink(exc)), trimmed=True))
                self.client.stats.add(recovered=1)  # refused as too long, trimmed, answered: not a failure
                return trimmed
        except LLMError as exc:
            if isinstance(exc, LLMContextLengthError):
                self.client.stats.add(failures=1)  # refused again after trimming: the baseline gives up
            raise BaselineError(str(exc)) from None

    def _shrink(self, exc: LLMContextLengthError) -> float:
        """The share of the records to keep after ``exc``: what the server says fits, else half."""
        if exc.limit and exc.prompt_tokens and exc.limit > self.max_tokens:
            share = (exc.limit - self.max_tokens) / exc.prompt_tokens * _RETRY_SLACK
            if 0 < share < 1:
                return share
        return 0.5

    def _ask(self, case: LensCase, cap: int, *, trimmed: bool = False) -> BaselineAnswer:
        from pytest_lens.llm.repetition import at_repetition
        from pytest_lens.llm.replies import strip_reasoning

        first, blocks = stuffed_context(case.scope.stream, case.checkpoint, cap)
        context = "\n\n".join(blocks) if blocks else "(no records fit in the context)"
        messages = [
            {"role": "system", "content": BASELINE_SYSTEM_PROMPT},
            {"role": "user", "content": f"{context}\n\nQuestion: {case.question.prompt}"},
        ]
        # Once per question, whichever repetition asks first: the baseline is a reference point, not the system under test.
        with at_repetition(0):
            reply = self.client.complete(messages, max_tokens=self.max_tokens, purpose="baseline")
        tokens = sum(result_tokens(block + "\n\n") for block in blocks)
        return BaselineAnswer(strip_reasoning(reply.content), len(blocks), tokens, first, trimmed)


class OfflineBaseline:
    """The offline agent's extractive composer over the stuffed context (no LLM, no memory)."""

    name = "offline"

    def __init__(self, cap_tokens: int | None = None) -> None:
        self.cap_tokens = cap_tokens
        self._memo = _Memo()

    def answer(self, case: LensCase) -> BaselineAnswer:
        """Extract the sentences most related to the question from what fits in the context."""
        from pytest_lens.agents.offline import OfflineAgent

        cap = self.cap_tokens or case.budget.result_token_cap
        key = self._memo.key(case, cap)
        known = self._memo.get(key)
        if known is not None:
            return known
        first, blocks = stuffed_context(case.scope.stream, case.checkpoint, cap)
        documents = {f"record-{first + index}": block for index, block in enumerate(blocks)}
        text = OfflineAgent().compose(case.question.prompt, documents)
        tokens = sum(result_tokens(block + "\n\n") for block in blocks)
        return self._memo.put(key, BaselineAnswer(text, len(blocks), tokens, first))
