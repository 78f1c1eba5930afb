"""A question's transcript: what was asked, every tool call, the answer with its citations, and how it scored.

One model read by both renderers (the terminal's ``lens show`` and the HTML report), so they
always tell the same story. Built from a :class:`QuestionResult` and the run's kept episode texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_lens.citations import split_citations
from pytest_lens.records.cases import case_id
from pytest_lens.records.results import EpisodeText, QuestionResult, RefHit, RunArtifact, ScopeEvidence, ToolCallRecord
from pytest_lens.scoring.composite import HardGate
from pytest_lens.scoring.headline import QuestionHeadlines, gates_of

__all__ = [
    "OUTCOMES",
    "AnswerPart",
    "CitationMark",
    "EvidenceRow",
    "Outcome",
    "Transcript",
    "build_transcripts",
    "call_signature",
    "hit_text",
    "outcome_of",
    "transcripts",
]

Outcome = Literal["failed", "gated", "ok", "skipped"]
#: Outcomes from worst to best; filters and "worst" lists use this order.
OUTCOMES: tuple[Outcome, ...] = ("failed", "gated", "ok", "skipped")


def call_signature(call: ToolCallRecord, limit: int = 160) -> str:
    """``memory_search(query="...", limit=10)``, arguments shortened to ``limit`` characters in all."""
    args = ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in call.arguments.items())
    if len(args) > limit:
        args = args[: limit - 1] + "…"
    return f"{call.name}({args})"


def hit_text(hit: RefHit) -> str:
    """What a hit's row shows: its snippet, or (a ref returned before) how much text the return added."""
    if hit.snippet:
        return hit.snippet
    if hit.new_chars:
        return f"({hit.new_chars:,} new characters beyond what earlier calls returned)"
    if hit.new_chars == 0:
        return "(no new text: see its first return above)"
    return "(text not kept here: see its first return above)"


def outcome_of(result: QuestionResult) -> Outcome:
    """``failed`` (adapter fault, agent error, or not measured), ``gated`` (a hard gate zeroed it), ``ok``, or ``skipped`` (not asked)."""
    if result.skipped is not None:
        return "skipped"
    if result.failed:
        return "failed"
    return "gated" if result.gated else "ok"


@dataclass(frozen=True)
class EvidenceRow:
    """One ref that mattered to a question: required by the dataset, cited by the answer, or returned by a tool."""

    ref_id: str
    required: bool
    cited: bool
    returned: bool
    #: Index of the first tool call that returned it (``None``: never returned).
    first_call: int | None
    episode: EpisodeText | None

    @property
    def grounded(self) -> bool:
        """Cited and returned to the agent (what ``evidence_grounding`` credits; existence is checked at run time)."""
        return self.cited and self.returned

    @property
    def marks(self) -> str:
        """``R C T``-style flags: required, cited, returned (``-`` where not)."""
        return "".join(flag if on else "-" for flag, on in (("R", self.required), ("C", self.cited), ("T", self.returned)))

    @property
    def verdict(self) -> str:
        """What happened to this ref, in words."""
        if self.required and self.cited and self.returned:
            return "required, found and cited"
        if self.required and self.returned:
            return "required, returned but not cited"
        if self.required and self.cited:
            return "required, cited without being returned (not grounded)"
        if self.required:
            return "required, never returned"
        if self.cited and not self.returned:
            return "cited without being returned (not grounded)"
        if self.cited:
            return "cited (not required)"
        return "returned, not cited"


@dataclass(frozen=True)
class CitationMark:
    """One ref id as the answer cited it."""

    shown: str
    ref_id: str
    required: bool
    grounded: bool
    has_text: bool


#: A piece of the answer: plain text, or one ``[...]`` group of citations.
AnswerPart = str | tuple[CitationMark, ...]


