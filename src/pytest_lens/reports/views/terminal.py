"""A transcript as terminal lines (``lens show``): the same story as the HTML report, in plain text."""

from __future__ import annotations

import json
import textwrap

from pytest_lens.analysis.format import METRIC_LABELS
from pytest_lens.records.results import ToolCallRecord
from pytest_lens.reports.views.transcript import Transcript, call_signature, hit_text

__all__ = ["transcript_lines"]

_INDENT = "  "


def _call_outcome(call: ToolCallRecord) -> str:
    left = []
    if call.result_tokens_left is not None:
        left.append(f"{call.result_tokens_left:,} result tokens left")
    if call.calls_left is not None:
        left.append(f"{call.calls_left} calls left")
    budget = f" ({', '.join(left)})" if left else ""
    status = call.status if call.status == "ok" else call.status.upper()
    error = f": {call.error}" if call.error else ""
    return f"{status}, {call.result_tokens:,} tokens{budget}{error}"


def _block(title: str, text: str, width: int) -> list[str]:
    lines = [f"{title}:"]
    for paragraph in text.splitlines() or [""]:
        wrapped = textwrap.wrap(paragraph, width=width - 4, subsequent_indent="  ") or [""]
        lines.extend(_INDENT + line for line in wrapped)
    return lines


def transcript_lines(transcript: Transcript, *, width: int = 100, episode_texts: bool = False) -> list[str]:
    """The transcript of one question; ``episode_texts`` adds the full text of every cited or required episode."""
    r = transcript.result
    stream = f" of {transcript.stream_length}" if transcript.stream_length is not None else ""
    judge = f", judge {r.judge}" if r.judge else ""
    lines = [
        "=" * min(width, max(20, len(transcript.test_id))),
        transcript.test_id,
        f"adapter {r.adapter}, budget {r.budget}, scope {r.scope_id} after {r.checkpoint}{stream} episodes, "
        f"type {r.question_type} ({r.category}), suite {r.suite}, agent {r.agent}{judge}",
    ]
    if r.skipped is not None:
        lines.append(f"outcome: skipped ({r.skipped})")
        return lines
    gated = f" (gated: {'; '.join(transcript.gate_reasons) or 'a hard gate'})" if r.gated else ""
    composite = f" (composite {r.composite:.3f})" if abs(transcript.headline - r.composite) > 5e-4 else ""
    lines.append(f"outcome: {transcript.outcome}, headline {transcript.headline:.3f}{composite}{gated}, {r.duration_s:.2f} s")
    lines.append("")
    lines.extend(_block("question", r.prompt, width))
    if r.canonical_answer:
        lines.extend(_block("reference answer", r.canonical_answer, width))
    if r.key_facts:
        found = sum(fact.found for fact in r.key_facts)
        lines.append(f"key facts ({found} of {len(r.key_facts)} stated in the answer):")
        lines.extend(f"{_INDENT}[{'x' if fact.found else ' '}] {fact.fact}" for fact in r.key_facts)
    lines.append("")
    calls = transcript.calls
    lines.append(f"tool calls ({len(calls)}; {r.result_tokens:,} result tokens, {r.turns} turns, {r.agent_tokens:,} agent tokens):")
    for call in calls:
        lines.append(f"{_INDENT}{call.index}. [turn {call.turn}] {call_signature(call)} -> {_call_outcome(call)}")
        required, cited = set(r.required_refs), set(r.cited_refs)
        for rank, hit in enumerate(call.hits, start=1):
            flags = ("R" if hit.ref_id in required else "-") + ("C" if hit.ref_id in cited else "-")
            score = f"{hit.score:.4f}" if hit.score is not None else "-"
            snippet = textwrap.shorten(" ".join(hit_text(hit).split()), width=max(20, width - 20 - len(hit.ref_id)), placeholder="…")
            lines.append(f"{_INDENT * 3}{rank:>2}. {flags} {hit.ref_id}  {score}  {snippet}")
        for label, refs in transcript.returned_without_hits(call):
            lines.append(f"{_INDENT * 3}{'also ' if call.hits else ''}{label}: {', '.join(refs)}")
    lines.append("")
    lines.extend(_block("answer", r.answer or "(empty)", width))
    lines.append("")
    lines.append("evidence (R required by the dataset, C cited by the answer, T returned by a tool call):")
    rows = transcript.evidence()
    if not rows:
        lines.append(f"{_INDENT}(none)")
    id_width = max((len(row.ref_id) for row in rows), default=0)
    verdict_width = max((len(row.verdict) for row in rows), default=0)
    for row in rows:
        where = f"call {row.first_call}" if row.first_call is not None else "-"
        dated = f"  {row.episode.timestamp[:10]}" if row.episode is not None else ""
        lines.append(f"{_INDENT}{row.marks} {row.ref_id:<{id_width}}  {where:<7} {row.verdict:<{verdict_width}}{dated}".rstrip())
    if any(row.episode is not None for row in rows):
        lines.append(f"{_INDENT}(--episodes prints the texts of the cited and required episodes)")
    if r.aliases:
        lines.append(f"{_INDENT}(the agent saw aliases: " + ", ".join(f"{alias} = {ref}" for alias, ref in r.aliases.items()) + ")")
    lines.append("")
    lines.append("metrics: " + (", ".join(f"{METRIC_LABELS.get(k, k)} {v:.3f}" for k, v in r.metrics.items()) or "(none)"))
    for name, detail in r.scorer_details.items():
        lines.append(f"scorer {name}:")
        lines.extend(_INDENT + line for line in json.dumps(detail, indent=2, ensure_ascii=False, default=str).splitlines())
    lines.extend(_problems(transcript))
    if episode_texts:
        lines.extend(_episodes(transcript, width))
    return lines


def _problems(transcript: Transcript) -> list[str]:
    lines = [f"{kind.upper() if kind == 'fault' else kind}: {text}" for kind, text in transcript.problems()]
    return ["", *lines] if lines else []


def _episodes(transcript: Transcript, width: int) -> list[str]:
    lines: list[str] = []
    for row in transcript.evidence():
        if row.episode is None or not (row.required or row.cited):
            continue
        lines.append("")
        lines.append(f"--- {row.ref_id} ({row.episode.timestamp}; {row.verdict})")
        lines.extend(row.episode.text.rstrip().splitlines())
    return lines
