"""Rank-aware retrieval metrics and evidence precision, per question, computed by trec_eval.

What the memory ranked (every search the tool bridge executed, in the order it returned its
results) is judged against the question's required evidence available at the checkpoint:

- ``first_search_ndcg@10``, ``first_search_recall@5``, ``first_search_recall@10``,
  ``first_search_mrr``: the first successful ``memory_search`` of the question (the offline
  agent's is the question itself). No successful search ranks nothing: each is 0.
- ``session_recall``: required refs returned by any search within the budget / required refs.
- ``first_search_ndcg@10_above_chance`` and ``session_recall_above_chance``: the same minus
  what a memory returning as many stored episodes, drawn at random from those stored at the
  checkpoint, would score in expectation. A small haystack makes raw recall cheap (ten random
  results out of 18 episodes find over half of any evidence); above chance, a memory that ranks
  no better than a random draw scores 0 whatever the haystack, and one that returns nothing
  scores 0 too. The expectations follow from linearity: each of the top ``m`` positions holds a
  required episode with probability ``R / N`` (``R`` required among ``N`` stored), so
  E[DCG@10] = (R/N) * sum(1/log2(i+1), i = 1..min(m, 10)), divided by trec_eval's ideal DCG, and
  E[recall] = S / N for ``S`` distinct episodes surfaced.

What the answer cited:

- ``evidence_precision``: cited refs that are required and grounded (returned to the agent) /
  cited refs (absent when nothing is cited); its recall is ``evidence_coverage``;
- ``evidence_f1``: the harmonic mean of ``evidence_precision`` and ``evidence_coverage`` (0 when
  nothing is cited);
- ``signal_precision``: cited episodes that are signal / cited episodes with a signal or
  distractor label, the paper's stated meaning of grounding. Labels come from the scorer's side
  only (episode ``meta``, which the bridge strips, or a dataset's ``.labels.json`` sidecar).

A ranking keeps each ref's best (first) position; a ref returned twice counts once. The values
are trec_eval's own (``ndcg_cut_10``, ``recall_5``, ``recall_10``, ``recip_rank``, ``set_recall``,
``set_P``, ``set_F``; binary relevance), computed by pytrec_eval (pytrec-eval-terrier: trec_eval
itself as a small C extension), so they mean exactly what the IR literature means by them.
ir-measures would give the same values through the same code but costs 0.7 s of imports per
run; ``pytrec_eval`` is imported when a question is scored, never when the plugin loads.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_lens.records.results import ToolCallRecord

__all__ = [
    "EVIDENCE_METRICS",
    "RETRIEVAL_METRICS",
    "SEARCH_TOOL",
    "RetrievalEvidence",
    "expected_ndcg",
    "retrieval_metrics",
    "search_rankings",
]

SEARCH_TOOL = "memory_search"
NDCG_CUTOFF = 10

#: Metrics of what the memory's searches ranked.
RETRIEVAL_METRICS = (
    "first_search_ndcg@10",
    "first_search_recall@5",
    "first_search_recall@10",
    "first_search_mrr",
    "session_recall",
    "first_search_ndcg@10_above_chance",
    "session_recall_above_chance",
)
#: Metrics of what the answer cited, beside ``evidence_coverage`` and ``evidence_grounding``.
EVIDENCE_METRICS = ("evidence_precision", "evidence_f1", "signal_precision")

# A cited ref that was never returned to the agent is not evidence, whatever its id: it is renamed
# out of the relevance judgments, so trec_eval counts it against precision and never for recall.
_UNGROUNDED = "\x00ungrounded\x00"


@dataclass(frozen=True)
class RetrievalEvidence:
    """What one question's retrieval metrics are computed from.

    ``searches``: the ref ids each successful search returned, best first, in call order;
    ``required``: required refs available at the checkpoint; ``stored``: the episodes stored
    by then (what a random memory draws from); ``cited``: refs the answer cited (stored ids);
    ``grounded``: the cited refs that exist and were returned to the agent; ``signal``: episode
    id -> is signal (``None`` when the scope carries no labels).
    """

    searches: Sequence[Sequence[str]]
    required: Collection[str]
    stored: Collection[str]
    cited: Sequence[str]
    grounded: Collection[str]
    signal: Mapping[str, bool] | None = None


def search_rankings(tool_calls: Sequence[ToolCallRecord]) -> list[list[str]]:
    """The ranked ref ids of every successful ``memory_search`` call, in call order."""
    return [list(call.returned_refs) for call in tool_calls if call.name == SEARCH_TOOL and call.status == "ok"]


def _run(refs: Sequence[str]) -> dict[str, float]:
    """A trec_eval run that keeps ``refs``' order: strictly decreasing scores by rank, first occurrence wins."""
    ranked = list(dict.fromkeys(refs))
    return {ref: float(len(ranked) - rank) for rank, ref in enumerate(ranked)}


