from __future__ import annotations

import re

import pytest

from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.views.select import KeywordError, keyword_matcher, match_question, select
from pytest_lens.reports.views.transcript import transcripts

NAMES = ["bm25-cold_chain_demo-cp008-ccd_q03_longitudinal", "longitudinal", "synthesis", "lens", "16k", "ok"]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("bm25", True),
        ("BM25", True),
        ("q03", True),
        ("temporal", False),
        ("bm25 and longitudinal", True),
        ("bm25 and temporal", False),
        ("temporal or ok", True),
        ("not gated", True),
        ("not ok", False),
        ("bm25 and not (temporal or gated)", True),
        ("(null or drops) and ok", False),
        ("not not bm25", True),
        ("cold_chain_demo-cp008", True),
    ],
)
def test_keyword_expressions(expression: str, expected: bool) -> None:
    assert keyword_matcher(expression)(NAMES) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("and bm25", "unexpected 'and' at column 1"),
        ("bm25 and", "ends where a name"),
        ("(bm25", "never closed"),
        ("bm25 )", "unexpected ')' at column 6"),
        ("bm25 $x", "unexpected character '$' at column 6"),
        ("bm25 temporal", "unexpected 'temporal' at column 6"),
    ],
)
def test_bad_expressions_say_where(expression: str, message: str) -> None:
    with pytest.raises(KeywordError, match=re.escape(message)):
        keyword_matcher(expression)


def test_select_by_question_id_test_id_or_node_id(example_run: RunArtifact) -> None:
    items = transcripts(example_run)
    one = items[0]
    by_question = select(items, one.result.question_id)
    assert {item.result.adapter for item in by_question} == {"bm25", "drops", "null"}
    assert select(items, one.test_id) == [one]
    assert select(items, f"lens::test_lens[{one.test_id}]") == [one]
    assert match_question(one, "nothing-like-it") is False


def test_select_by_keyword_uses_outcome_and_type(example_run: RunArtifact) -> None:
    items = transcripts(example_run)
    gated = select(items, keyword="gated")
    assert gated and all(item.outcome == "gated" for item in gated)
    assert {item.result.adapter for item in select(items, keyword="null and gated")} == {"null"}
    assert select(items, keyword="bm25 and not drops and temporal") == [
        item for item in items if item.result.adapter == "bm25" and item.result.question_type == "temporal"
    ]
