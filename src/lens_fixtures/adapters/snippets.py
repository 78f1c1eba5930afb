"""Short excerpts for search results: the agent pays for every byte a search returns."""

from __future__ import annotations

__all__ = ["excerpt"]

ELLIPSIS = " ..."


def excerpt(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at a line break or else a word break when one is near."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    text = text.strip()
    if len(text) <= max_chars:
        return text
    room = max(1, max_chars - len(ELLIPSIS))
    cut = text[:room]
    for separator in ("\n", " "):
        at = cut.rfind(separator)
        if at >= room // 2:
            cut = cut[:at]
            break
    return cut.rstrip() + ELLIPSIS
