"""LongMemEval (Wu et al., ICLR 2025) instances -> one scope per question.

Each instance's ``haystack_sessions`` become episodes (``<role>: <content>`` lines under the session
date), in the order of ``haystack_dates``; the question is asked once every session dated no later than
``question_date`` is ingested (the prompt carries the current date, as LongMemEval's reader prompt
does); ``answer_session_ids`` become required refs. Episode ids are neutral (``..._s003``): LongMemEval's
session ids (``answer_...``) would tell the agent which sessions hold the answer. Question types keep
LongMemEval's names (``temporal_reasoning`` ...); ``_abs`` question ids mark abstention questions.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.fields import as_list, parse_time, require
from pytest_lens.datasets.key_facts import UNCERTAIN_FACT
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope

__all__ = ["import_longmemeval"]

_UNDATED = datetime(2023, 1, 1)
_DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y/%m/%d")


def import_longmemeval(document: Any, source: str = "longmemeval") -> Dataset:
    """Convert a parsed LongMemEval file (a list of instances)."""
    scopes: list[Scope] = []
    questions: list[Question] = []
    for index, instance in enumerate(as_list(document, "$")):
        where = f"[{index}]"
        question_id = str(require(instance, "question_id", where))
        scope_id = f"lme_{question_id}"
        sessions = require(instance, "haystack_sessions", where, list)
        session_ids = instance.get("haystack_session_ids") or [f"session_{i}" for i in range(len(sessions))]
        dates = instance.get("haystack_dates") or []
        if len(session_ids) != len(sessions) or (dates and len(dates) != len(sessions)):
            raise ImportFormatError(f"{where}.haystack_session_ids", "haystack_sessions, _session_ids and _dates differ in length")
        if not sessions:
            raise ImportFormatError(f"{where}.haystack_sessions", "empty")
        answer_ids = set(map(str, instance.get("answer_session_ids") or []))
        episodes: list[Episode] = []
        refs: list[str] = []
        for s_index, turns in enumerate(sessions):
            s_where = f"{where}.haystack_sessions[{s_index}]"
            if not isinstance(turns, list):
                raise ImportFormatError(s_where, "expected a list of turns")
            date_text = dates[s_index] if dates else None
            timestamp = parse_time(date_text, _DATE_FORMATS, f"{where}.haystack_dates[{s_index}]") if dates else None
            lines = [f"Chat on {date_text}"] if date_text else []
            lines += [f"{require(t, 'role', f'{s_where}[{i}]')}: {require(t, 'content', f'{s_where}[{i}]')}" for i, t in enumerate(turns)]
            episode_id = f"{scope_id}_s{s_index + 1:03d}"
            if str(session_ids[s_index]) in answer_ids:
                refs.append(episode_id)
            episodes.append(
                Episode(
                    episode_id=episode_id,
                    scope_id=scope_id,
                    # Undated haystacks keep their order, one minute apart.
                    timestamp=timestamp or _UNDATED + timedelta(minutes=s_index),
                    text="\n".join(lines),
                    meta={"session_id": str(session_ids[s_index])},
                )
            )
        question_date = instance.get("question_date")
        checkpoint = len(episodes)
        if question_date and dates:
            asked = parse_time(question_date, _DATE_FORMATS, f"{where}.question_date")
            checkpoint = sum(1 for episode in episodes if episode.timestamp <= asked) or len(episodes)
        answer = str(require(instance, "answer", where))
        abstention = question_id.endswith("_abs")
        qtype = str(require(instance, "question_type", where)).replace("-", "_")
        prompt = str(require(instance, "question", where))
        if question_date:
            prompt = f"{prompt} (Current date: {question_date}.)"
        scopes.append(Scope(scope_id=scope_id, episodes=tuple(episodes)))
        questions.append(
            Question(
                question_id=f"{scope_id}_{qtype}",
                scope_id=scope_id,
                checkpoint_after=checkpoint,
                question_type=qtype,
                prompt=prompt,
                ground_truth=GroundTruth(
                    canonical_answer=answer,
                    required_evidence_refs=tuple(refs),
                    key_facts=(UNCERTAIN_FACT,) if abstention else (KeyFact(fact=answer),),
                ),
                answers=() if abstention else (answer,),
                meta={"question_id": question_id, "abstention": abstention},
            )
        )
    return Dataset(suite="longmemeval", scopes=tuple(scopes), questions=tuple(questions))
