"""Word-level text helpers shared by the offline agent, matching and the reference adapters; text made safe for a terminal."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["STOPWORDS", "content_terms", "normalize", "terminal_safe", "words"]

# fmt: off
STOPWORDS = frozenset({
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "anything", "are", "as", "at",
    "based", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "describe", "did", "do", "does", "doing", "down", "during", "each", "explain", "far", "few", "for", "from", "further",
    "give", "given", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "itself", "just", "list", "many", "me", "more", "most", "much", "my", "no", "nor", "not",
    "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should",
    "show", "so", "some", "such", "tell", "than", "that", "the", "their", "theirs", "them", "then", "there", "these",
    "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours"
})
# fmt: on

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s%.]|(?<!\d)\.|\.(?!\d)", re.UNICODE)
_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")
# ASCII characters _PUNCT's first branch ([^\w\s%.]) blanks out.
_ASCII_PUNCT = {code: " " for code in range(128) if not (chr(code).isalnum() or chr(code).isspace() or chr(code) in "_%.")}


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits; punctuation and ``_`` split words)."""
    return _WORD.findall(text.lower())


def content_terms(text: str) -> list[str]:
    """Words that carry meaning: no stopwords, no single characters; order kept, duplicates removed."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())))


def normalize(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form for substring matching; decimal points survive."""
    if text.isascii():
        # Same result as the general path below, an order of magnitude faster on long ASCII texts.
        text = _DOT.sub(" ", text.lower().translate(_ASCII_PUNCT))
    else:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
        text = _PUNCT.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


#: Characters a terminal acts on rather than shows: C0 controls but tab and newline (ESC starts every escape sequence;
#: carriage return and backspace overwrite what was printed), DEL, the C1 controls (U+009B is a one-byte CSI), and the
#: bidirectional overrides and isolates that make text display in another order than it reads.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    r"""``text`` with every control character shown as its escape (ESC as ``\x1b``) instead of acting on the terminal.

    Whatever a dataset, an adapter or a model wrote reaches the terminal through this: an episode that holds
    ``ESC[2J`` must not clear the screen, nor print a fake verdict over the real one.
    """
    if _TERMINAL_CONTROLS.search(text) is None:
        return text
    return _TERMINAL_CONTROLS.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
