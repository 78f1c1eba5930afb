"""Splitting an episode into section chunks for embedding (the paper's sqlite-chunked-hybrid).

Episodes are markdown-like logs: a date header (``## 2024-01-15 Daily Operations
Summary``) and ``###`` sections. Each chunk is one section (sections shorter than
``min_words`` are merged with the next one rather than dropped, so nothing goes
unindexed), sections over ``max_words`` are split at line boundaries, and every
chunk starts with the episode's header line so its date travels with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Chunk", "chunk_episode"]

_SECTION = re.compile(r"^###\s")


@dataclass(frozen=True)
class Chunk:
    """One embeddable piece of an episode; ``text`` includes the header line."""

    position: int
    heading: str | None
    text: str
    words: int


@dataclass
class _Section:
    heading: str | None
    lines: list[str]

    @property
    def words(self) -> int:
        return sum(len(line.split()) for line in self.lines)


def chunk_episode(text: str, max_words: int = 150, min_words: int = 20) -> list[Chunk]:
    """Section chunks of ``text``, in order; an empty text has none."""
    if max_words < 1 or min_words < 0:
        raise ValueError(f"max_words must be >= 1 and min_words >= 0, got {max_words} and {min_words}")
    header, sections = _sections(text)
    pieces: list[_Section] = []
    for section in _merge_small(sections, max_words, min_words):
        pieces.extend(_split_long(section, max_words))
    chunks: list[Chunk] = []
    for piece in pieces:
        body = "\n".join(piece.lines).strip()
        if not body:
            continue
        full = f"{header}\n{body}" if header else body
        chunks.append(Chunk(position=len(chunks), heading=piece.heading, text=full, words=piece.words))
    return chunks


def _sections(text: str) -> tuple[str | None, list[_Section]]:
    lines = [line.rstrip() for line in text.splitlines()]
    header: str | None = None
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and not _SECTION.match(lines[first].lstrip()):
        header = lines[first].strip()
        lines = lines[first + 1 :]
    sections: list[_Section] = [_Section(None, [])]
    for line in lines:
        if _SECTION.match(line.lstrip()):
            sections.append(_Section(line.strip()[3:].strip() or None, [line.strip()]))
        elif line.strip():
            sections[-1].lines.append(line)
    sections = [section for section in sections if section.lines]
    if not sections and header is not None:
        return None, [_Section(None, [header])]  # a one-line note is its own chunk
    return header, sections


def _merge_small(sections: list[_Section], max_words: int, min_words: int) -> list[_Section]:
    merged: list[_Section] = []
    carry: _Section | None = None
    for section in sections:
        if carry is not None:
            if carry.words + section.words <= max_words:
                section = _Section(carry.heading, carry.lines + section.lines)
            else:
                merged.append(carry)
            carry = None
        if section.words < min_words:
            carry = section
        else:
            merged.append(section)
    if carry is not None:
        if merged and merged[-1].words + carry.words <= max_words:
            merged[-1] = _Section(merged[-1].heading, merged[-1].lines + carry.lines)
        else:
            merged.append(carry)
    return merged


def _split_long(section: _Section, max_words: int) -> list[_Section]:
    if section.words <= max_words:
        return [section]
    heading_line = section.lines[0] if section.heading is not None else None
    body = section.lines[1:] if heading_line is not None else section.lines
    budget = max_words - (len(heading_line.split()) if heading_line else 0)
    budget = max(budget, 1)
    pieces: list[list[str]] = [[]]
    used = 0
    for line in body:
        for part in _line_parts(line, budget):
            count = len(part.split())
            if pieces[-1] and used + count > budget:
                pieces.append([])
                used = 0
            pieces[-1].append(part)
            used += count
    # Continuation pieces repeat the section heading so each chunk says what it is about.
    return [_Section(section.heading, ([heading_line] if heading_line else []) + lines) for lines in pieces if lines]


def _line_parts(line: str, budget: int) -> list[str]:
    words = line.split()
    if len(words) <= budget:
        return [line]
    return [" ".join(words[start : start + budget]) for start in range(0, len(words), budget)]
