"""Dataset validation: defects reported by file and field (SPEC §3, §10 defect 6).

Errors make a file unusable (the run cannot be set up honestly); warnings are
data defects the run survives: the affected questions are flagged and scored
against the evidence actually available at their checkpoint.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pytest_lens.datasets.models import QUESTION_CATEGORIES, Dataset, Episode

__all__ = ["LABEL_META_KEYS", "DatasetIssue", "Severity", "field_path", "schema_message", "stream_order", "validate_dataset"]

#: ``meta`` keys that carry ground truth in LENS data; never shown to an agent.
LABEL_META_KEYS = frozenset({"episode_type", "phase", "signal_density", "theme", "is_signal", "is_distractor"})


class Severity(StrEnum):
    """How bad an issue is."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class DatasetIssue:
    """One problem found in a dataset file, located by a field path."""

    path: str
    field: str
    code: str
    message: str
    severity: Severity
    question_id: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message} [{self.code}]"


def stream_order(episodes: Iterable[Episode]) -> list[Episode]:
    """Episodes in stream order: by timestamp, file order breaking ties."""
    return sorted(episodes, key=lambda episode: episode.timestamp)


def validate_dataset(dataset: Dataset, path: str) -> list[DatasetIssue]:
    """Check a well-formed dataset for the defects the run model cannot tolerate or must flag."""
    issues: list[DatasetIssue] = []

    def add(field: str, code: str, message: str, severity: Severity, question_id: str | None = None) -> None:
        issues.append(DatasetIssue(path, field, code, message, severity, question_id))

    positions: dict[str, dict[str, int]] = {}
    scope_counts = Counter(scope.scope_id for scope in dataset.scopes)
    for s_index, scope in enumerate(dataset.scopes):
        field = f"scopes[{s_index}]"
        if scope_counts[scope.scope_id] > 1:
            add(f"{field}.scope_id", "duplicate_scope_id", f"scope id {scope.scope_id!r} appears more than once", Severity.ERROR)
        if not scope.episodes:
            add(f"{field}.episodes", "empty_scope", f"scope {scope.scope_id!r} has no episodes", Severity.ERROR)
        seen: dict[str, int] = {}
        for e_index, episode in enumerate(scope.episodes):
            e_field = f"{field}.episodes[{e_index}]"
            if episode.episode_id in seen:
                add(
                    f"{e_field}.episode_id",
                    "duplicate_episode_id",
                    f"episode id {episode.episode_id!r} already used at episodes[{seen[episode.episode_id]}]",
                    Severity.ERROR,
                )
            else:
                seen[episode.episode_id] = e_index
            if episode.scope_id != scope.scope_id:
                add(
                    f"{e_field}.scope_id",
                    "episode_scope_mismatch",
                    f"episode says scope {episode.scope_id!r} but sits in scope {scope.scope_id!r}",
                    Severity.ERROR,
                )
        ordered = stream_order(scope.episodes)
        positions[scope.scope_id] = {episode.episode_id: index for index, episode in enumerate(ordered, start=1)}
        _check_label_leaks(scope.episodes, f"{field}.episodes", add)

    question_counts = Counter(question.question_id for question in dataset.questions)
    for q_index, question in enumerate(dataset.questions):
        field = f"questions[{q_index}]"
        qid = question.question_id
        if question_counts[qid] > 1:
            add(f"{field}.question_id", "duplicate_question_id", f"question id {qid!r} appears more than once", Severity.ERROR, qid)
        if dataset.suite == "lens" and question.question_type not in QUESTION_CATEGORIES:
            add(
                f"{field}.question_type",
                "unknown_question_type",
                f"unknown question type {question.question_type!r}; expected one of {', '.join(QUESTION_CATEGORIES)}",
                Severity.ERROR,
                qid,
            )
        scope_positions = positions.get(question.scope_id)
        if scope_positions is None:
            add(
                f"{field}.scope_id", "unknown_scope", f"question {qid!r} refers to unknown scope {question.scope_id!r}", Severity.ERROR, qid
            )
            continue
        if not 1 <= question.checkpoint_after <= len(scope_positions):
            add(
                f"{field}.checkpoint_after",
                "unreachable_checkpoint",
                f"checkpoint {question.checkpoint_after} is unreachable: scope {question.scope_id!r} "
                f"streams {len(scope_positions)} episodes",
                Severity.ERROR,
                qid,
            )
            continue
        truth = question.ground_truth
        if not truth.key_facts:
            add(f"{field}.ground_truth.key_facts", "empty_key_facts", f"question {qid!r} has no key facts", Severity.WARNING, qid)
        for r_index, ref in enumerate(truth.required_evidence_refs):
            r_field = f"{field}.ground_truth.required_evidence_refs[{r_index}]"
            position = scope_positions.get(ref)
            if position is None:
                add(
                    r_field,
                    "unknown_evidence_ref",
                    f"required ref {ref!r} is not an episode of {question.scope_id!r}",
                    Severity.WARNING,
                    qid,
                )
            elif position > question.checkpoint_after:
                add(
                    r_field,
                    "evidence_after_checkpoint",
                    f"required ref {ref!r} arrives at stream position {position}, after checkpoint {question.checkpoint_after}",
                    Severity.WARNING,
                    qid,
                )
    return issues


_DIGITS = re.compile(r"\d+")


def _check_label_leaks(episodes: tuple[Episode, ...], field: str, add: Callable[..., None]) -> None:
    """Warn when ground-truth labels ride along with episodes (SPEC §10 defect 1)."""
    label_keys = sorted({key for episode in episodes for key in episode.meta if key in LABEL_META_KEYS})
    if label_keys:
        add(
            f"{field}[*].meta",
            "label_meta",
            f"episode meta carries ground-truth labels ({', '.join(label_keys)}); pytest-lens strips them from agent-visible results",
            Severity.WARNING,
        )
    if "episode_type" not in label_keys:
        return
    # Does the id's shape (digits removed) tell the label? e.g. "scope_ep_001" vs "scope_dx_001".
    shapes_by_label: dict[str, set[str]] = defaultdict(set)
    for episode in episodes:
        shapes_by_label[str(episode.meta.get("episode_type"))].add(_DIGITS.sub("#", episode.episode_id))
    labels = list(shapes_by_label)
    if len(labels) > 1 and all(shapes_by_label[a].isdisjoint(shapes_by_label[b]) for i, a in enumerate(labels) for b in labels[i + 1 :]):
        add(
            f"{field}[*].episode_id",
            "id_label_leak",
            "episode ids encode the signal/distractor split; agents see opaque aliases instead",
            Severity.WARNING,
        )


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a field path: ``questions[1].checkpoint_after``."""
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    return "".join(parts) or "-"


def schema_message(error: object) -> str:
    """A pydantic error as one line: its message (lists, not tuples) and the offending value, shortened."""
    details = dict(error)  # type: ignore[call-overload]
    # Sequences are tuples inside (frozen models); in JSON they are lists.
    message = str(details.get("msg", "invalid value")).replace("valid tuple", "valid list")
    if details.get("type") != "missing" and "input" in details:
        shown = repr(details["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        message += f" (got {shown})"
    return message
