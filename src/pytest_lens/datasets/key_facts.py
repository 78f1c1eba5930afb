"""Key facts that stand for an answer's stance rather than a value: "I cannot know" and "that was deleted".

Imported datasets (LongMemEval abstentions, MEME absence and deletion probes) and the MEME generator give these as
ground truth; the MEME judges recognise uncertainty by the same phrases.
"""

from __future__ import annotations

from pytest_lens.datasets.models import KeyFact

__all__ = ["DELETED_FACT", "UNCERTAIN_FACT", "UNCERTAIN_PHRASES"]

#: How an answer says it does not know, in its usual phrasings.
UNCERTAIN_PHRASES = (
    "uncertain", "not sure", "unsure", "unknown", "don't know", "do not know", "no longer", "may have changed",
    "might have changed", "could not find", "couldn't find", "cannot find", "can't find", "no information",
    "not enough information", "insufficient information", "don't have", "do not have", "not available", "unclear",
)  # fmt: skip

#: Key fact of Absence after-probes: uncertainty, in any of its usual phrasings.
UNCERTAIN_FACT = KeyFact(fact="uncertain", aliases=tuple(p for p in UNCERTAIN_PHRASES if p != "uncertain"))
#: Key fact of Deletion after-probes: the assistant says it does not have the value.
DELETED_FACT = KeyFact(
    fact="I don't have that information",
    aliases=("do not have that information", "no information", "was deleted", "asked me to delete", "not available", "don't know"),
)
