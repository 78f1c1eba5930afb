"""Judges (SPEC §5): pairwise comparisons of a candidate answer with a reference, per criterion.

The LENS protocol: for each key fact, a judge sees the candidate answer and a
reference answer (the canonical answer, or the naive baseline's) as "Response A"
and "Response B" and says which better demonstrates the finding, or TIE. Whether
the candidate is A or B is drawn from a seeded hash of the comparison's key, so
it is the same in every run, process and test order. Candidate wins score 1, ties
0.5, losses 0. A judge that cannot decide raises :class:`JudgeError`; it never
turns a failure into a TIE.

:class:`LLMJudge` asks a model (the paper's prompt, verbatim, for facts).
:class:`OfflineJudge` decides deterministically without a network: key-fact
matching with aliases in both answers for facts, and the LENS reference
implementation's mechanical definitions for insight and reasoning.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, runtime_checkable

from pytest_lens.judging.verdicts import JudgeError, TokenVerdict, UnusableReply, ask_judge
from pytest_lens.text import normalize

if TYPE_CHECKING:
    from pytest_lens.datasets.models import KeyFact
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "FACT_PROMPT",
    "INSIGHT",
    "PAIRWISE",
    "REASONING",
    "RUBRIC_PROMPT",
    "WINNER_SCORES",
    "CitationEvidence",
    "Comparison",
    "Criterion",
    "Judge",
    "JudgeError",
    "Judgment",
    "LLMJudge",
    "OfflineJudge",
    "candidate_first",
    "judged_at_once",
    "parse_verdict",
]

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


def judged_at_once(judge_one: Callable[[Item], Outcome], items: Sequence[Item], *, concurrency: int, name: str) -> list[Outcome]:
    """``judge_one(item)`` for every item, up to ``concurrency`` at once on threads named ``name``; results in item order.

    Each runs in a copy of the caller's context, so its model requests count for the question being judged
    (:func:`~pytest_lens.llm.stats.counting`) and carry the repetition it judges (``--lens-repeat``).
    """
    if concurrency == 1 or len(items) < 2:
        return [judge_one(item) for item in items]
    contexts = [contextvars.copy_context() for _ in items]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(items)), thread_name_prefix=name) as pool:
        return list(pool.map(lambda context, item: context.run(judge_one, item), contexts, items))

Winner = Literal["candidate", "reference", "tie"]
CriterionKind = Literal["fact", "insight", "reasoning"]
WINNER_SCORES: dict[str, float] = {"candidate": 1.0, "tie": 0.5, "reference": 0.0}

#: The LENS judge prompt for one key fact (paper, Listing 4), verbatim.
FACT_PROMPT = """You are comparing two analyst responses to determine which better demonstrates knowledge of a specific finding from a longitudinal dataset.

Question asked: {question}

Finding to evaluate: {finding}

Response A:
{text_a}

Response B:
{text_b}

Which response better demonstrates awareness of this finding? The response may use different terminology. Focus on whether the core insight is present, not exact wording.

Respond with ONLY one word: A, B, or TIE"""

#: The same protocol for a quality criterion of the whole answer (insight depth, reasoning quality).
RUBRIC_PROMPT = """You are comparing two analyst responses to the same question about a longitudinal dataset.

Question asked: {question}

Criterion to evaluate: {finding}

Response A:
{text_a}

Response B:
{text_b}

Which response is better on this criterion? Judge only the criterion, not length or style.

Respond with ONLY one word: A, B, or TIE"""

#: The pairwise verdict: the reply must be exactly one of these (see :mod:`pytest_lens.judging.verdicts`).
PAIRWISE = TokenVerdict(("A", "B", "TIE"))


@dataclass(frozen=True)
class Criterion:
    """What a comparison is about: a key fact (with aliases) or a quality of the whole answer."""

    kind: CriterionKind
    text: str
    aliases: tuple[str, ...] = ()

    @classmethod
    def fact(cls, key_fact: KeyFact) -> Criterion:
        """A key fact of the question's ground truth."""
        return cls("fact", key_fact.fact, tuple(key_fact.aliases))

    def describe(self) -> str:
        """The criterion as shown to an LLM judge (aliases as equivalent wordings)."""
        if self.aliases:
            return f"{self.text} (equivalent wording: {'; '.join(self.aliases)})"
        return self.text


INSIGHT = Criterion(
    "insight",
    "Insight depth: the response synthesizes evidence across several episodes (trends, changes over time, connections "
    "between events, root causes) rather than restating isolated facts from a single report.",
)
REASONING = Criterion(
    "reasoning",
    "Reasoning quality: the response's conclusions follow logically from the evidence it presents, without "
    "contradictions or unsupported leaps, and it says plainly what the evidence does not show.",
)


@dataclass(frozen=True)
class CitationEvidence:
    """How many distinct refs the candidate cited, and how many of those were grounded (returned to it)."""

    cited: int
    grounded: int


@dataclass(frozen=True)
class Comparison:
    """One pairwise judgment to make.

    ``key`` identifies the comparison across runs (e.g. ``scope/question/metric/fact-index``)
    and seeds the candidate's position; ``evidence`` serves judges that score citations.
    """

    question: str
    criterion: Criterion
    candidate: str
    reference: str
    key: str
    evidence: CitationEvidence | None = None


