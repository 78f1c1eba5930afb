from __future__ import annotations

import pytest

from pytest_lens.datasets.models import KeyFact
from pytest_lens.scoring.metrics import AnswerEvidence, mechanical_metrics


def evidence(**changes: object) -> AnswerEvidence:
    base: dict[str, object] = {
        "answer": "Pressure rose to 5.9 bar [e3]. It started at 4.1 bar [e1]. A wild guess [e9].",
        "cited": ["e3", "e1", "e9"],
        "returned": {"e1", "e3", "e4"},
        "known": {"e1", "e2", "e3", "e4"},
        "required": ["e1", "e3", "e5"],
        "key_facts": [KeyFact(fact="4.1 bar"), KeyFact(fact="5.9 bar"), KeyFact(fact="seal leak", aliases=("leaking seal",))],
        "violations": 0,
    }
    base.update(changes)
    return AnswerEvidence(**base)  # type: ignore[arg-type]


def test_mechanical_metrics_on_a_hand_checked_answer() -> None:
    metrics = mechanical_metrics(evidence())
    assert metrics == pytest.approx(
        {
            "evidence_grounding": 2 / 3,  # e9 was never returned and does not exist
            "evidence_coverage": 2 / 3,  # e1 and e3 of e1, e3, e5
            "citation_coverage": 2 / 3,  # the third sentence cites only e9
            "budget_compliance": 1.0,
            "fact_recall": 2 / 3,
        }
    )


def test_citation_coverage_differs_from_evidence_coverage() -> None:
    # One required ref cited by every sentence: full citation coverage, partial evidence coverage (SPEC §10 defect 4).
    metrics = mechanical_metrics(evidence(answer="Pressure rose [e1]. Then it fell [e1].", cited=["e1"]))
    assert metrics["citation_coverage"] == 1.0
    assert metrics["evidence_coverage"] == pytest.approx(1 / 3)


def test_an_uncited_answer_is_ungrounded_and_metrics_without_data_are_absent() -> None:
    metrics = mechanical_metrics(evidence(answer="I could not find it.", cited=[], required=[], key_facts=[], violations=2))
    assert metrics == {"evidence_grounding": 0.0, "budget_compliance": 0.0, "citation_coverage": 0.0}


def test_fact_aliases_and_normalisation() -> None:
    metrics = mechanical_metrics(evidence(answer="The LEAKING seal; pressure 4.1 bar! [e1]", cited=["e1"]))
    assert metrics["fact_recall"] == pytest.approx(2 / 3)


def test_aliased_citations_resolve_to_stored_ids() -> None:
    aliases = {"ref_a": "e1"}
    metrics = mechanical_metrics(
        evidence(answer="Started at 4.1 bar [ref_a].", cited=["e1"]),
        resolve=lambda ref: aliases.get(ref, ref),
    )
    assert metrics["citation_coverage"] == 1.0 and metrics["evidence_grounding"] == 1.0
