"""LoCoMo (Maharana et al., ACL 2024) ``locomo10.json`` -> one scope per conversation.

Sessions become episodes (``<speaker>: <text>`` lines under the session's date; shared photos appear as
their BLIP caption); every QA item is asked once the whole conversation is ingested; its ``evidence``
dia_ids (``D<session>:<turn>``) become required refs to the sessions holding them; categories become
question types (1 multi_hop, 2 temporal_reasoning, 3 open_domain, 4 single_hop, 5 adversarial).
Malformed evidence entries found in the real file (``"D8:6; D9:17"``, ``"D:11:26"``, space-separated
lists) are read leniently; an entry naming no session of the conversation is kept as is, so the
validator lists it as a data defect.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.fields import as_list, parse_time, require
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope

__all__ = ["CATEGORIES", "import_locomo"]

#: LoCoMo's QA categories as question types.
CATEGORIES: dict[int, str] = {1: "multi_hop", 2: "temporal_reasoning", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)$")
_DIA = re.compile(r"D:?(\d+):(\d+)")
_NO_INFORMATION = KeyFact(fact="no information available", aliases=("not mentioned",))


def import_locomo(document: Any, source: str = "locomo") -> Dataset:
    """Convert the parsed ``locomo10.json`` list."""
    scopes: list[Scope] = []
    questions: list[Question] = []
    for index, sample in enumerate(as_list(document, "$")):
        where = f"[{index}]"
        sample_id = str(require(sample, "sample_id", where))
        scope_id = f"locomo_{sample_id}"
        conversation = require(sample, "conversation", where, dict)
        numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)) and isinstance(conversation[key], list))
        if not numbers:
            raise ImportFormatError(f"{where}.conversation", "no session_<n> lists")
        episodes: list[Episode] = []
        session_episode: dict[int, str] = {}
        for number in numbers:
            stamp_text = conversation.get(f"session_{number}_date_time")
            timestamp = parse_time(
                stamp_text, ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"), f"{where}.conversation.session_{number}_date_time"
            )
            lines = [f"Conversation on {stamp_text} ({timestamp:%Y-%m-%d})"]
            for t_index, turn in enumerate(conversation[f"session_{number}"]):
                t_where = f"{where}.conversation.session_{number}[{t_index}]"
                line = f"{require(turn, 'speaker', t_where, str)}: {require(turn, 'text', t_where, str)}"
                if turn.get("blip_caption"):
                    line += f" (shares a photo: {turn['blip_caption']})"
                lines.append(line)
            episode_id = f"{scope_id}_s{number:02d}"
            session_episode[number] = episode_id
            episodes.append(Episode(episode_id=episode_id, scope_id=scope_id, timestamp=timestamp, text="\n".join(lines)))
        scopes.append(Scope(scope_id=scope_id, episodes=tuple(episodes)))
        for q_index, item in enumerate(require(sample, "qa", where, list)):
            questions.append(_question(item, f"{where}.qa[{q_index}]", scope_id, q_index, len(episodes), session_episode))
    return Dataset(suite="locomo", scopes=tuple(scopes), questions=tuple(questions))


def _question(item: Any, where: str, scope_id: str, index: int, checkpoint: int, session_episode: dict[int, str]) -> Question:
    category = require(item, "category", where, int)
    if category not in CATEGORIES:
        raise ImportFormatError(f"{where}.category", f"unknown category {category}; expected 1-5")
    prompt = str(require(item, "question", where))
    refs: list[str] = []
    for entry in item.get("evidence", []):
        found = _DIA.findall(str(entry))
        if not found:
            refs.append(str(entry))
        for session, _turn in found:
            refs.append(session_episode.get(int(session), f"D{session}:{_turn}"))
    answer = item.get("answer")
    if category == 5:
        canonical = "Not mentioned in the conversation (no information available)."
        facts = [_NO_INFORMATION]
    else:
        if answer is None:
            raise ImportFormatError(f"{where}.answer", "missing (only category 5 may omit it)")
        canonical = str(answer)
        gold = canonical.split(";")[0] if category == 3 else canonical
        parts = gold.split(",") if category == 1 else [gold]
        facts = [KeyFact(fact=part.strip()) for part in parts if part.strip()]
    meta: dict[str, Any] = {"category": category, "evidence": list(item.get("evidence", []))}
    if answer is not None:
        meta["answer"] = str(answer)
    if "adversarial_answer" in item:
        meta["adversarial_answer"] = str(item["adversarial_answer"])
    return Question(
        question_id=f"{scope_id}_q{index + 1:04d}_{CATEGORIES[category]}",
        scope_id=scope_id,
        checkpoint_after=checkpoint,
        question_type=CATEGORIES[category],
        prompt=prompt,
        ground_truth=GroundTruth(canonical_answer=canonical, required_evidence_refs=tuple(dict.fromkeys(refs)), key_facts=tuple(facts)),
        meta=meta,
    )
