"""Ranking behaviour of the reference adapters on small hand-made corpora, with the real MiniLM.

One query names a rare exact term (a drug name the model has never seen) in an
episode about something else, among episodes about patients receiving similar-
sounding drugs: embeddings miss it, BM25 finds it. The other query paraphrases an
episode without sharing a word with it: BM25 misses it, embeddings find it. The
hybrids find both.
"""

from __future__ import annotations

from typing import Any

import pytest

from lens_fixtures.adapters.bm25 import BM25Adapter
from lens_fixtures.adapters.cognis import CognisHybridAdapter
from lens_fixtures.adapters.embedding import EmbeddingAdapter
from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens.embedding import SentenceTransformerEmbedder

WARD = {
    "exact": "Bed 4 restocked; the order for zyphrex arrived with the afternoon courier.",
    "meaning": "The delivery van refused to start this morning because its battery had completely died.",
    "zyrtec": "Patient in bed 2 given Zyrtec for seasonal allergies; symptoms eased by evening.",
    "zantac": "Patient in bed 7 given Zantac for heartburn; follow-up tomorrow.",
    "xyzal": "Pharmacy swapped Xyzal stock for a generic antihistamine.",
    "zofran": "Zofran administered to the patient in bed 9 for nausea.",
    "zyloprim": "Patient in bed 3 received Zyloprim for gout at noon.",
    "zithromax": "Patient in bed 5 received Zithromax for a chest infection.",
    "zocor": "Patient in bed 6 received Zocor with the evening meal.",
    "xanax": "Patient in bed 8 received Xanax before the procedure.",
    "zyvox": "Zyvox given to the patient in bed 10 for a skin infection.",
    "zoloft": "Zoloft given to the patient in bed 11 at bedtime.",
    "zinacef": "Zinacef given to the patient in bed 12 before surgery.",
    "budget": "Quarterly budget meeting moved to Thursday afternoon in room 4.",
    "onboarding": "New hire onboarding: badges, laptops and safety training scheduled.",
}
EXACT_QUERY = "zyphrex given to patient"
#: "Found" means among the first five results (what a budget-limited agent reads first).
TOP = 5
PARAPHRASE_QUERY = "vehicle ignition failure"


def _load(adapter: Any) -> Any:
    adapter.reset("ward")
    for day, (ref, note) in enumerate(WARD.items(), start=1):
        adapter.ingest(ref, "ward", f"2024-03-{day:02d}T09:00:00", f"## 2024-03-{day:02d} Ward log\n### Notes\n- {note}")
    adapter.prepare("ward", len(WARD))
    return adapter


def _rank(adapter: Any, query: str, target: str) -> int | None:
    refs = [result.ref_id for result in adapter.search(query, None, 10)]
    return refs.index(target) + 1 if target in refs else None


@pytest.fixture(scope="module")
def adapters(minilm: SentenceTransformerEmbedder) -> dict[str, Any]:
    return {
        "bm25": _load(BM25Adapter()),
        "embedding": _load(EmbeddingAdapter(embedder=minilm)),
        "sqlite-hybrid": _load(SQLiteHybridAdapter(embedder=minilm)),
        "cognis-hybrid": _load(CognisHybridAdapter(embedder=minilm)),
    }


def test_the_exact_term_query_defeats_embeddings_but_not_bm25(adapters: dict[str, Any]) -> None:
    assert _rank(adapters["bm25"], EXACT_QUERY, "exact") == 1
    embedding_rank = _rank(adapters["embedding"], EXACT_QUERY, "exact")
    assert embedding_rank is None or embedding_rank > TOP


def test_the_paraphrase_defeats_bm25_but_not_embeddings(adapters: dict[str, Any]) -> None:
    assert _rank(adapters["bm25"], PARAPHRASE_QUERY, "meaning") is None  # no shared word at all
    assert _rank(adapters["embedding"], PARAPHRASE_QUERY, "meaning") == 1


@pytest.mark.parametrize("name", ["sqlite-hybrid", "cognis-hybrid"])
def test_the_hybrids_find_both(adapters: dict[str, Any], name: str) -> None:
    exact = _rank(adapters[name], EXACT_QUERY, "exact")
    assert exact is not None
    assert exact <= TOP
    assert _rank(adapters[name], PARAPHRASE_QUERY, "meaning") == 1


def test_sqlite_hybrid_snippets_are_the_matching_chunk_and_retrieve_is_verbatim(adapters: dict[str, Any]) -> None:
    hybrid = adapters["sqlite-hybrid"]
    top = hybrid.search(PARAPHRASE_QUERY, None, 1)[0]
    assert top.text == "## 2024-03-02 Ward log\n### Notes\n- " + WARD["meaning"]
    assert top.metadata == {"timestamp": "2024-03-02T09:00:00"}
    document = hybrid.retrieve("meaning")
    assert document.text == "## 2024-03-02 Ward log\n### Notes\n- " + WARD["meaning"]
