"""A Qdrant-style memory as a user writes one: one MiniLM vector per episode in a local Qdrant collection.

The adapter the conformance cost is measured on (benchmarks/conformance_cost.py). It embeds through
pytest_lens.api.default_embedder(), the offline all-MiniLM-L6-v2 behind the shared embedding cache, and keeps the
vectors in qdrant-client's local mode (in memory, no server), as the mem0 extra installs it:

    pytest --lens-adapter=benchmarks.qdrant_memory:QdrantMemory --lens-conformance
"""

from __future__ import annotations

import uuid
from typing import Any

from qdrant_client import QdrantClient, models

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.api import default_embedder

COLLECTION = "episodes"


class QdrantMemory(MemoryAdapter):
    """One vector per episode, cosine similarity, upserted as each episode arrives."""

    max_results = 10
    lens_isolated_instances = True

    def __init__(self, cache_dir: str | None = None, cache: bool = True, snippet_chars: int = 300) -> None:
        self.embedder = default_embedder(cache_dir=cache_dir, cache=cache)
        self.client = QdrantClient(location=":memory:")
        self.snippet_chars = snippet_chars
        self.scope_id: str | None = None
        self._create()

    def _create(self) -> None:
        if self.client.collection_exists(COLLECTION):
            self.client.delete_collection(COLLECTION)
        size = models.VectorParams(size=self.embedder.dimension, distance=models.Distance.COSINE)
        self.client.create_collection(COLLECTION, vectors_config=size)

    @staticmethod
    def _point_id(episode_id: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, episode_id))

    def reset(self, scope_id: str) -> None:
        self.scope_id = scope_id
        self._create()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        vector = self.embedder.encode([text])[0].tolist()
        payload = {"episode_id": episode_id, "text": text, "timestamp": timestamp}
        self.client.upsert(COLLECTION, points=[models.PointStruct(id=self._point_id(episode_id), vector=vector, payload=payload)])

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        count = min(limit or self.max_results, self.max_results)
        if count <= 0:
            return []
        vector = self.embedder.encode([query])[0].tolist()
        hits = self.client.query_points(COLLECTION, query=vector, limit=count, with_payload=True).points
        ranked = sorted(hits, key=lambda hit: (-hit.score, hit.payload["episode_id"] if hit.payload else ""))
        return [
            SearchResult(hit.payload["episode_id"], hit.payload["text"][: self.snippet_chars], float(hit.score))
            for hit in ranked
            if hit.payload
        ]

    def retrieve(self, ref_id: str) -> Document | None:
        points = self.client.retrieve(COLLECTION, ids=[self._point_id(ref_id)], with_payload=True)
        if not points or not points[0].payload or points[0].payload["episode_id"] != ref_id:
            return None
        return Document(ref_id, points[0].payload["text"])

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=self.max_results)

    def lens_stats(self) -> dict[str, int]:
        return self.embedder.stats.as_counters()

    def close(self) -> None:
        self.client.close()
        self.embedder.close()
