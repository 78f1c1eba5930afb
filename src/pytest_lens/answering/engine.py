"""Answering and scoring one case: stream, bridge, agent, metrics, composite."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_lens.agents.base import Agent, AgentQuestion
from pytest_lens.citations import parse_citations
from pytest_lens.contract.adapter import CapabilityManifest
from pytest_lens.controls.plan import is_oracle
from pytest_lens.datasets.models import KeyFact
from pytest_lens.execution.bridge import RefAliases, ToolBridge
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.execution.watchdog import current_question
from pytest_lens.llm.errors import LLMError
from pytest_lens.llm.repetition import at_repetition
from pytest_lens.progress import waiting
from pytest_lens.records.budget import BudgetTracker
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import ANSWER_CHARS, AdapterFault, FactCheck, MemoryContext, QuestionResult
from pytest_lens.scoring.composite import composite
from pytest_lens.scoring.metrics import FACTS_NOT_PRINTED, NO_SIGNAL_LABELS, AnswerEvidence, fact_matched, mechanical_metrics
from pytest_lens.scoring.retrieval import RetrievalEvidence, retrieval_metrics, search_rankings
from pytest_lens.scoring.scorer import CitedSources, Scoring
from pytest_lens.text import normalize

if TYPE_CHECKING:
    from pytest_lens.datasets.loader import LoadedScope

__all__ = ["AnsweredCase", "answer_case", "available_required", "run_case", "score_case", "skipped_result"]


def run_case(
    case: LensCase, runtime: LensRuntime, agent: Agent, scoring: Scoring, *, beat: Callable[[], None] | None = None
) -> QuestionResult:
    """Answer ``case`` through ``runtime``'s adapter and score the answer. Never raises for adapter or agent faults.

    ``beat``: called every few seconds while the answer and its scoring wait on the model or the adapter
    (:func:`~pytest_lens.progress.waiting`), not while the adapter is streamed to the checkpoint.
    """
    started = time.perf_counter()
    unavailable = runtime.slot(case.adapter).unavailable
    if unavailable is not None:
        return skipped_result(case, agent, unavailable)
    stream_faults = runtime.advance(case.adapter, case.scope, case.checkpoint)
    slot = runtime.slot(case.adapter)
    with waiting(beat) if beat is not None else nullcontext():
        answered = answer_case(case, slot.caller, stream_faults, agent, runtime.aliases(case.scope), started=started, context=slot.context)
        adapter_stats, stats_fault = runtime.stats_delta(case.adapter)
        if stats_fault is not None:
            answered.faults.append(stats_fault)
        return score_case(answered, scoring, adapter_stats)


@dataclass
class AnsweredCase:
    """What the agent did for one case: the part of a question that needs the adapter (see :func:`answer_case`)."""

    case: LensCase
    agent: Agent
    started: float
    answer: str
    agent_error: str | None
    faults: list[AdapterFault]
    tracker: BudgetTracker
    bridge: ToolBridge | None
    synthetic: dict[str, str]
    #: Why the question could not be measured (the agent's model could not be had), or ``None``.
    not_measured: str | None = None


def answer_case(
    case: LensCase,
    caller: AdapterCaller | None,
    stream_faults: Sequence[AdapterFault],
    agent: Agent,
    aliases: RefAliases,
    *,
    started: float | None = None,
    context: MemoryContext | None = None,
) -> AnsweredCase:
    """Let ``agent`` answer ``case`` through ``caller`` (an adapter already streamed to the case's checkpoint).

    Every adapter call of a question happens here; :func:`score_case` needs the adapter no more,
    so a concurrent runner may move the adapter on as soon as all of a checkpoint's questions are answered.
    ``caller`` is ``None`` when the adapter could not be constructed (``stream_faults`` say why).
    ``context`` is the adapter's block of context at the checkpoint (``context()``, fetched when it was prepared).
    """
    asking = current_question.set(list(case.item_key))  # which question a call stuck holding the GIL belongs to
    try:
        return _answer_case(case, caller, stream_faults, agent, aliases, started=started, context=context)
    finally:
        current_question.reset(asking)


def _answer_case(
    case: LensCase,
    caller: AdapterCaller | None,
    stream_faults: Sequence[AdapterFault],
    agent: Agent,
    aliases: RefAliases,
    *,
    started: float | None,
    context: MemoryContext | None,
) -> AnsweredCase:
    started = time.perf_counter() if started is None else started
    faults = list(stream_faults)
    tracker = BudgetTracker(case.budget)
    answer_text = ""
    agent_error: str | None = None
    not_measured: str | None = None
    synthetic: dict[str, str] = {}
    bridge: ToolBridge | None = None
    # A call of it never ended: the question goes to a rebuilt instance, or, when none can be had, is not asked.
    abandoned = caller.recovered() if caller is not None else None
    if abandoned is not None:
        if abandoned not in faults:
            faults.append(abandoned)
        caller = None
    if caller is not None and is_oracle(caller.adapter):
        # The ceiling control: the harness, never the agent, tells its view which evidence this question requires.
        required = available_required(case)
        caller = caller.scoped(lambda memory: memory.lens_oracle_view(required))
    if caller is not None:
        try:
            manifest = caller.capabilities()
        except AdapterCallError as exc:
            manifest = CapabilityManifest()
            faults.append(exc.fault)
        try:
            synthetic = caller.synthetic_refs()
        except AdapterCallError as exc:
            faults.append(exc.fault)
        # The adapter's block of context is a synthetic ref like its summaries: citing it is grounded.
        if context is not None:
            synthetic[context.ref_id] = context.text
        bridge = ToolBridge(caller, manifest, tracker, label_keys=case.scope.label_keys, aliases=aliases, context=context)
        try:
            with at_repetition(case.repetition):
                answer_text = agent.answer(AgentQuestion(case.question.question_id, case.question.prompt, case.repetition), bridge).text
        except LLMError as exc:  # the model could not be had: nothing was measured, the memory is not to blame
            not_measured = f"agent {agent.name!r} could not get an answer from its model: {exc}"
        except Exception as exc:  # an agent bug: record, keep the run going
            agent_error = f"{type(exc).__name__}: {exc}"
        faults.extend(bridge.faults)
    return AnsweredCase(case, agent, started, answer_text, agent_error, faults, tracker, bridge, synthetic, not_measured)


def available_required(case: LensCase) -> list[str]:
    """The question's required evidence stored by its checkpoint, in the dataset's order.

    Evidence that arrives after the checkpoint (a dataset defect) cannot be demanded.
    """
    scope = case.scope
    return [
        ref
        for ref in case.question.ground_truth.required_evidence_refs
        if (position := scope.position(ref)) is not None and position <= case.checkpoint
    ]


def score_case(answered: AnsweredCase, scoring: Scoring, adapter_stats: Mapping[str, int]) -> QuestionResult:
    """Score an answered case (mechanical metrics, then ``scoring``'s scorers, then the composite); touches no adapter."""
    case, bridge, tracker = answered.case, answered.bridge, answered.tracker
    scope, question = case.scope, case.question
    answer_text = answered.answer
    not_measured = answered.not_measured
    resolve = bridge.resolve_ref if bridge is not None else str
    citations = parse_citations(answer_text)
    cited = list(dict.fromkeys(resolve(ref) for ref in citations))
    returned = bridge.returned_refs if bridge is not None else []
    aliases = _aliases_used(bridge, citations) if bridge is not None else {}
    required = available_required(case)
    # Key facts no available episode prints cannot be matched, only judged: fact_recall leaves them out (absent, not 0).
    key_facts = [fact for fact in question.ground_truth.key_facts if scope.fact_printed(fact, case.checkpoint)]
    stored = scope.available_refs(case.checkpoint)
    known = stored | answered.synthetic.keys()
    evidence = AnswerEvidence(
        answer=answer_text,
        cited=cited,
        returned=set(returned),
        known=known,
        required=required,
        key_facts=key_facts,
        violations=len(tracker.violations),
    )
    metrics = mechanical_metrics(evidence, resolve=resolve)
    records = bridge.records if bridge is not None else []
    rankings = search_rankings(records)
    metrics.update(retrieval_metrics(RetrievalEvidence(rankings, required, stored, cited, evidence.grounded, scope.signal_labels)))
    absent: dict[str, str] = {}
    if question.ground_truth.key_facts and not key_facts:
        absent["fact_recall"] = FACTS_NOT_PRINTED
    if scope.signal_labels is None:
        absent["signal_precision"] = NO_SIGNAL_LABELS
    details: dict[str, Any] = {}
    scoring_failures: list[str] = []
    if not_measured is not None:  # an answer never given is not scored: no metric, not even a 0
        metrics = {}
    else:
        for scorer in scoring.scorers:
            with at_repetition(case.repetition):
                if getattr(scorer, "reads_citations", False):  # the V2 scorer: which citations resolve, and their texts
                    output = scorer.score(case, answer_text, dict(metrics), sources=_cited_sources(scope, cited, known, answered.synthetic))  # type: ignore[call-arg]
                else:
                    output = scorer.score(case, answer_text, dict(metrics))
            metrics.update(output.metrics)
            if output.details:
                details[scorer.name] = output.details
            scoring_failures.extend(f"{scorer.name}: {failure}" for failure in output.failures)
    score = composite(metrics, scoring.weights, scoring.gates)
    return QuestionResult(
        adapter=case.adapter,
        scope_id=scope.scope_id,
        checkpoint=case.checkpoint,
        question_id=question.question_id,
        question_type=question.question_type,
        category=question.category,
        suite=scope.suite,
        budget=case.budget.name,
        agent=answered.agent.name,
        prompt=question.prompt,
        canonical_answer=question.ground_truth.canonical_answer,
        key_facts=_fact_checks(question.ground_truth.key_facts, answer_text) if not_measured is None else [],
        # Scored whole, stored cut: a runaway answer must not make the artifact and every transcript that large.
        answer=answer_text[:ANSWER_CHARS],
        answer_chars=len(answer_text) if len(answer_text) > ANSWER_CHARS else None,
        cited_refs=cited,
        returned_refs=returned,
        required_refs=required,
        aliases=aliases,
        tool_calls=records,
        context=bridge.context if bridge is not None else None,
        result_tokens=tracker.result_tokens,
        turns=tracker.turns,
        agent_tokens=tracker.agent_tokens,
        violations=tracker.violations,
        faults=answered.faults,
        agent_error=answered.agent_error,
        not_measured=not_measured,
        malformed_tool_calls=bridge.malformed_calls if bridge is not None else 0,
        defects=list(scope.defects.get(question.question_id, ())),
        metrics={name: round(value, 6) for name, value in metrics.items()},
        absent_metrics=absent if not_measured is None else {},
        composite=round(score.value, 6) if not_measured is None else 0.0,
        gated=score.gated and not_measured is None,
        scorer_details=details,
        adapter_stats=dict(adapter_stats),
        scoring_failures=scoring_failures,
        duration_s=round(time.perf_counter() - answered.started, 4),
        repetition=case.repetition,
    )


def _cited_sources(scope: LoadedScope, cited: Sequence[str], known: Collection[str], synthetic: Mapping[str, str]) -> CitedSources:

    valid = [ref for ref in cited if ref in known]
    texts = {episode.episode_id: episode.text for episode in scope.stream if episode.episode_id in valid}
    texts.update({ref: synthetic[ref] for ref in valid if ref in synthetic})
    return CitedSources(cited=cited, valid=valid, texts=texts)


def _fact_checks(key_facts: Sequence[KeyFact], answer: str) -> list[FactCheck]:
    """Each key fact and whether the answer states it, as ``fact_recall`` judged it."""
    normalized = normalize(answer)
    return [FactCheck(fact=fact.fact, found=fact_matched(fact, normalized)) for fact in key_facts]


def _aliases_used(bridge: ToolBridge, citations: Sequence[str]) -> dict[str, str]:
    """Alias -> stored id for every alias the agent saw or cited (empty when the run uses stored ids)."""
    if not bridge.aliases.enabled:
        return {}
    shown = [bridge.aliases.to_agent(ref) for ref in bridge.returned_refs]
    return {alias: real for alias in dict.fromkeys([*shown, *citations]) if (real := bridge.resolve_ref(alias)) != alias}


def skipped_result(case: LensCase, agent: Agent, reason: str) -> QuestionResult:
    """The record of a question not asked because its adapter cannot run here."""
    question = case.question
    return QuestionResult(
        adapter=case.adapter,
        scope_id=case.scope.scope_id,
        suite=case.scope.suite,
        checkpoint=case.checkpoint,
        question_id=question.question_id,
        question_type=question.question_type,
        category=question.category,
        budget=case.budget.name,
        agent=agent.name,
        prompt=question.prompt,
        skipped=reason,
        repetition=case.repetition,
    )
