"""Scripted policies: deterministic stand-ins for a model, one per role pytest-lens gives an LLM."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lens_fixtures.openai_server.extraction import ExtractionPolicy, extraction_kind
from lens_fixtures.openai_server.extraction_cognee import CogneePolicy, cognee_schema
from lens_fixtures.openai_server.extraction_letta import LettaAgentPolicy, is_letta_request
from lens_fixtures.openai_server.folds import FoldPolicy, policy_kind
from lens_fixtures.openai_server.requests import ChatRequest, Policy, Reply, json_value
from pytest_lens.citations import parse_citations, split_sentences
from pytest_lens.text import content_terms, normalize

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Question

__all__ = [
    "BaselinePolicy",
    "ChatRequest",
    "FactCheckPolicy",
    "JudgePolicy",
    "LensPolicy",
    "LongMemEvalJudgePolicy",
    "MemeJudgePolicy",
    "Policy",
    "Reply",
    "RetrievalAgentPolicy",
    "ScriptedAgentPolicy",
    "StochasticAgentPolicy",
    "SummaryPolicy",
    "SupportPolicy",
    "classify",
    "context_documents",
]

NO_EVIDENCE = "I could not find sufficient information in memory to answer this question."
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_NO_BRACKETS = str.maketrans("[]", "()")


def classify(request: ChatRequest) -> str:
    """The role a request asks the model to play.

    ``agent``, ``judge`` (LENS's pairwise judge), ``meme_judge``, ``lme_judge`` (LongMemEval's), ``baseline``,
    ``summary``, ``hierarchy`` (the hierarchical adapter's summaries), ``policy`` (the memory policies' folds),
    ``extraction`` (mem0's, GraphRAG-light's and Graphiti's), ``cognee`` (Cognee's structured output), ``letta`` (a Letta agent's step),
    ``fact_judge`` and ``support_judge`` (LENS V2's
    per-fact and evidence-support judges) or ``other``.
    """
    from lens_fixtures.adapters.compaction import SUMMARY_SYSTEM_PROMPT
    from lens_fixtures.adapters.hierarchical import PROMPTS as HIERARCHY_PROMPTS
    from pytest_lens.agents.base import SYSTEM_PROMPT
    from pytest_lens.judging.baseline import BASELINE_SYSTEM_PROMPT
    from pytest_lens.suites.longmemeval import JUDGE_PREAMBLE as LME_PREAMBLE
    from pytest_lens.suites.meme.llm_judge import JUDGE_PREAMBLE

    system = request.system
    if is_letta_request(request):
        return "letta"
    if request.tool_names or system == SYSTEM_PROMPT:
        return "agent"
    if policy_kind(system) is not None:
        return "policy"
    if extraction_kind(request) is not None:
        return "extraction"
    if cognee_schema(request) is not None:
        return "cognee"
    if request.first_user.startswith("You are comparing two analyst responses"):
        return "judge"
    if request.first_user.startswith("You are checking whether an analyst's answer contains"):
        return "fact_judge"
    if request.first_user.startswith("You are checking whether the sources an analyst cited"):
        return "support_judge"
    if request.first_user.startswith(JUDGE_PREAMBLE):
        return "meme_judge"
    if request.first_user.startswith(LME_PREAMBLE):
        return "lme_judge"
    if system == BASELINE_SYSTEM_PROMPT:
        return "baseline"
    if system == SUMMARY_SYSTEM_PROMPT:
        return "summary"
    if system in HIERARCHY_PROMPTS:
        return "hierarchy"
    return "other"


def extractive_answer(question: str, documents: Mapping[str, str], *, cite: bool = True) -> str:
    """One line per document: its line sharing most words with the question, dated, and cited as ``[ref]``."""
    terms = set(content_terms(question))
    lines = []
    for ref, text in documents.items():
        date_match = _DATE.search(text[:200])
        best, best_score = "", 0
        for raw in text.splitlines():
            line = raw.strip().lstrip("-*• ").strip()
            if not line or line.startswith("#"):
                continue
            score = len(terms & set(content_terms(line)))
            if score > best_score:
                best, best_score = line, score
        if best_score:
            shown = f"{date_match.group(1)}: {best}" if date_match and date_match.group(1) not in best else best
            shown = shown.translate(_NO_BRACKETS)
            lines.append(f"- {shown} [{ref}]" if cite else f"- {shown} ({ref})")
    return "\n".join(lines) if lines else NO_EVIDENCE


_CONTEXT_BLOCK = re.compile(r'<memory_context ref_id="(?P<ref>[^"]+)">\n(?P<text>.*?)\n</memory_context>', re.DOTALL)


def context_documents(system: str) -> dict[str, str]:
    """The memory's block of context in an agent's system prompt, as ``{ref_id: text}`` (empty when there is none)."""
    match = _CONTEXT_BLOCK.search(system)
    return {match.group("ref"): match.group("text")} if match else {}


@dataclass
class RetrievalAgentPolicy:
    """Search the question, batch-retrieve the top ``top_k`` hits, answer citing them.

    It reads its progress from the conversation, so error results (bad arguments,
    budget refusals) simply make it try the step again; when tools are switched off
    (``tool_choice="none"``) it answers with what it has.
    """

    top_k: int = 3
    search_limit: int = 10

    def __call__(self, request: ChatRequest) -> Reply:
        """The next step of the conversation."""
        question = request.first_user
        hits: list[tuple[str, str]] = []
        documents: dict[str, str] = {}
        searches = retrievals = 0
        for name, _, content in request.tool_exchanges():
            payload = json_value(content)
            if name == "memory_search":
                searches += 1
                if isinstance(payload, list):
                    hits = [
                        (h["ref_id"], str(h.get("text", ""))) for h in payload if isinstance(h, dict) and isinstance(h.get("ref_id"), str)
                    ]
            elif name == "memory_retrieve":
                retrievals += 1
                if isinstance(payload, dict) and isinstance(payload.get("ref_id"), str) and isinstance(payload.get("text"), str):
                    documents[payload["ref_id"]] = payload["text"]
            elif name == "batch_retrieve":
                retrievals += 1
                items = payload.get("documents", []) if isinstance(payload, dict) else []
                for doc in items:
                    if isinstance(doc, dict) and isinstance(doc.get("ref_id"), str) and isinstance(doc.get("text"), str):
                        documents[doc["ref_id"]] = doc["text"]
        if request.may_call_tools:
            if not hits and searches < 2:
                query = question if searches == 0 else " ".join(content_terms(question)) or question
                return Reply(tool_calls=(("memory_search", {"query": query, "limit": self.search_limit}),))
            wanted = [ref for ref in self.choose(request, [ref for ref, _ in hits]) if ref not in documents]
            if wanted and retrievals < 2:
                if "batch_retrieve" in request.tool_names:
                    return Reply(tool_calls=(("batch_retrieve", {"ref_ids": wanted}),))
                return Reply(tool_calls=tuple(("memory_retrieve", {"ref_id": ref}) for ref in wanted))
        # The memory's block of context in the system prompt is read like a retrieved document, first.
        return Reply(content=extractive_answer(question, {**context_documents(request.system), **(documents or dict(hits))}))

    def choose(self, request: ChatRequest, hits: list[str]) -> list[str]:
        """The hits to retrieve and cite: the best ``top_k``."""
        return hits[: self.top_k]


@dataclass
class StochasticAgentPolicy(RetrievalAgentPolicy):
    """A sampling model: retrieves and cites ``top_k`` hits drawn at random from the search results.

    The draw is seeded by the request's ``seed`` and the question, so one seed always gives the same
    answer (cached runs replay it) and distinct seeds (``--lens-repeat``) give different answers.
    """

    def choose(self, request: ChatRequest, hits: list[str]) -> list[str]:
        """``top_k`` hits sampled without replacement, in search order."""
        import random

        rng = random.Random(f"{request.body.get('seed')}/{request.first_user}")
        picked = set(rng.sample(range(len(hits)), min(self.top_k, len(hits))))
        return [ref for index, ref in enumerate(hits) if index in picked]


@dataclass
class ScriptedAgentPolicy:
    """Plays a fixed script: turn *n* (counted from the conversation) gets ``turns[n]``.

    A turn is a final answer (a string) or tool calls ``[(name, arguments), ...]``,
    where arguments may be raw (even malformed) JSON text. Past the end of the
    script the last entry repeats.
    """

    turns: Sequence[str | Sequence[tuple[str, Mapping[str, Any] | str]]]

    def __call__(self, request: ChatRequest) -> Reply:
        """The scripted reply for the current turn."""
        if not self.turns:
            return Reply(content="")
        turn = self.turns[min(request.assistant_turns, len(self.turns) - 1)]
        if isinstance(turn, str):
            return Reply(content=turn)
        return Reply(tool_calls=tuple(turn))


_JUDGE = re.compile(
    r"(Finding|Criterion) to evaluate: (?P<finding>.*?)\n\nResponse A:\n(?P<a>.*?)\n\nResponse B:\n(?P<b>.*?)\n\nWhich response", re.DOTALL
)
_ALIASES = re.compile(r"^(?P<fact>.*?) \(equivalent wording: (?P<aliases>.*)\)$", re.DOTALL)


@dataclass
class JudgePolicy:
    """Answers pytest-lens judge prompts with ``A``, ``B`` or ``TIE``, deterministically.

    Facts: the response covering more of the finding's words (best of its wordings) wins.
    Insight: more distinct citations wins. Reasoning: more cited sentences wins. Equal is TIE.

    ``always``: a positionally biased judge that answers this token (e.g. ``"A"``) whatever the responses say.
    """

    always: str | None = None

    def __call__(self, request: ChatRequest) -> Reply:
        """The verdict for the judge prompt in the first user message."""
        if self.always is not None:
            return Reply(content=self.always)
        match = _JUDGE.search(request.first_user)
        if match is None:
            return Reply(content="TIE")
        finding, text_a, text_b = match.group("finding"), match.group("a"), match.group("b")
        if match.group(1) == "Finding":
            score_a, score_b = _coverage(finding, text_a), _coverage(finding, text_b)
        elif finding.startswith("Insight"):
            score_a, score_b = float(len(parse_citations(text_a))), float(len(parse_citations(text_b)))
        else:
            score_a = float(sum(1 for s in split_sentences(text_a) if s.citations))
            score_b = float(sum(1 for s in split_sentences(text_b) if s.citations))
        if abs(score_a - score_b) < 1e-9:
            return Reply(content="TIE")
        return Reply(content="A" if score_a > score_b else "B")


def _coverage(finding: str, text: str) -> float:
    aliased = _ALIASES.match(finding)
    patterns = [aliased.group("fact"), *aliased.group("aliases").split("; ")] if aliased else [finding]
    words = set(content_terms(text))
    best = 0.0
    for pattern in patterns:
        terms = content_terms(pattern)
        if terms:
            best = max(best, len(words & set(terms)) / len(terms))
        elif normalize(pattern) and normalize(pattern) in normalize(text):
            best = 1.0
    return best


_FACT_CHECK = re.compile(r"Finding to check: (?P<finding>.*?)\n\nAnswer:\n(?P<answer>.*?)\n\nDoes the answer", re.DOTALL)
_SUPPORT = re.compile(r"\nAnswer:\n(?P<answer>.*?)\n\nCited sources:\n(?P<sources>.*?)\n\nHow well", re.DOTALL)


@dataclass
class FactCheckPolicy:
    """Answers LENS V2's per-fact question: ``YES`` when the answer covers at least ``threshold`` of the finding's words.

    ``prose_for``: findings (substrings) answered with a sentence instead of a verdict, every time (a judge
    that will not follow the format).
    """

    threshold: float = 0.6
    prose_for: tuple[str, ...] = ()

    def __call__(self, request: ChatRequest) -> Reply:
        """The verdict for the fact-check prompt in the first user message."""
        match = _FACT_CHECK.search(request.first_user)
        if match is None:
            return Reply(content="NO")
        finding = match.group("finding")
        if any(part in finding for part in self.prose_for):
            return Reply(content="The answer touches on this finding in places, but I would not say it states it outright.")
        return Reply(content="YES" if _coverage(finding, match.group("answer")) >= self.threshold else "NO")


@dataclass
class SupportPolicy:
    """Rates evidence support 0-4: the share of the answer's cited sentences whose content words all appear in the sources."""

    def __call__(self, request: ChatRequest) -> Reply:
        """The rating for the support prompt in the first user message."""
        match = _SUPPORT.search(request.first_user)
        if match is None:
            return Reply(content="0")
        sources = set(content_terms(match.group("sources")))
        sentences = [s for s in split_sentences(match.group("answer")) if content_terms(s.text)]
        if not sentences:
            return Reply(content="0")
        supported = sum(1 for s in sentences if len(set(content_terms(s.text)) - sources) <= len(set(content_terms(s.text))) // 4)
        return Reply(content=str(round(4 * supported / len(sentences))))


_RECORD = re.compile(r"^### Record (\d+) \(([^)]*)\)\n", re.MULTILINE)


@dataclass
class BaselinePolicy:
    """The naive baseline's model: an extractive answer from the records stuffed into the prompt."""

    def __call__(self, request: ChatRequest) -> Reply:
        """Answer the question after ``Question:`` from the records before it."""
        text = request.messages[-1].get("content", "") if request.messages else ""
        context, _, question = str(text).rpartition("\n\nQuestion: ")
        documents: dict[str, str] = {}
        parts = _RECORD.split(context)
        for index in range(1, len(parts) - 2, 3):
            documents[f"record {parts[index]}"] = f"{parts[index + 1]}\n{parts[index + 2]}"
        return Reply(content=extractive_answer(question, documents, cite=False))


@dataclass
class SummaryPolicy:
    """The compaction adapter's summariser: the previous summary plus every new line that carries a number."""

    max_lines: int = 40

    def __call__(self, request: ChatRequest) -> Reply:
        """The updated summary (the newest ``max_lines`` lines)."""
        text = str(request.messages[-1].get("content", "")) if request.messages else ""
        previous, _, records = text.partition("\n\nNew records:\n")
        previous = previous.removeprefix("Current summary:\n")
        lines = [] if previous.strip() == "(empty)" else [line for line in previous.splitlines() if line.strip()]
        stamp = ""
        for raw in records.splitlines():
            if raw.startswith("### Record ("):
                stamp = raw.removeprefix("### Record (").rstrip(")")[:10]
                continue
            line = raw.strip().lstrip("-*• ").strip()
            if line and not line.startswith("#") and any(ch.isdigit() for ch in line):
                lines.append(f"- {stamp}: {line}" if stamp else f"- {line}")
        return Reply(content="\n".join(lines[-self.max_lines :]) or "(nothing to summarise yet)")


@dataclass
class HierarchyPolicy:
    """The hierarchical adapter's summariser: every line of the input that carries a number; ``malformed``: no text."""

    max_lines: int = 30
    malformed: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """The summary (the first ``max_lines`` such lines, bullets and headings dropped)."""
        if self.malformed:
            return Reply(content="")
        text = str(request.messages[-1].get("content", "")) if request.messages else ""
        lines = [raw.strip().lstrip("-*• ").strip() for raw in text.splitlines()]
        kept = [line for line in lines if line and not line.startswith("#") and any(ch.isdigit() for ch in line)]
        return Reply(content="\n".join(kept[: self.max_lines]) or "(nothing of note)")


MemeFlaw = Literal["prose", "missing_field"]


@dataclass(frozen=True)
class MemePrompt:
    """A MEME judge prompt read back: prompt kind (``before`` or the task), question, value lists by label, answer."""

    kind: str
    question: str
    reference: str
    values: dict[str, list[str]]
    answer: str

    @classmethod
    def parse(cls, prompt: str) -> MemePrompt:
        """Read a prompt made by :func:`pytest_lens.suites.meme.llm_judge.render_prompt`; :class:`ValueError` if it is not one."""
        from pytest_lens.suites.meme.llm_judge import ANSWER_CLOSE, ANSWER_OPEN, PROMPT_KINDS

        head, opened, rest = prompt.partition(f"\n{ANSWER_OPEN}\n")
        answer, closed, _ = rest.rpartition(f"\n{ANSWER_CLOSE}\n")
        titles = {title: kind for kind, (title, _) in PROMPT_KINDS.items()}
        fields: dict[str, str] = {}
        values: dict[str, list[str]] = {}
        label = None
        for line in head.splitlines():
            if line.startswith("- ") and label is not None:
                values[label].append(line[2:])
                continue
            label = None
            key, sep, value = line.partition(": ")
            if sep and key in ("Task", "Question", "Reference answer"):
                fields[key] = value
            elif line.endswith(":") and not line.startswith("The assistant"):
                label = line[:-1]
                values[label] = []
        kind = titles.get(fields.get("Task", ""))
        if not opened or not closed or kind is None:
            raise ValueError("not a MEME judge prompt")
        return cls(kind, fields.get("Question", ""), fields.get("Reference answer", ""), values, answer)

    def question_model(self) -> Question:
        """The probe as a :class:`~pytest_lens.datasets.models.Question`, for the mechanical judge."""
        from pytest_lens.datasets.models import GroundTruth, KeyFact, Question
        from pytest_lens.suites.meme.llm_judge import VALUE_LABELS

        picked: dict[str, list[str]] = {"expected": [], "stale": []}
        for label, which in VALUE_LABELS[self.kind]:
            picked[which] += self.values.get(label, [])
        return Question(
            question_id="judged",
            scope_id="judged",
            checkpoint_after=0,
            question_type=self.kind,
            prompt=self.question or "?",
            ground_truth=GroundTruth(canonical_answer=self.reference, key_facts=tuple(KeyFact(fact=v) for v in picked["expected"])),
            phase="before" if self.kind == "before" else "after",
            stale_values=tuple(picked["stale"]),
        )


@dataclass
class MemeJudgePolicy:
    """Answers MEME judge prompts in the paper's JSON format by MEME's mechanical rules.

    The verdict is :func:`~pytest_lens.suites.meme.tasks.judge_probe`'s (so an LLM-judged run scores
    like the mechanical one); Aggregation lists every value with whether it is mentioned.

    Misbehaving variants, for testing the judge's repair and failure paths: ``flaw="prose"`` answers
    in prose (no JSON), ``flaw="missing_field"`` leaves out ``correct`` (``results`` for Aggregation);
    only for prompt kinds in ``flawed_kinds`` (``before``, ``tracking``, ...; empty: every kind), and
    with ``repairable`` only on the first attempt, so the repair request gets a valid verdict.
    """

    flaw: MemeFlaw | None = None
    flawed_kinds: tuple[str, ...] = ()
    repairable: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """The verdict for the MEME judge prompt in the first user message."""
        from pytest_lens.suites.meme.tasks import judge_probe, mentions

        prompt = MemePrompt.parse(request.first_user)
        question = prompt.question_model()
        verdict = judge_probe(question, prompt.answer)
        reply: dict[str, Any] = {"correct": verdict.passed, "reason": f"Mechanical rule: {verdict.reason}."}
        if prompt.kind == "aggregation":
            results = [{"value": fact.fact, "present": mentions(prompt.answer, fact.fact)} for fact in question.ground_truth.key_facts]
            reply = {"results": results, **reply}
        flawed = self.flaw is not None and (not self.flawed_kinds or prompt.kind in self.flawed_kinds)
        if flawed and not (self.repairable and request.assistant_turns > 0):
            if self.flaw == "prose":
                return Reply(content=f"The answer is {'correct' if verdict.passed else 'incorrect'}: {verdict.reason}.")
            reply.pop("results" if prompt.kind == "aggregation" else "correct")
        return Reply(content=json.dumps(reply))


@dataclass
class LongMemEvalJudgePolicy:
    """Answers LongMemEval judge prompts with a JSON verdict by the suite's mechanical proxy.

    Correct when the answer contains the correct answer (normalised), or, for an abstention
    question (an ``Explanation:`` instead of a ``Correct answer:``), when it expresses uncertainty;
    so an LLM-judged run of a scripted agent scores like the offline one.
    """

    def __call__(self, request: ChatRequest) -> Reply:
        """The verdict for the prompt in the first user message."""
        from pytest_lens.suites.answers import substring_exact_match
        from pytest_lens.suites.meme.tasks import expresses_uncertainty

        lines = request.first_user.splitlines()
        fields = dict(line.split(": ", 1) for line in lines if line.startswith(("Correct answer: ", "Explanation: ")))
        answer = lines[lines.index("The assistant's answer:") + 1]
        if "Explanation" in fields:
            correct, reason = (
                expresses_uncertainty(answer),
                "uncertainty expressed" if expresses_uncertainty(answer) else "answered as if known",
            )
        else:
            correct = bool(substring_exact_match(answer, [fields["Correct answer"]]))
            reason = "the correct answer is in the answer" if correct else "the correct answer is not in the answer"
        return Reply(content=json.dumps({"correct": correct, "reason": f"Mechanical rule: {reason}."}))


def _fold_policy() -> Policy:
    return FoldPolicy()


@dataclass
class LensPolicy:
    """Routes each request to the policy for its role (see :func:`classify`)."""

    agent: Policy = field(default_factory=RetrievalAgentPolicy)
    judge: Policy = field(default_factory=JudgePolicy)
    fact_judge: Policy = field(default_factory=FactCheckPolicy)
    support_judge: Policy = field(default_factory=SupportPolicy)
    meme_judge: Policy = field(default_factory=MemeJudgePolicy)
    lme_judge: Policy = field(default_factory=LongMemEvalJudgePolicy)
    baseline: Policy = field(default_factory=BaselinePolicy)
    summary: Policy = field(default_factory=SummaryPolicy)
    hierarchy: Policy = field(default_factory=HierarchyPolicy)
    policy: Policy = field(default_factory=lambda: _fold_policy())
    extraction: Policy = field(default_factory=ExtractionPolicy)
    cognee: Policy = field(default_factory=CogneePolicy)
    letta: Policy = field(default_factory=LettaAgentPolicy)
    other: Policy = field(default_factory=lambda: lambda request: Reply(content="OK"))

    def __call__(self, request: ChatRequest) -> Reply:
        """Delegate to the role's policy."""
        policy: Policy = getattr(self, classify(request))
        return policy(request)
