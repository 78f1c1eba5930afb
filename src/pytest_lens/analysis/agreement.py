"""``--lens-judge-check``: agreement between the run's judge and a second judge on the same comparisons.

The second judge grades again every comparison the first judge decided for a seeded sample of answers, with the
candidate shown in the other position (:class:`~pytest_lens.judging.judge.LLMJudge` with ``swapped=True``). Two
figures come out of the pairs of verdicts:

- Cohen's kappa over the verdicts (candidate / tie / reference), by scikit-learn's ``cohen_kappa_score``: agreement
  beyond what the two judges' verdict frequencies give by chance (1 perfect, 0 chance, below 0 worse than chance);
- the positional bias: of the comparisons both judges decided, the fraction where both named the same position
  (A or B) although the candidate had changed places, i.e. the verdict followed the position, not the content.

A judge that always answers ``A`` agrees with its swapped self on nothing (kappa about -1) and follows the position
every time (bias 1); a judge that reads the responses agrees with itself (kappa 1, bias 0).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_lens.records.statistics import JudgeAgreement

__all__ = ["LEAN_MIN_VERDICTS", "LEAN_SHARE", "MIN_KAPPA", "judge_agreement", "position_lean", "verdict_position"]

#: Below this kappa the summary and the artifact warn ("moderate" agreement starts at 0.4 on Landis and Koch's scale).
MIN_KAPPA = 0.4
_VERDICTS = ["candidate", "tie", "reference"]


#: A plain run's judge is said to follow the position when at least this share of its decided verdicts named one
#: position, over at least :data:`LEAN_MIN_VERDICTS` of them, while the candidate was shown in either position.
LEAN_SHARE = 0.9
LEAN_MIN_VERDICTS = 20


def position_lean(judgments: Iterable[Mapping[str, Any]]) -> str | None:
    """A warning when the judge's verdicts follow the position they name, not the answers; ``None`` otherwise.

    Needs no second judge: the candidate's position (A or B) is seeded per comparison, so a judge that reads the
    answers names A about as often as the better answer was shown there; one that always answers ``A`` names A
    whatever was shown there. Only a judge deciding at least :data:`LEAN_MIN_VERDICTS` comparisons, with the
    candidate shown in each position at least a quarter of the time, is judged; ``--lens-judge-check`` measures
    the same failure (and subtler ones) directly.
    """
    named: list[str] = []
    shown_in_a = 0
    for entry in judgments:
        position = verdict_position(str(entry.get("winner", "")), entry.get("candidate_position"))
        if position is not None:
            named.append(position)
            shown_in_a += entry.get("candidate_position") == "A"
    decided = len(named)
    if decided < LEAN_MIN_VERDICTS or not 0.25 <= shown_in_a / decided <= 0.75:
        return None
    top = max(("A", "B"), key=named.count)
    count = named.count(top)
    if count / decided < LEAN_SHARE:
        return None
    return (
        f"{count} of the judge's {decided} decided verdicts named position {top}, while the candidate was shown in "
        f"{top} in {shown_in_a if top == 'A' else decided - shown_in_a} of them: the verdicts follow the position, not "
        "the answers, and the judged metrics measure the judge; check it with --lens-judge-check=N"
    )


def verdict_position(winner: str, candidate_position: str | None) -> str | None:
    """The position (``A`` or ``B``) a verdict named; ``None`` for a TIE or a judge that saw no positions."""
    if winner == "tie" or candidate_position not in ("A", "B"):
        return None
    if winner == "candidate":
        return candidate_position
    return "B" if candidate_position == "A" else "A"


def judge_agreement(
    pairs: Iterable[Mapping[str, Any]], *, answers: int, judge: str, check: str, min_kappa: float = MIN_KAPPA
) -> JudgeAgreement:
    """Agreement of the pairs recorded in the results' ``judge_check`` details (see the module docstring)."""
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    entries = list(pairs)
    decided = [entry for entry in entries if "second" in entry]
    first = [str(entry["first"]) for entry in decided]
    second = [str(entry["second"]) for entry in decided]
    kappa: float | None = None
    if decided:
        with warnings.catch_warnings():  # undefined: reported as None below, not as a warning
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            value = float(cohen_kappa_score(first, second, labels=_VERDICTS))
        kappa = None if value != value else value  # NaN: one and the same verdict throughout, for both judges
    positional = [
        (a, b)
        for entry in decided
        if (a := verdict_position(entry["first"], entry.get("first_position"))) is not None
        and (b := verdict_position(entry["second"], entry.get("second_position"))) is not None
        and entry.get("first_position") != entry.get("second_position")
    ]
    bias = sum(1 for a, b in positional if a == b) / len(positional) if positional else None
    agreement = sum(1 for a, b in zip(first, second, strict=True) if a == b) / len(decided) if decided else None
    warning = None
    if not decided:
        warning = "no comparison was graded by both judges: the judge is unchecked"
    elif kappa is not None and kappa < min_kappa:
        warning = f"Cohen's kappa {kappa:.2f} is below {min_kappa:g}: the judge's verdicts do not reproduce"
        if bias is not None and bias >= 0.5:
            warning += f", and {bias:.0%} of its decided verdicts follow the position rather than the content"
    return JudgeAgreement(
        judge=judge,
        check=check,
        answers=answers,
        comparisons=len(entries),
        failed=len(entries) - len(decided),
        agreement=agreement,
        kappa=kappa,
        positional_bias=bias,
        positional_comparisons=len(positional),
        min_kappa=min_kappa,
        warning=warning,
    )
