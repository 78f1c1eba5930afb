"""How values are printed, and the key facts (with match aliases) that quote them.

The renderer and the question builder both go through these functions, so a key fact
is always worded exactly as the evidence prints it; the aliases cover the other ways
a correct answer may say the same thing (thousands separators, no trailing zeros,
spelled-out units, month names).
"""

from __future__ import annotations

from datetime import date

from pytest_lens.datasets.models import KeyFact
from pytest_lens.generator.spec import SeriesSpec

__all__ = ["date_fact", "date_text", "format_value", "reading_fact", "reading_text", "value_fact", "value_text"]

_UNIT_WORDS = {"ms": "milliseconds", "s": "seconds", "%": " percent", "kg": "kilograms", "mw": "megawatts", "km": "kilometres"}
_ORDINALS = {1: "st", 2: "nd", 3: "rd"}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")


def format_value(value: float, decimals: int) -> str:
    """A measurement as printed: fixed decimals, no thousands separator."""
    return f"{value:.{decimals}f}"


def value_text(series: SeriesSpec, formatted: str) -> str:
    """``182 ms``, ``0.12%``, ``41``."""
    if not series.unit:
        return formatted
    return f"{formatted}{series.unit}" if series.unit == "%" else f"{formatted} {series.unit}"


def reading_text(series: SeriesSpec, formatted: str) -> str:
    """One reading as the report prints it: ``p99 latency 182 ms``."""
    return f"{series.label} {value_text(series, formatted)}"


def _number_variants(formatted: str) -> list[str]:
    """``1450`` -> ``1,450``; ``2.40`` -> ``2.4``; the printed form first."""
    variants = [formatted]
    whole, _, fraction = formatted.partition(".")
    if len(whole.lstrip("-")) > 3:
        grouped = f"{int(whole):,}"
        variants.append(f"{grouped}.{fraction}" if fraction else grouped)
    if fraction and fraction.rstrip("0") != fraction:
        trimmed = fraction.rstrip("0")
        variants.append(f"{whole}.{trimmed}" if trimmed else whole)
    return list(dict.fromkeys(variants))


def _unit_variants(series: SeriesSpec, number: str) -> list[str]:
    if not series.unit:
        return [number]
    forms = [value_text(series, number)]
    if series.unit != "%":
        forms.append(f"{number}{series.unit}")
    word = _UNIT_WORDS.get(series.unit.lower())
    if word:
        forms.append(f"{number}{word}" if word.startswith(" ") else f"{number} {word}")
    return forms


def value_fact(series: SeriesSpec, formatted: str) -> KeyFact:
    """The bare value (a null-hypothesis answer): ``182 ms`` or ``182ms`` or ``182 milliseconds``."""
    forms = [form for number in _number_variants(formatted) for form in _unit_variants(series, number)]
    return KeyFact(fact=forms[0], aliases=tuple(dict.fromkeys(forms[1:])))


def reading_fact(series: SeriesSpec, formatted: str) -> KeyFact:
    """A labelled reading: ``p99 latency 182 ms``, also ``p99 latency of 182 ms``, ``p99 latency reached 1,450 ms``..."""
    fact = reading_text(series, formatted)
    aliases: list[str] = []
    for number in _number_variants(formatted):
        for form in _unit_variants(series, number):
            for joint in ("", " of", " was", " at", " reached", " rose to", " of about"):
                aliases.append(f"{series.label}{joint} {form}")
    return KeyFact(fact=fact, aliases=tuple(alias for alias in dict.fromkeys(aliases) if alias != fact))


def date_text(day: date) -> str:
    """``2025-03-08``, as report headers print dates."""
    return day.isoformat()


def date_fact(day: date) -> KeyFact:
    """A date, also matched as ``March 8`` or ``Mar 8`` (``March 1st``: ``March 1`` would match ``March 14``)."""
    month = _MONTHS[day.month - 1]
    number = f"{day.day}{_ORDINALS[day.day]}" if day.day in _ORDINALS else str(day.day)
    return KeyFact(fact=date_text(day), aliases=(f"{month} {number}", f"{month[:3]} {number}"))
