"""Building LENS scope directories (the reference's V2 layout) for tests, and the reference's own checkpoint rule.

:func:`reference_visible` re-implements, independently of :mod:`pytest_lens.datasets.scope_dir`, how the
LENS reference harness (``v2-synix-benchmark/src/bench/dataset.py``) decides what the memory holds at a
checkpoint, straight from the file names: tests compare it with what our stream delivers.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml


def reference_visible(scope_dir: Path, scope_id: str, checkpoint: int) -> set[str]:
    """Episode ids in memory at ``checkpoint``: signal ordinal <= checkpoint, plus the first ``checkpoint``
    distractors in (ordinal, id) order; ids ``<scope>_ep_NNN`` (signal) and ``<scope>_<stem>`` (distractor)."""
    signal: list[tuple[int, str]] = []
    distractors: list[tuple[int, str]] = []
    for path in (scope_dir / "generated" / "episodes").iterdir():
        if path.suffix != ".txt":
            continue
        found = re.search(r"(\d+)\.txt$", path.name)
        ordinal = int(found.group(1)) if found else 0
        if path.name.startswith("distractor_"):
            distractors.append((ordinal, f"{scope_id}_{path.name[:-4]}"))
        else:
            signal.append((ordinal, f"{scope_id}_ep_{ordinal:03d}"))
    visible = {episode_id for ordinal, episode_id in signal if ordinal <= checkpoint}
    visible |= {episode_id for _, episode_id in sorted(distractors)[: min(checkpoint, len(distractors))]}
    return visible


def write_scope_dir(
    root: Path,
    scope_id: str = "synthetic_01",
    *,
    signal: Sequence[int] = (1, 2, 3),
    distractors: Mapping[str, Sequence[int]] | None = None,
    questions: Sequence[Mapping[str, Any]] | None = None,
    spec: Mapping[str, Any] | None = None,
    texts: Mapping[str, str] | None = None,
) -> Path:
    """A scope directory under ``root/scope_id``: signal files by ordinal, distractor files by theme and ordinal.

    Each episode's text is a neutral line with a token of its file name, plus ``texts[file name]`` when given.
    Default questions: one per signal ordinal ``c`` (``q_cp<c>``), requiring the signal episode ``c``.
    """
    directory = root / scope_id
    episodes = directory / "generated" / "episodes"
    episodes.mkdir(parents=True)
    names = [f"signal_{n:03d}.txt" for n in signal]
    for theme, ordinals in (distractors if distractors is not None else {"weather": (1, 2)}).items():
        names += [f"distractor_{theme}_{n:03d}.txt" for n in ordinals]
    for name in names:
        extra = (texts or {}).get(name, "")
        token = hashlib.sha256(name.encode()).hexdigest()[:8]  # neutral: the text never names the file's label
        (episodes / name).write_text(f"[09:00] User: notes {token} on routine matters. {extra}\n", encoding="utf-8")
    body: dict[str, Any] = {
        "scope_id": scope_id,
        "domain": "test",
        "episodes": {"count": len(signal), "timeline": {"start": "2025-01-06", "interval": "2d"}},
        "arc": [{"id": "baseline", "episodes": f"1-{max(signal, default=1)}", "signal_density": "none"}],
        **(spec or {}),
    }
    (directory / "spec.yaml").write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    if questions is None:
        questions = [
            {
                "question_id": f"q_cp{c}",
                "scope_id": scope_id,
                "checkpoint_after": c,
                "question_type": "longitudinal",
                "prompt": f"What happened by episode {c}?",
                "ground_truth": {
                    "canonical_answer": f"episode signal_{c:03d}",
                    "key_facts": [f"signal_{c:03d}"],
                    "required_evidence_refs": [f"{scope_id}_ep_{c:03d}"],
                },
            }
            for c in signal
            if c >= 1
        ]
    (directory / "generated" / "questions.json").write_text(json.dumps(list(questions), indent=1), encoding="utf-8")
    return directory