@dataclass(frozen=True)
class Transcript:
    """One question's result, arranged for reading."""

    result: QuestionResult
    #: The question's pytest id (``adapter-scope-cpNNN[-budget]-question``).
    test_id: str
    #: Episodes in the scope's stream (``None`` when the artifact does not say).
    stream_length: int | None
    texts: Mapping[str, EpisodeText]
    #: A stable HTML id, unique within its run (repeated results of one question are numbered).
    anchor: str
    #: Why a hard gate zeroed the composite (``evidence_grounding 0.000 < 0.5``); empty when none did.
    gate_reasons: tuple[str, ...] = ()
    #: The question's headline score: what its section (LENS, or its suite) ranks it by; ``None``: its composite.
    score: float | None = None
    #: The question has none of its headline's metrics (no required evidence to rank): no headline, no worst rank.
    unscored: bool = False

    @property
    def headline(self) -> float:
        """The question's headline score (its composite when no headline was given)."""
        return self.result.composite if self.score is None else self.score

    @property
    def outcome(self) -> Outcome:
        """See :func:`outcome_of`."""
        return outcome_of(self.result)

    @property
    def calls(self) -> list[ToolCallRecord]:
        """Tool calls in the order they were made."""
        return sorted(self.result.tool_calls, key=lambda call: call.index)

    def evidence(self) -> list[EvidenceRow]:
        """Required refs first (in dataset order), then other cited refs, then refs only returned, by first return."""
        r = self.result
        first_call: dict[str, int] = {}
        for call in self.calls:
            for ref in call.returned_refs:
                first_call.setdefault(ref, call.index)
        returned = set(r.returned_refs) | set(first_call)
        order = list(dict.fromkeys([*r.required_refs, *r.cited_refs, *r.returned_refs, *first_call]))
        required, cited = set(r.required_refs), set(r.cited_refs)
        return [EvidenceRow(ref, ref in required, ref in cited, ref in returned, first_call.get(ref), self.texts.get(ref)) for ref in order]

    def returned_without_hits(self, call: ToolCallRecord) -> list[tuple[str, list[str]]]:
        """``(label, refs)`` for the refs ``call`` returned that its hits leave out, each label saying what they carried.

        Those are refs that added no text (returned again, or returned as a bare id); artifacts written before
        hits counted new characters (:attr:`RefHit.new_chars`) cannot tell, and their label says so.
        """
        shown = {hit.ref_id for hit in call.hits}
        others = [ref for ref in call.returned_refs if ref not in shown]
        if not others:
            return []
        counted = any(hit.new_chars is not None for earlier in self.calls for hit in earlier.hits)
        if not counted:
            return [("returned again (its text is not kept in this record; see earlier calls)", others)]
        before = {ref for earlier in self.calls if earlier.index < call.index for ref in earlier.returned_refs}
        groups = [
            ("returned again, no new text (see earlier calls)", [ref for ref in others if ref in before]),
            ("returned without text", [ref for ref in others if ref not in before]),
        ]
        return [(label, refs) for label, refs in groups if refs]

    def answer_parts(self) -> list[AnswerPart]:
        """The answer split into text and citation groups, each citation resolved to the stored ref."""
        r = self.result
        returned = set(r.returned_refs)
        required = set(r.required_refs)
        parts: list[AnswerPart] = []
        for piece in split_citations(r.answer):
            if isinstance(piece, str):
                parts.append(piece)
                continue
            marks = []
            for shown in piece:
                ref = r.aliases.get(shown, shown)
                marks.append(CitationMark(shown, ref, ref in required, ref in returned, ref in self.texts))
            parts.append(tuple(marks))
        return parts

    def problems(self) -> list[tuple[str, str]]:
        """``(kind, text)`` for everything that went wrong: faults, agent errors, violations, scoring failures, defects."""
        r = self.result
        found = [("fault", fault.describe()) for fault in r.faults]
        if r.not_measured:  # the model could not be had: nothing was measured, nothing is the memory's fault
            found.append(("not-measured", r.not_measured))
        if r.agent_error:
            found.append(("fault", f"agent {r.agent!r} failed: {r.agent_error}"))
        for violation in r.violations:
            at = f", tool call {violation.tool_call}" if violation.tool_call is not None else ""
            found.append(("violation", f"budget violation ({violation.kind}{at}): {violation.detail}"))
        found.extend(("violation", f"scoring failure: {failure}") for failure in r.scoring_failures)
        if r.malformed_tool_calls:
            found.append(("violation", f"{r.malformed_tool_calls} malformed tool call(s): each got an error result"))
        found.extend(("defect", f"dataset defect: {defect}") for defect in r.defects)
        return found

    def view(self) -> dict[str, Any]:
        """Everything a page needs to lay the transcript out, as JSON-ready data (the HTML report renders it)."""
        r = self.result
        required, cited = set(r.required_refs), set(r.cited_refs)
        return {
            "anchor": self.anchor,
            "test_id": self.test_id,
            "adapter": r.adapter,
            "budget": r.budget,
            "scope": r.scope_id,
            "checkpoint": r.checkpoint,
            "stream_length": self.stream_length,
            "type": r.question_type,
            "category": r.category,
            "suite": r.suite,
            "agent": r.agent,
            "judge": r.judge,
            "outcome": self.outcome,
            "skipped": r.skipped,
            "composite": r.composite,
            "headline": self.headline,
            "gate_reasons": list(self.gate_reasons),
            "duration_s": r.duration_s,
            "prompt": r.prompt,
            "canonical_answer": r.canonical_answer,
            "key_facts": [[fact.fact, fact.found] for fact in r.key_facts],
            "usage": {"calls": len(r.tool_calls), "result_tokens": r.result_tokens, "turns": r.turns, "agent_tokens": r.agent_tokens},
            "calls": [
                {
                    "index": call.index,
                    "turn": call.turn,
                    "signature": call_signature(call, limit=600),
                    "status": call.status,
                    "error": call.error,
                    "tokens": call.result_tokens,
                    "tokens_left": call.result_tokens_left,
                    "calls_left": call.calls_left,
                    "ms": call.duration_ms,
                    "hits": [
                        [hit.ref_id, hit.score, hit_text(hit), hit.ref_id in required, hit.ref_id in cited, hit.ref_id in self.texts]
                        for hit in call.hits
                    ],
                    "returned": [
                        [label, [[ref, ref in required, ref in cited, ref in self.texts] for ref in refs]]
                        for label, refs in self.returned_without_hits(call)
                    ],
                }
                for call in self.calls
            ],
            "answer": [
                part if isinstance(part, str) else [[c.shown, c.ref_id, c.grounded, c.required, c.has_text] for c in part]
                for part in self.answer_parts()
            ],
            "evidence": [
                [row.ref_id, row.required, row.cited, row.returned, row.first_call, row.verdict, row.episode and row.episode.timestamp]
                for row in self.evidence()
            ],
            "aliases": r.aliases,
            "metrics": r.metrics,
            "scorers": r.scorer_details,
            "problems": self.problems(),
        }


