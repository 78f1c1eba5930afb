"""MEME (Jung et al., 2026) HF records (``meme_nofiller.json``, ``meme_filler32k.json``) -> one scope per episode.

Field list as reconstructed from MEME-public ``build_dataset.py::_build_entry``: ``sessions`` become
episodes (neutral ids; the session's ``type``/``evidence_type`` go to ``meta``, never to the agent);
``before_questions`` are asked after ``position_after_session`` + 1 sessions (``run_agent.py`` feeds
sessions 0..position inclusive), ``after_questions`` likewise. Gold values follow the generator's
``entity_values`` convention (Tr: the ordered history; Cas: the new value; Abs and Del: the value that
must no longer be stated; Agg: every value; ER: the verbatim payload); a before-probe expects the
entity's ``before`` value. The pairing entity is the first key of ``entity_values``.
"""

from __future__ import annotations

from typing import Any

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.fields import as_list, parse_time, require
from pytest_lens.datasets.key_facts import DELETED_FACT, UNCERTAIN_FACT
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope

__all__ = ["TASK_TYPES", "import_meme"]

#: MEME task codes as question types.
TASK_TYPES = {"ER": "exact_recall", "Agg": "aggregation", "Tr": "tracking", "Del": "deletion", "Cas": "cascade", "Abs": "absence"}
_DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M")


def import_meme(document: Any, source: str = "meme") -> Dataset:
    """Convert a parsed MEME file (a list of episode records)."""
    scopes: list[Scope] = []
    questions: list[Question] = []
    for index, record in enumerate(as_list(document, "$")):
        where = f"[{index}]"
        scope_id = f"meme_{require(record, 'episode_id', where)}"
        sessions = require(record, "sessions", where, list)
        episodes: list[Episode] = []
        for s_index, session in enumerate(sessions):
            s_where = f"{where}.sessions[{s_index}]"
            timestamp = parse_time(require(session, "timestamp", s_where), _DATE_FORMATS, f"{s_where}.timestamp")
            turns = require(session, "conversation", s_where, list)
            lines = [f"Conversation on {timestamp:%Y-%m-%d %H:%M}"]
            for t_index, turn in enumerate(turns):
                t_where = f"{s_where}.conversation[{t_index}]"
                lines.append(f"{str(require(turn, 'role', t_where)).capitalize()}: {require(turn, 'content', t_where)}")
            meta = {"session_id": str(session.get("session_id", "")), "session_type": str(session.get("type", ""))}
            if session.get("evidence_type"):
                meta["evidence_type"] = str(session["evidence_type"])
            episodes.append(
                Episode(
                    episode_id=f"{scope_id}_s{s_index + 1:02d}", scope_id=scope_id, timestamp=timestamp, text="\n".join(lines), meta=meta
                )
            )
        scopes.append(Scope(scope_id=scope_id, episodes=tuple(episodes)))
        entities = record.get("entities") or {}
        for phase in ("before", "after"):
            block = record.get(f"{phase}_questions")
            if block is None:
                continue
            b_where = f"{where}.{phase}_questions"
            position = require(block, "position_after_session", b_where, int)
            if not 0 <= position < len(sessions):
                raise ImportFormatError(f"{b_where}.position_after_session", f"{position} is outside the {len(sessions)} sessions")
            for q_index, item in enumerate(require(block, "questions", b_where, list)):
                questions.append(
                    _question(item, f"{b_where}.questions[{q_index}]", scope_id, phase, len(questions), position + 1, entities, sessions)
                )
    return Dataset(suite="meme", scopes=tuple(scopes), questions=tuple(questions))


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _question(
    item: Any, where: str, scope_id: str, phase: str, index: int, checkpoint: int, entities: dict[str, Any], sessions: list[Any]
) -> Question:
    code = str(require(item, "task_type", where))
    task = TASK_TYPES.get(code)
    if task is None:
        raise ImportFormatError(f"{where}.task_type", f"unknown task {code!r}; expected one of {', '.join(TASK_TYPES)}")
    entity_values = item.get("entity_values") or {}
    if not isinstance(entity_values, dict):
        raise ImportFormatError(f"{where}.entity_values", "expected an object")
    names = list(entity_values) or [str(e) for e in _values(item.get("entity") or [])]
    if not names:
        raise ImportFormatError(f"{where}.entity_values", "names no entity")
    entity = names[0]
    values = [v for name in entity_values for v in _values(entity_values[name])]
    gold = item.get("gold_answer") or item.get("expected_answer") or ", ".join(values)
    stale: tuple[str, ...] = ()
    if phase == "before":
        before = (entities.get(entity) or {}).get("before")
        facts = [KeyFact(fact=str(before))] if before else [KeyFact(fact=v) for v in values]
    elif task in ("absence", "deletion"):
        facts, stale = [UNCERTAIN_FACT if task == "absence" else DELETED_FACT], tuple(values)
    elif task == "cascade":
        facts = [KeyFact(fact=v) for v in values]
        before = (entities.get(entity) or {}).get("before")
        stale = (str(before),) if before and str(before) not in values else ()
    else:
        facts = [KeyFact(fact=v) for v in values]
    if not facts:
        raise ImportFormatError(f"{where}.entity_values", "holds no value")
    refs = _refs(names, task, sessions, checkpoint, scope_id)
    meta: dict[str, Any] = {"task_code": code}
    if item.get("hop") is not None:
        meta["hop"] = item["hop"]
    return Question(
        question_id=f"{scope_id}_q{index + 1:02d}_{task}_{phase}",
        scope_id=scope_id,
        checkpoint_after=checkpoint,
        question_type=task,
        prompt=str(require(item, "question", where)),
        ground_truth=GroundTruth(canonical_answer=str(gold), required_evidence_refs=tuple(refs), key_facts=tuple(facts)),
        phase=phase,  # type: ignore[arg-type]
        entity=entity,
        stale_values=stale,
        meta=meta,
    )


def _refs(names: list[str], task: str, sessions: list[Any], checkpoint: int, scope_id: str) -> list[str]:
    """Evidence sessions (up to the checkpoint) whose gold facts are about the probe's entities, plus the change event."""
    refs = []
    for s_index, session in enumerate(sessions[:checkpoint]):
        facts = session.get("gold_facts") or [] if isinstance(session, dict) else []
        about = any(isinstance(f, dict) and f.get("entity") in names for f in facts)
        change = task in ("cascade", "absence", "deletion") and "change" in str(session.get("evidence_type", "")).lower()
        if about or change:
            refs.append(f"{scope_id}_s{s_index + 1:02d}")
    return refs
