"""policy-summary: a progressive summary, one section per fold, its oldest sections condensed when it outgrows its size.

Each fold writes a new section for its records, reading the summary so far (so it says
what changed and which trends continued). When the sections together pass the block's
size, the oldest half of them is condensed into one section by another request, until
the summary fits. Searches go to sqlite-hybrid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.policies.base import PolicyAdapter, Record, fit_tokens, words_for
from lens_fixtures.adapters.policies.prompts import NEW_RECORDS, SECTION_SYSTEM_PROMPT, SQUEEZE_SYSTEM_PROMPT
from pytest_lens.records.budget import result_tokens

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["SUMMARY_REF", "Section", "SummaryPolicy"]

SUMMARY_REF = "progressive_summary"


@dataclass(frozen=True)
class Section:
    """One section of the summary: the dates of the records it covers, and its text."""

    first: str
    last: str
    text: str

    def shown(self) -> str:
        """``## Records from FIRST to LAST`` and the text."""
        period = self.first if self.first == self.last else f"{self.first} to {self.last}"
        return f"## Records from {period}\n{self.text}"


def _shown(sections: Sequence[Section]) -> str:
    return "\n\n".join(section.shown() for section in sections)


class SummaryPolicy(PolicyAdapter[tuple[Section, ...]]):
    """``policy-summary``: the sections, oldest first, are the block of context.

    Option ``section_max_tokens`` (default a quarter of ``context_max_tokens``) bounds a new section.
    """

    policy_name = "policy-summary"
    context_ref = SUMMARY_REF
    context_title = "progressive summary"

    def __init__(
        self, storage_dir: str | None = None, *, lens_llm: ChatClient | None = None, section_max_tokens: int | None = None, **options: Any
    ) -> None:
        # lens_llm is named, not left in **options: the runner passes the run's client only to a constructor that names it.
        super().__init__(storage_dir, lens_llm=lens_llm, **options)
        if section_max_tokens is None:
            section_max_tokens = max(50, self.context_max_tokens // 4)
        if isinstance(section_max_tokens, bool) or not isinstance(section_max_tokens, int) or section_max_tokens < 20:
            raise ValueError(f"option section_max_tokens must be an integer of at least 20, got {section_max_tokens!r}")
        self._section_tokens = min(section_max_tokens, self.context_max_tokens)

    def initial_state(self) -> tuple[Section, ...]:
        """No sections."""
        return ()

    def fold(self, state: tuple[Section, ...], records: Sequence[Record]) -> tuple[Section, ...]:
        """A new section for ``records``, then the oldest sections condensed while the summary is too long."""
        limit = self._section_tokens
        first, last = records[0].timestamp[:10], records[-1].timestamp[:10]
        user = (
            f"Summary so far:\n{_shown(state) or '(empty)'}\n\n"
            f"{NEW_RECORDS}\n{self.records_text(records)}\n\n"
            f"Write the section for these records ({first} to {last}) in at most {words_for(limit)} words."
        )
        text, _ = self.ask(SECTION_SYSTEM_PROMPT, user, limit)
        sections = (*state, Section(first, last, text)) if text else state
        return self._squeeze(sections)

    def _squeeze(self, sections: tuple[Section, ...]) -> tuple[Section, ...]:
        budget = self.context_max_tokens
        while len(sections) > 1 and result_tokens(_shown(sections)) > budget:
            split = max(2, len(sections) // 2)
            oldest, rest = sections[:split], sections[split:]
            limit = max(50, budget // 2)
            user = f"Sections to merge:\n{_shown(oldest)}\n\nWrite one section of at most {words_for(limit)} words."
            text, _ = self.ask(SQUEEZE_SYSTEM_PROMPT, user, limit)
            # When nothing usable comes back the oldest section goes, so the newest records stay in view.
            sections = (Section(oldest[0].first, oldest[-1].last, text), *rest) if text else sections[1:]
        if sections and result_tokens(_shown(sections)) > budget:  # one section longer than the block: its text is cut
            only = sections[0]
            head = result_tokens(Section(only.first, only.last, "").shown()) + 1
            sections = (Section(only.first, only.last, fit_tokens(only.text, budget - head)[0]),)
        return sections

    def render(self, state: tuple[Section, ...], span: tuple[int, int]) -> str:
        """The sections, oldest first."""
        return _shown(state)
