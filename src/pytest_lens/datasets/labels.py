"""Signal / distractor labels of episodes, for the scorer only (``signal_precision``); never shown to an agent.

Two sources, both read by the loader:

- episode ``meta``, as in the real LENS scopes: ``episode_type`` (``signal`` or ``distractor``),
  or a boolean ``is_signal`` / ``is_distractor``. The tool bridge strips these keys from
  everything an agent sees.
- a sidecar file next to the dataset, ``NAME.labels.json`` beside ``NAME.json``, as
  ``lens generate --labels`` writes it: ``{"episodes": {"<episode id>": {"kind": "signal"}, ...}}``
  (a bare ``"signal"`` / ``"distractor"`` string per episode works too). The sidecar is not a
  dataset: loading a directory skips ``*.labels.json`` files, so the agent never reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_lens.datasets.json_document import JsonDocumentError, read_json
from pytest_lens.datasets.models import Episode

__all__ = ["LABELS_SUFFIX", "LabelsError", "dataset_path", "is_labels_file", "labels_path", "meta_labels", "read_labels"]

#: A dataset ``NAME.json`` may have its labels in ``NAME.labels.json`` beside it.
LABELS_SUFFIX = ".labels.json"
_KINDS = {"signal": True, "distractor": False}


class LabelsError(ValueError):
    """A labels sidecar is unusable; the message names the file and the field (also kept apart: ``path``, ``field``, ``detail``)."""

    def __init__(self, path: Path, field: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if field == "-" else f"{path}: {field}: {detail}")
        self.path = path
        self.field = field
        self.detail = detail


def is_labels_file(path: Path) -> bool:
    """Whether ``path`` is a labels sidecar (``*.labels.json``) rather than a dataset."""
    return path.name.endswith(LABELS_SUFFIX)


def labels_path(dataset_path: Path) -> Path:
    """Where the sidecar of ``dataset_path`` lives (``trial.json`` -> ``trial.labels.json``)."""
    name = dataset_path.name
    stem = name[: -len(".json")] if name.endswith(".json") else name
    return dataset_path.with_name(stem + LABELS_SUFFIX)


def dataset_path(labels_file: Path) -> Path:
    """The dataset a sidecar labels (``trial.labels.json`` -> ``trial.json``)."""
    return labels_file.with_name(labels_file.name[: -len(LABELS_SUFFIX)] + ".json")


def meta_labels(episodes: Iterable[Episode]) -> dict[str, bool]:
    """``episode id -> is signal`` for the episodes whose ``meta`` says which they are."""
    found: dict[str, bool] = {}
    for episode in episodes:
        label = _meta_label(episode.meta)
        if label is not None:
            found[episode.episode_id] = label
    return found


def _meta_label(meta: Mapping[str, Any]) -> bool | None:
    kind = meta.get("episode_type")
    if isinstance(kind, str) and kind.lower() in _KINDS:
        return _KINDS[kind.lower()]
    if isinstance(meta.get("is_signal"), bool):
        return bool(meta["is_signal"])
    if isinstance(meta.get("is_distractor"), bool):
        return not meta["is_distractor"]
    return None


def read_labels(path: Path) -> dict[str, bool]:
    """``episode id -> is signal`` from a sidecar; :class:`LabelsError` saying where it is malformed."""
    try:
        document = read_json(path.read_bytes())
    except (OSError, JsonDocumentError) as exc:
        raise LabelsError(path, "-", f"cannot read the labels file: {exc}") from None
    episodes = document.get("episodes") if isinstance(document, dict) else None
    if not isinstance(episodes, dict):
        raise LabelsError(path, "episodes", 'expected an object {"<episode id>": {"kind": "signal" | "distractor"}}')
    found: dict[str, bool] = {}
    for episode_id, entry in episodes.items():
        kind = entry.get("kind", entry.get("episode_type")) if isinstance(entry, dict) else entry
        if not isinstance(kind, str) or kind.lower() not in _KINDS:
            raise LabelsError(path, f"episodes.{episode_id}", f"expected kind 'signal' or 'distractor', got {kind!r}")
        found[episode_id] = _KINDS[kind.lower()]
    return found
