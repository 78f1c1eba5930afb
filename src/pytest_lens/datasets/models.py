"""Typed dataset models (SPEC §3), shared by the loader, the generators and the importers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationInfo, field_validator, model_serializer, model_validator

__all__ = [
    "QUESTION_CATEGORIES",
    "Dataset",
    "Episode",
    "GroundTruth",
    "KeyFact",
    "Question",
    "Scope",
    "question_category",
]

#: The ten LENS question types and the category each belongs to.
QUESTION_CATEGORIES: dict[str, str] = {
    "longitudinal": "synthesis",
    "negative": "synthesis",
    "temporal": "synthesis",
    "counterfactual": "synthesis",
    "paraphrase": "synthesis",
    "distractor_resistance": "synthesis",
    "severity_assessment": "synthesis",
    "evidence_sufficiency": "synthesis",
    "null_hypothesis": "control",
    "action_recommendation": "decision",
}


def question_category(question_type: str) -> str:
    """``synthesis``, ``control`` or ``decision`` for a LENS type; ``other`` for suite-specific types."""
    return QUESTION_CATEGORIES.get(question_type, "other")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class KeyFact(_Model):
    """An atomic claim a good answer states, with alternative phrasings that also count.

    In JSON a key fact is either a plain string or ``{"fact": ..., "aliases": [...]}``.
    """

    fact: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"fact": value}
        return value

    @model_serializer(mode="plain")
    def _to_json(self) -> Any:
        if not self.aliases:
            return self.fact
        return {"fact": self.fact, "aliases": list(self.aliases)}

    @property
    def patterns(self) -> tuple[str, ...]:
        """The fact followed by its aliases: any one of them matching counts."""
        return (self.fact, *self.aliases)


class GroundTruth(_Model):
    """What a correct answer contains and which episodes support it."""

    canonical_answer: str
    required_evidence_refs: tuple[str, ...] = ()
    key_facts: tuple[KeyFact, ...] = ()


class Episode(_Model):
    """One timestamped record of a scope's stream.

    ``timestamp`` is an ISO 8601 date-time (a string in JSON). One without an offset is taken as UTC;
    one with an offset (``Z``, ``+02:00``) is converted to UTC. Either way it is kept, compared and
    handed to adapters as UTC without an offset, so files mixing the two forms are streamed in true
    time order. Numbers are refused (seconds or milliseconds since the epoch? the file must say).
    """

    episode_id: str = Field(min_length=1)
    scope_id: str = Field(min_length=1)
    timestamp: datetime
    text: str
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _utc_timestamp(cls, value: Any, info: ValidationInfo) -> datetime:
        episode = f"episode {info.data['episode_id']!r}: " if "episode_id" in info.data else ""
        parsed = value
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value.strip())
            except ValueError:
                raise ValueError(f"{episode}timestamp is not an ISO 8601 date-time such as 2024-03-01T09:30:00") from None
        if not isinstance(parsed, datetime):
            raise ValueError(f"{episode}timestamp must be an ISO 8601 string such as 2024-03-01T09:30:00, not a {type(value).__name__}")
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed

    @property
    def iso_timestamp(self) -> str:
        """The timestamp as handed to adapters."""
        return self.timestamp.isoformat()


class Question(_Model):
    """A question asked after the first ``checkpoint_after`` episodes of its scope."""

    question_id: str = Field(min_length=1)
    scope_id: str = Field(min_length=1)
    checkpoint_after: StrictInt
    question_type: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    ground_truth: GroundTruth
    # Sibling-suite extensions (MEME, MemoryAgentBench, importers). All optional: LENS data never sets them.
    #: MEME probe phase: asked before or after the change/delete event.
    phase: Literal["before", "after"] | None = None
    #: The entity a probe is about (MEME pairs after-probes with before-probes of the same entity).
    entity: str | None = None
    #: Acceptable gold answers, any one of which is correct (MemoryAgentBench SubEM / exact match).
    answers: tuple[str, ...] = ()
    #: Superseded or deleted values a correct answer must not state (MEME Cascade/Absence/Deletion, conflicts).
    stale_values: tuple[str, ...] = ()
    #: Provenance of imported or generated questions (source ids, original category); never shown to agents.
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def category(self) -> str:
        """``synthesis``, ``control``, ``decision`` or ``other``."""
        return question_category(self.question_type)


class Scope(_Model):
    """A stream of episodes; its questions live at the dataset level."""

    scope_id: str = Field(min_length=1)
    episodes: tuple[Episode, ...]


class Dataset(_Model):
    """The LENS JSON format: ``{"version", "scopes": [...], "questions": [...]}``.

    ``suite`` is a pytest-lens extension (default ``lens``) naming the benchmark
    whose question types and metrics apply.
    """

    version: str = "0.1.0"
    suite: str = "lens"
    scopes: tuple[Scope, ...]
    questions: tuple[Question, ...] = ()