def transcripts(artifact: RunArtifact) -> list[Transcript]:
    """Transcripts of every result of ``artifact``, in its order, with test ids and anchors unique in the run."""
    return build_transcripts(artifact.results, artifact.evidence, gates_of(artifact.run), QuestionHeadlines.of_run(artifact.run))


def build_transcripts(
    results: Sequence[QuestionResult],
    evidence: Mapping[str, ScopeEvidence],
    gates: Sequence[HardGate],
    headlines: Callable[[QuestionResult], float | None] | None = None,
) -> list[Transcript]:
    """Transcripts of ``results`` in order; ``evidence`` gives stream lengths (for test ids) and episode texts.

    ``headlines`` scores each question by its section's headline (:class:`QuestionHeadlines`); without it, by its composite.
    """
    several_budgets = len({r.budget for r in results}) > 1
    repeated = any(r.repetition for r in results)  # --lens-repeat: test ids end in -r1, -r2...
    seen: dict[str, int] = {}
    found = []
    for result in results:
        scope = evidence.get(result.scope_id)
        length = scope.episodes if scope is not None else None
        test_id = case_id(
            result.adapter,
            result.scope_id,
            length if length is not None else result.checkpoint,
            result.checkpoint,
            result.question_id,
            result.budget if several_budgets else None,
            result.repetition + 1 if repeated else None,
        )
        anchor = "t-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in test_id)
        seen[anchor] = count = seen.get(anchor, 0) + 1
        texts = scope.texts if scope is not None else {}
        reasons = tuple(reason for gate in gates if (reason := gate.fails(result.metrics))) if result.gated else ()
        score = headlines(result) if headlines is not None and result.measured else None
        unscored = headlines is not None and result.measured and score is None
        found.append(Transcript(result, test_id, length, texts, anchor if count == 1 else f"{anchor}-{count}", reasons, score, unscored))
    return found
