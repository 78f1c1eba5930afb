"""The generator's promises about its output, as checks that name what is broken.

A generated scope is only handed out when every check passes: the dataset validator
finds nothing; every required ref is ingested by its question's checkpoint; every key
fact is printed in one of its question's required refs; no single episode holds all key
facts of a longitudinal question; distractors share no storyline term with the signal
(:mod:`~pytest_lens.generator.vocabulary`); ids are numbered by stream position and ``meta`` is empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from pytest_lens.datasets.models import Dataset, KeyFact
from pytest_lens.datasets.validator import validate_dataset
from pytest_lens.generator.vocabulary import storyline_terms, topic_terms
from pytest_lens.text import normalize

__all__ = ["guarantee_problems"]

_DIGITS = re.compile(r"\d+")


def guarantee_problems(dataset: Dataset, is_signal: Mapping[str, bool], *, storyline: AbstractSet[str] | None = None) -> list[str]:
    """Everything wrong with a generated dataset (empty when it keeps every promise).

    ``is_signal`` maps each episode id to whether it carries the storyline (the sidecar
    label; the dataset itself never says). ``storyline`` is the set of storyline terms
    distractors are checked against: by default every topic word of the signal episodes;
    the LLM stage passes its deterministic reports' words (prose a model adds on both
    sides tells no storyline).
    """
    problems = [f"validator: {issue}" for issue in validate_dataset(dataset, "<generated>")]
    for scope in dataset.scopes:
        episodes = scope.episodes
        positions = {episode.episode_id: index for index, episode in enumerate(episodes, start=1)}
        width = max(3, len(str(len(episodes))))
        for index, episode in enumerate(episodes, start=1):
            if episode.episode_id != f"{scope.scope_id}_e{index:0{width}d}":
                problems.append(f"{episode.episode_id}: id is not the stream position {index}")
            if episode.meta:
                problems.append(f"{episode.episode_id}: meta is not empty ({sorted(episode.meta)})")
        if len({_DIGITS.sub("#", episode.episode_id) for episode in episodes}) > 1:
            problems.append(f"{scope.scope_id}: episode ids differ in shape")
        if [e.timestamp for e in episodes] != sorted(e.timestamp for e in episodes):
            problems.append(f"{scope.scope_id}: episodes are not in stream order")

        texts = {episode.episode_id: episode.text for episode in episodes}
        signal_words = storyline_terms(text for ref, text in texts.items() if is_signal[ref]) if storyline is None else storyline
        for ref, text in texts.items():
            if not is_signal[ref]:
                shared = topic_terms(text) & signal_words
                if shared:
                    problems.append(f"{ref}: distractor uses storyline terms {sorted(shared)[:8]}")

        normalized = {ref: normalize(text) for ref, text in texts.items()}
        patterns: dict[str, re.Pattern[str]] = {}
        for question in dataset.questions:
            if question.scope_id != scope.scope_id:
                continue
            truth = question.ground_truth
            where = question.question_id
            if not truth.key_facts or not truth.required_evidence_refs:
                problems.append(f"{where}: needs key facts and required refs")
            for ref in truth.required_evidence_refs:
                if positions.get(ref, len(episodes) + 1) > question.checkpoint_after:
                    problems.append(f"{where}: required ref {ref} is not ingested by checkpoint {question.checkpoint_after}")
            facts = [_patterns(fact, patterns) for fact in truth.key_facts]
            evidence = [normalized[ref] for ref in truth.required_evidence_refs if ref in normalized]
            for fact, forms in zip(truth.key_facts, facts, strict=True):
                if not any(_holds(forms, text) for text in evidence):
                    problems.append(f"{where}: key fact {fact.fact!r} is in none of its required refs")
            if question.question_type == "longitudinal":
                for ref, text in normalized.items():
                    if all(_holds(forms, text) for forms in facts):
                        problems.append(f"{where}: episode {ref} alone holds every key fact")
    return problems


def _patterns(fact: KeyFact, cache: dict[str, re.Pattern[str]]) -> re.Pattern[str]:
    """A matcher for the fact's normalised forms (substrings, as ``fact_recall`` matches them), built once."""
    key = "\x00".join(fact.patterns)
    if key not in cache:
        forms = sorted({form for form in (normalize(pattern) for pattern in fact.patterns) if form})
        # A fact with no matchable form (all punctuation) matches nothing, as in ``fact_matched``.
        cache[key] = re.compile("|".join(re.escape(form) for form in forms)) if forms else re.compile(r"(?!)")
    return cache[key]


def _holds(matcher: re.Pattern[str], normalized_text: str) -> bool:
    return matcher.search(normalized_text) is not None
