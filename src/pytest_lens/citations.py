"""Finding ``[ref_id]`` citations and the sentences that carry them in an answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CitedSentence", "citable", "parse_citations", "split_citations", "split_sentences"]

# "[a]" or "[a, b]" but not a markdown link "[text](url)".
_BRACKETS = re.compile(r"\[([^\[\]\n]{1,400})\](?!\()")
_REF_TOKEN = re.compile(r"^[\w.:#/@+-]+$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s])")
_WORD = re.compile(r"[^\W_]{2,}")


@dataclass(frozen=True)
class CitedSentence:
    """A claim-bearing sentence of an answer and the refs it cites."""

    text: str
    citations: tuple[str, ...]


def _group_refs(group: str) -> list[str]:
    """The ref ids inside one bracket group (``"a, b"`` -> ``["a", "b"]``)."""
    refs = []
    for token in re.split(r"[,;]\s*|\s+", group.strip()):
        token = token.strip().removeprefix("ref:").removeprefix("ref_id:").strip()
        if token and _REF_TOKEN.match(token) and any(ch.isalnum() for ch in token):
            refs.append(token)
    return refs


def parse_citations(text: str) -> list[str]:
    """Ref ids cited in ``text``, in order of first appearance, without duplicates."""
    seen: dict[str, None] = {}
    for group in _BRACKETS.findall(text):
        for token in _group_refs(group):
            seen.setdefault(token, None)
    return list(seen)


def split_citations(text: str) -> list[str | tuple[str, ...]]:
    """``text`` as plain pieces (``str``) and citation groups (the ref ids of one ``[...]``), in order.

    Joining the pieces and ``"[" + ", ".join(group) + "]"`` gives back the text up to spacing inside brackets;
    a bracket holding no ref id stays text.
    """
    parts: list[str | tuple[str, ...]] = []
    position = 0
    for match in _BRACKETS.finditer(text):
        refs = _group_refs(match.group(1))
        if not refs:
            continue
        if match.start() > position:
            parts.append(text[position : match.start()])
        parts.append(tuple(refs))
        position = match.end()
    if position < len(text):
        parts.append(text[position:])
    return parts


def citable(ref_id: str) -> bool:
    """Whether ``[ref_id]`` in an answer reads back as exactly this one citation."""
    return parse_citations(f"[{ref_id}]") == [ref_id]


def split_sentences(text: str) -> list[CitedSentence]:
    """Split an answer into sentences; a fragment holding only citations joins the sentence before it.

    Markdown headings and fragments with fewer than two words are not claims and are skipped.
    """
    sentences: list[CitedSentence] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        for fragment in _SENTENCE_END.split(stripped):
            citations = tuple(parse_citations(fragment))
            prose = _BRACKETS.sub(" ", fragment)
            if len(_WORD.findall(prose)) >= 2:
                sentences.append(CitedSentence(fragment, citations))
            elif citations and sentences:
                last = sentences[-1]
                merged = tuple(dict.fromkeys(last.citations + citations))
                sentences[-1] = CitedSentence(f"{last.text} {fragment}", merged)
    return sentences