@dataclass(frozen=True)
class Judgment:
    """A judge's decision; ``candidate_position`` is ``None`` when the judge saw no positions."""

    winner: Winner
    candidate_position: Literal["A", "B"] | None = None
    raw: str = ""
    attempts: int = 1

    @property
    def score(self) -> float:
        """Candidate win 1, tie 0.5, loss 0."""
        return WINNER_SCORES[self.winner]


@runtime_checkable
class Judge(Protocol):
    """Decides pairwise comparisons; ``description`` says in reports what produced the scores."""

    name: str
    description: str

    def compare(self, comparison: Comparison) -> Judgment:
        """Judge one comparison; :class:`JudgeError` when no judgment can be made."""
        ...


def candidate_first(seed: int, key: str) -> bool:
    """Whether the candidate is shown as Response A: a fair coin from ``(seed, key)``, stable everywhere."""
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    return digest[0] & 1 == 0


def parse_verdict(text: str) -> Literal["A", "B", "TIE"] | None:
    """The pairwise verdict ``text`` is (``A``, ``B`` or ``TIE``, read by :data:`PAIRWISE`); ``None`` for anything else."""
    try:
        token = PAIRWISE.read(text)
    except UnusableReply:
        return None
    return "A" if token == "A" else "B" if token == "B" else "TIE"


class OfflineJudge:
    """Deterministic, no network; labelled as offline in reports and artifacts.

    - fact: each answer "demonstrates" the finding when the fact or one of its aliases
      appears in it (normalised substring); present in one only -> that one wins,
      in both or neither -> TIE.
    - insight: the candidate wins when it draws on at least two distinct grounded refs,
      else loses (the LENS reference implementation's definition).
    - reasoning: the candidate wins when its answer is substantive (over 50 characters)
      and at least one citation is grounded, else loses (reference definition).
    """

    name = "offline"
    description = "offline (deterministic: key-fact matching with aliases; reference definitions for insight/reasoning; no LLM)"

    def compare(self, comparison: Comparison) -> Judgment:
        """Decide ``comparison`` by matching, never by a model."""
        criterion = comparison.criterion
        if criterion.kind == "fact":
            patterns = [normalize(p) for p in (criterion.text, *criterion.aliases) if normalize(p)]
            in_candidate = any(p in normalize(comparison.candidate) for p in patterns)
            in_reference = any(p in normalize(comparison.reference) for p in patterns)
            if in_candidate == in_reference:
                return Judgment("tie", raw=f"fact {'in both' if in_candidate else 'in neither'}")
            return Judgment(
                "candidate" if in_candidate else "reference", raw=f"fact only in the {'candidate' if in_candidate else 'reference'}"
            )
        evidence = comparison.evidence
        if evidence is None:
            raise JudgeError(f"the offline judge needs citation evidence to judge {criterion.kind}")
        if criterion.kind == "insight":
            won = evidence.grounded >= 2
            return Judgment("candidate" if won else "reference", raw=f"{evidence.grounded} distinct grounded refs (needs 2)")
        won = len(comparison.candidate.strip()) > 50 and evidence.grounded >= 1
        return Judgment(
            "candidate" if won else "reference",
            raw=f"{len(comparison.candidate.strip())} characters, {evidence.grounded} grounded refs (needs >50 and 1)",
        )


class LLMJudge:
    """The pairwise LLM judge: seeded positions, one request per comparison, one repair prompt for unusable verdicts.

    Transient endpoint failures are retried by the client; what still fails raises
    :class:`JudgeError` (counted and reported by the scorer, never scored as TIE).
    """

    name = "llm"

    def __init__(
        self, client: ChatClient, *, seed: int, repairs: int = 1, max_tokens: int | None = None, swapped: bool = False
    ) -> None:
        self.client = client
        self.seed = seed
        self.repairs = repairs
        self.max_tokens = max_tokens
        #: Show the candidate where a judge with this seed would not (the second judge of ``--lens-judge-check``).
        self.swapped = swapped
        positions = f"positions swapped against seed {seed}'s, request seed {client.seed}" if swapped else f"seeded positions, seed {seed}"
        self.description = f"llm ({client.description}; pairwise per key fact, {positions})"

    def compare(self, comparison: Comparison) -> Judgment:
        """Ask the model; map its positional verdict back to candidate / reference / tie."""
        first = candidate_first(self.seed, comparison.key) != self.swapped
        text_a, text_b = (comparison.candidate, comparison.reference) if first else (comparison.reference, comparison.candidate)
        template = FACT_PROMPT if comparison.criterion.kind == "fact" else RUBRIC_PROMPT
        prompt = template.format(
            question=comparison.question,
            finding=comparison.criterion.describe(),
            text_a=text_a.strip() or "(empty response)",
            text_b=text_b.strip() or "(empty response)",
        )
        asked = ask_judge(
            self.client,
            prompt,
            PAIRWISE.read,
            lambda problem: f"That reply could not be used: {problem}. {PAIRWISE.instruction}",
            repairs=self.repairs,
            max_tokens=self.max_tokens,
            subject="verdict (A, B or TIE)",
        )
        position: Literal["A", "B"] = "A" if first else "B"
        winner: Winner = "tie" if asked.verdict == "TIE" else "candidate" if asked.verdict == position else "reference"
        return Judgment(winner, candidate_position=position, raw=asked.raw[:200], attempts=asked.attempts)
