"""Reading a model's reply: what every consumer of a completion strips before it reads the answer."""

from __future__ import annotations

import re

__all__ = ["strip_reasoning"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """``text`` without the ``<think>...</think>`` blocks reasoning models put before their answer.

    A closing ``</think>`` without its opening tag (templates that open the block in the prompt)
    drops everything before it; an opened block that never closes (a reply cut off while thinking)
    is left in place, so it reads as no verdict.
    """
    text = _THINK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return text.strip()
