"""MemoryAgentBench rows (``{context, questions, answers, metadata}``) -> one scope per row.

``context`` is split into sentences and packed greedily into chunks of at most ``chunk_tokens`` tokens
(MemoryAgentBench packs NLTK sentences by gpt-4o-mini tokens; here sentences are split on end
punctuation and newlines and tokens are ``len(utf8) // 4``, the budget's measure). Each chunk is an
episode; every question is asked after the last chunk. ``answers[i]`` lists the acceptable golds of
``questions[i]``. The competency and metric follow ``metadata.source`` as in the paper (Table 15 sets
the chunk size: 512 for RULER, NIAH, LongMemEval(S*) and FactConsolidation, 4096 otherwise).
The rows carry no evidence annotations, so imported questions have no required refs.

Reads JSON (a row or a list of rows), JSON Lines, and the HF release's parquet files (with pyarrow:
``pip install 'pytest-lens[mab]'``), through :func:`pytest_lens.datasets.importers.parse_document`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.fields import as_list, require
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope

__all__ = ["chunk_context", "classify_source", "import_mab"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_START = datetime(2025, 1, 6, 9, 0)


def classify_source(source: str) -> tuple[str, str, int]:
    """(competency, metric, chunk tokens) for a MemoryAgentBench ``metadata.source``."""
    s = source.lower()
    if s.startswith("factconsolidation"):
        return "conflict_resolution", "subem", 512
    if s.startswith("ruler_niah"):
        return "accurate_retrieval", "recall", 512
    if s.startswith(("ruler_qa", "longmemeval")):
        return "accurate_retrieval", "subem", 512
    if s.startswith("eventqa"):
        return "accurate_retrieval", "subem", 4096
    if s.startswith("icl_"):
        return "test_time_learning", "exact_match", 4096
    if s.startswith("recsys"):
        return "test_time_learning", "recall", 4096
    if s.startswith("detective"):
        return "long_range_understanding", "exact_match", 4096
    if s.startswith("infbench_sum"):
        return "long_range_understanding", "f1", 4096
    return "accurate_retrieval", "subem", 4096


def chunk_context(context: str, chunk_tokens: int) -> list[str]:
    """Sentences packed greedily into chunks of at most ``chunk_tokens`` tokens (a longer sentence is its own chunk)."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in (s.strip() for s in _SENTENCE.split(context)):
        if not sentence:
            continue
        tokens = len(sentence.encode("utf-8")) // 4 + 1
        if current and size + tokens > chunk_tokens:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(sentence)
        size += tokens
    if current:
        chunks.append("\n".join(current))
    return chunks


def import_mab(document: Any, source: str = "mab", chunk_tokens: int | None = None) -> Dataset:
    """Convert parsed MemoryAgentBench rows; ``chunk_tokens`` overrides the per-source chunk size."""
    scopes: list[Scope] = []
    questions: list[Question] = []
    for index, row in enumerate(as_list(document, "$")):
        where = f"[{index}]"
        context = require(row, "context", where, str)
        prompts = require(row, "questions", where, list)
        answers = require(row, "answers", where, list)
        if len(prompts) != len(answers):
            raise ImportFormatError(f"{where}.answers", f"{len(answers)} answers for {len(prompts)} questions")
        metadata = row.get("metadata") or {}
        name = str(metadata.get("source") or "row")
        competency, metric, default_chunk = classify_source(name)
        scope_id = f"mab_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}_r{index + 1:03d}"
        chunks = chunk_context(context, chunk_tokens or default_chunk)
        if not chunks:
            raise ImportFormatError(f"{where}.context", "empty")
        episodes = tuple(
            Episode(episode_id=f"{scope_id}_c{i + 1:04d}", scope_id=scope_id, timestamp=_START + timedelta(minutes=i), text=text)
            for i, text in enumerate(chunks)
        )
        scopes.append(Scope(scope_id=scope_id, episodes=episodes))
        pair_ids = metadata.get("qa_pair_ids") or []
        for q_index, (prompt, gold) in enumerate(zip(prompts, answers, strict=True)):
            golds = [str(g) for g in (gold if isinstance(gold, list) else [gold]) if str(g).strip()]
            if not golds:
                raise ImportFormatError(f"{where}.answers[{q_index}]", "no gold answer")
            facts = [KeyFact(fact=g) for g in golds] if metric == "recall" else [KeyFact(fact=golds[0], aliases=tuple(golds[1:]))]
            meta: dict[str, Any] = {"mab_metric": metric, "source": name}
            if q_index < len(pair_ids):
                meta["qa_pair_id"] = str(pair_ids[q_index])
            questions.append(
                Question(
                    question_id=f"{scope_id}_q{q_index + 1:03d}",
                    scope_id=scope_id,
                    checkpoint_after=len(episodes),
                    question_type=competency,
                    prompt=str(prompt),
                    ground_truth=GroundTruth(canonical_answer=golds[0], key_facts=tuple(facts)),
                    answers=tuple(golds),
                    meta=meta,
                )
            )
    return Dataset(suite="mab", scopes=tuple(scopes), questions=tuple(questions))
