"""A scripted model for the generator's LLM roles, served by the real local OpenAI-compatible test server."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from lens_fixtures.openai_server import ChatRequest, Reply
from pytest_lens.generator.llm import PLANNER_SYSTEM_PROMPT, RENDERER_SYSTEM_PROMPT
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.settings import CacheMode
from pytest_lens.llm.stats import LLMStats


@dataclass
class GeneratorPolicy:
    """Plans a few notes (some breaking the rules) and renders reports from their JSON, optionally misbehaving.

    ``flaw`` makes every rendered report break one rule: ``drop_reading``, ``invent_number``,
    ``wrong_sections`` or ``add_word`` (adds ``word`` as an extra note).
    """

    flaw: str | None = None
    word: str = "checkout"
    planned: list[str] = field(default_factory=list)

    def __call__(self, request: ChatRequest) -> Reply:
        payload = json.loads(request.first_user)
        if request.system == PLANNER_SYSTEM_PROMPT:
            self.planned.append(request.first_user)
            themes = {name: ["Visitors signed the day book at the front desk.", "Checked 4 doors."] for name in payload["themes"]}
            notes = ["Handover briefing ran to the usual agenda.", "Noted 12 items.", payload["storyline_events_never_to_mention"][-1]]
            return Reply(content="```json\n" + json.dumps({"signal_notes": notes, "themes": themes}) + "\n```")
        assert request.system == RENDERER_SYSTEM_PROMPT
        readings = list(payload["readings"])
        if self.flaw == "drop_reading":
            readings = readings[1:]
        notes = [*payload["notes"], *payload["routine_note_ideas"][:1], "Weather mild and dry."]
        if self.flaw == "invent_number":
            notes.append("Checked 77 cabinets.")
        if self.flaw == "add_word":
            notes.append(f"Quiet shift, {self.word} mentioned once.")
        lines = [payload["header"], "", "### Readings", *(f"- {r}" for r in readings), "", "### Changes"]
        lines += [f"- {c}" for c in payload["changes"]] or ["- none recorded"]
        lines += ["", "### Notes" if self.flaw == "wrong_sections" else "### Field Notes", *(f"- {n}" for n in notes), "", "### Flags"]
        lines += [f"- {f}" for f in payload["flags"]] or ["- none"]
        return Reply(content="\n".join(lines))


def chat_client(base_url: str, cache: Path, mode: CacheMode = "record", model: str = "scripted-writer") -> ChatClient:
    endpoint = LLMEndpoint(base_url, api_key_env="LENS_TEST_UNSET_KEY", retries=0, timeout_s=10)
    return ChatClient(endpoint, model, cache=RequestCache(cache, mode), stats=LLMStats(), seed=1)