def retrieval_metrics(evidence: RetrievalEvidence) -> dict[str, float]:
    """The metrics above that have something to measure.

    Ranking and evidence metrics need required evidence; ``evidence_precision`` a citation;
    ``signal_precision`` labels and a cited labelled episode.
    """
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    required = set(evidence.required)
    if required:
        relevant = dict.fromkeys(sorted(required), 1)
        first = evidence.searches[0] if evidence.searches else []
        surfaced = [ref for ranking in evidence.searches for ref in ranking]
        cited = [ref if ref in evidence.grounded else _UNGROUNDED + ref for ref in evidence.cited]
        for query, refs in (("first", first), ("session", surfaced), ("cited", cited)):
            qrels[query] = relevant
            run[query] = _run(refs)
    labelled = [ref for ref in dict.fromkeys(evidence.cited) if evidence.signal is not None and ref in evidence.signal]
    if evidence.signal is not None and labelled:
        # Every labelled episode is judged (signal 1, distractor 0), so the query always has relevant refs.
        qrels["signal"] = {ref: int(is_signal) for ref, is_signal in evidence.signal.items()}
        run["signal"] = _run(labelled)
    if not qrels:
        return {}
    values = _trec_eval(qrels, run)
    metrics: dict[str, float] = {}
    if required:
        metrics["first_search_ndcg@10"] = values["first", "ndcg_cut_10"]
        metrics["first_search_recall@5"] = values["first", "recall_5"]
        metrics["first_search_recall@10"] = values["first", "recall_10"]
        metrics["first_search_mrr"] = values["first", "recip_rank"]
        metrics["session_recall"] = values["session", "set_recall"]
        population = len(evidence.stored)
        returned = sum(1 for ref in dict.fromkeys(first) if ref in evidence.stored)
        surfaced_episodes = sum(1 for ref in dict.fromkeys(surfaced) if ref in evidence.stored)
        chance_ndcg = expected_ndcg(NDCG_CUTOFF, returned, len(required), population)
        metrics["first_search_ndcg@10_above_chance"] = metrics["first_search_ndcg@10"] - chance_ndcg
        metrics["session_recall_above_chance"] = metrics["session_recall"] - min(surfaced_episodes, population) / population
        if evidence.cited:
            metrics["evidence_precision"] = values["cited", "set_P"]
        metrics["evidence_f1"] = values["cited", "set_F"]
    if "signal" in run:
        metrics["signal_precision"] = values["signal", "set_P"]
    return metrics


def expected_ndcg(cutoff: int, returned: int, relevant: int, population: int) -> float:
    """E[nDCG@cutoff] of ``returned`` episodes drawn at random from ``population``, ``relevant`` of them relevant.

    trec_eval's ``ndcg_cut``: gain 1 per relevant ref, discount ``log2(rank + 1)``, ideal DCG over
    ``min(relevant, cutoff)`` relevant refs at the top. By linearity each of the top
    ``min(returned, cutoff)`` ranks is relevant with probability ``relevant / population``.
    """
    if relevant <= 0 or population <= 0:
        return 0.0
    ranks = min(returned, cutoff, population)
    expected_dcg = relevant / population * math.fsum(1 / math.log2(rank + 1) for rank in range(1, ranks + 1))
    ideal = math.fsum(1 / math.log2(rank + 1) for rank in range(1, min(relevant, cutoff) + 1))
    return expected_dcg / ideal


def _trec_eval(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    """``(query, measure) -> value``; a query with nothing retrieved scores 0 on every measure."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, _MEASURES)
    found = evaluator.evaluate(run)
    return {(query, name): float(found.get(query, {}).get(name, 0.0)) for query in run for name in _KEYS}


#: trec_eval's measures, as pytrec_eval names them: nDCG@10, recall@5 and @10, MRR, set recall, precision and F1.
_MEASURES = {"ndcg_cut.10", "recall.5,10", "recip_rank", "set_recall", "set_P", "set_F"}
#: The result keys read back.
_KEYS = ("ndcg_cut_10", "recall_5", "recall_10", "recip_rank", "set_recall", "set_P", "set_F")
