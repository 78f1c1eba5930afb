"""The embedding adapter's one vector per episode covers the whole episode, not the model's first 256 word-pieces."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lens_fixtures.adapters.chunking import chunk_episode
from lens_fixtures.adapters.embedding import EmbeddingAdapter
from lens_fixtures.adapters.pooling import PooledEmbedder
from pytest_lens.embedding import SentenceTransformerEmbedder

LONG = "## 2024-01-05 Log\n" + "\n".join(f"### Section {n}\n- " + " ".join(f"reading{n}x{i}" for i in range(40)) for n in range(5))


def test_a_one_chunk_text_gets_the_models_own_vector(hashing: Any) -> None:
    pooled = PooledEmbedder(hashing)
    assert np.allclose(pooled.encode(["vehicle ignition failure"])[0], hashing.encode(["vehicle ignition failure"])[0])


def test_a_long_text_is_the_word_weighted_mean_of_its_chunks(hashing: Any) -> None:
    pooled = PooledEmbedder(hashing, max_words=50, min_words=10)
    chunks = chunk_episode(LONG, 50, 10)
    assert len(chunks) == 5
    vectors = hashing.encode([chunk.text for chunk in chunks])
    weights = np.array([chunk.words for chunk in chunks], dtype=np.float64)
    expected = weights @ vectors / weights.sum()
    expected /= np.linalg.norm(expected)
    hashing.calls.clear()
    got = pooled.encode([LONG, "short query"])
    assert np.allclose(got[0], expected, atol=1e-6)
    assert np.isclose(np.linalg.norm(got[0]), 1.0)
    assert len(hashing.calls) == 1  # every chunk of every text in one batched call
    assert pooled.encode([]).shape[0] == 0


def test_bad_pooling_options_are_named() -> None:
    with pytest.raises(ValueError, match="option pooling must be one of mean, none, max"):
        EmbeddingAdapter(pooling="median")
    with pytest.raises(ValueError, match="max_words >= 1"):
        EmbeddingAdapter(max_chunk_words=0)


def _opening(n: int) -> str:
    """Two hundred words of routine readings, identical in every episode: more than MiniLM reads."""
    line = "pump pressure nominal, valve seals checked, tank level steady, flow rate normal"
    return "\n".join(f"### Readings {i}\n- {line}" for i in range(n))


def test_a_detail_deep_in_a_long_episode_is_found_only_when_the_whole_episode_is_embedded(minilm: SentenceTransformerEmbedder) -> None:
    episodes = {
        "weather": "### Notes\n- heavy snow closed the north road for the afternoon",
        "meeting": "### Notes\n- quarterly budget meeting moved to Thursday in room four",
        "badges": "### Notes\n- new hires received their badges and laptops",
        "van": "### Notes\n- the delivery van would not start this morning, its battery was completely dead",
    }
    ranks = {}
    for pooling in ("none", "mean"):
        adapter = EmbeddingAdapter(embedder=minilm, pooling=pooling, cache=False)
        adapter.reset("s")
        for day, (ref, tail) in enumerate(episodes.items(), start=1):
            adapter.ingest(ref, "s", f"2024-01-0{day}T09:00:00", f"## Daily log\n{_opening(20)}\n{tail}")
        refs = [r.ref_id for r in adapter.search("vehicle ignition failure, dead battery", None, 4)]
        ranks[pooling] = refs.index("van") + 1
        adapter.close()
    # Truncated, every episode reads as the same 256 word-pieces of routine readings: the van is not found first.
    assert ranks["none"] > 1
    assert ranks["mean"] == 1


def test_the_embedding_adapters_queue_counts_section_chunks_so_no_call_embeds_a_pile_of_long_episodes(hashing: Any) -> None:
    """A V2 episode pools ~50 section chunks: queueing 32 *episodes* made one prepare embed 1,600 chunks
    (56.8 s of a 120 s call timeout on an idle 2-core machine for benchmarks/v2_ingest.py's 374k-word scope)."""
    adapter = EmbeddingAdapter(embedder=hashing, cache=False)  # pooling=mean, embed_queue 32, 100-word chunks
    adapter.reset("s")
    for index in range(40):
        episode = "\n".join(f"### Section {s}\n" + " ".join(f"word{index}x{s}x{w}" for w in range(90)) for s in range(50))
        before = hashing.texts_encoded
        adapter.ingest(f"e{index}", "s", "2024-01-01", episode)
        embedded = hashing.texts_encoded - before
        assert embedded <= 50 + 31  # its own 50 chunks plus fewer than a queue's worth
        assert adapter._index.queued < 32  # what prepare has left to do
    before = hashing.texts_encoded
    adapter.prepare("s", 1)
    assert hashing.texts_encoded - before < 32
    assert hashing.texts_encoded == 40 * 50  # every chunk embedded exactly once
