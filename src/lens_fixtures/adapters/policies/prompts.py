"""The memory policies' prompts, written for pytest-lens from the LENS V2 policy descriptions.

System prompts are fixed texts (so a server, or a test, can tell the policies' requests
apart); the sizes and the records go in the user message. Records are shown by
timestamp only, never by episode id: ids may encode dataset labels.
"""

from __future__ import annotations

__all__ = [
    "CORE_SYSTEM_PROMPT",
    "FACETS",
    "FACET_SYSTEM_PROMPT",
    "MERGE_SYSTEM_PROMPT",
    "NEW_RECORDS",
    "POLICY_SYSTEM_PROMPTS",
    "SECTION_SYSTEM_PROMPT",
    "SQUEEZE_SYSTEM_PROMPT",
]

#: Heads the records in every fold request (the test server's scripted folds split on it).
NEW_RECORDS = "New records:"

CORE_SYSTEM_PROMPT = """You keep the core memory of an assistant that answers an analyst's questions about a long stream of \
records (logs, reports, messages). The core memory is one block of text the assistant always sees; anything else it \
has to search for. Rewrite the block so that it takes in the new records:
- keep durable facts: who and what is involved, current values and settings and how they changed, with dates and exact figures;
- keep patterns that recur or build up across records, and anomalies not yet explained;
- replace what the new records supersede, and drop routine detail;
- write short bullet lines under a few headings of your choosing, within the word limit given.
Reply with the complete updated block only, nothing before or after it."""

SECTION_SYSTEM_PROMPT = """You write a progressive summary of a long stream of records (logs, reports, messages) for an \
analyst who will answer questions from it. The summary grows one section at a time. Given the summary so far and the \
next records, write the section for those records: what happened, what changed compared with before, the exact values \
and dates that matter, and how the trends of earlier sections continued, broke or reversed. Do not repeat what earlier \
sections say unless it changed. Reply with the new section only, within the word limit given."""

SQUEEZE_SYSTEM_PROMPT = """You condense the oldest sections of a progressive summary of a stream of records so that the \
whole summary fits its budget. Merge the sections given into one section that keeps the trends, turning points and \
anomalies and the dates and exact values they rest on; drop detail that later records made irrelevant. Reply with the \
merged section only, within the word limit given."""

FACET_SYSTEM_PROMPT = """You keep one facet of an analyst's notes on a long stream of records (logs, reports, messages). \
Update the notes of your facet with the new records, and only with what belongs to the facet: add what is new, correct \
what the records change, keep dates and exact values, drop what no longer matters. Reply with the complete updated \
notes only, as short bullet lines within the word limit given."""

MERGE_SYSTEM_PROMPT = """You merge four facets of an analyst's notes on a stream of records (entities, relations, events, \
causes) into one briefing that the analyst's assistant reads before it answers questions. Keep every date, exact value \
and cause-and-effect link the notes give; remove what two facets repeat; keep one heading per facet. Reply with the \
briefing only, within the word limit given."""

#: The faceted policy's facets: name -> what belongs to it.
FACETS: dict[str, str] = {
    "entities": "the people, teams, systems, components, places and other things the records are about: what each is and its current state",
    "relations": "how those entities relate to and depend on each other, and how the relations changed over time",
    "events": "what happened when: dated events, measurements and changes, in time order, with exact values",
    "causes": "cause and effect: what led to what, which explanations the records support and which they contradict, with dates",
}

#: Every policy system prompt, by the request kind it starts.
POLICY_SYSTEM_PROMPTS: dict[str, str] = {
    "core": CORE_SYSTEM_PROMPT,
    "section": SECTION_SYSTEM_PROMPT,
    "squeeze": SQUEEZE_SYSTEM_PROMPT,
    "facet": FACET_SYSTEM_PROMPT,
    "merge": MERGE_SYSTEM_PROMPT,
}
