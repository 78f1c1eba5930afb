"""--lens-scoring=v2 end to end: the LLM judge at the local test server, per-fact verdicts in the artifact."""

from __future__ import annotations

import pytest

from lens_fixtures.openai_server import FactCheckPolicy, LensPolicy, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")


def v2_args(server: OpenAITestServer, *extra: str) -> list[str]:
    return [
        "--lens-adapter=bm25",
        "--lens-scoring=v2",
        "--lens-judge=llm",
        "--lens-judge-model=judge-m",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-cache-mode=off",
        "--lens-json=out.json",
        *QUIET,
        *extra,
    ]


def test_v2_scoring_keeps_per_fact_verdicts_and_weighs_v2s_metrics(pytester: pytest.Pytester) -> None:
    with OpenAITestServer() as server:
        result = pytester.runpytest(*v2_args(server))
        kinds = {r.kind for r in server.requests}
    assert_answered(result, 8)
    assert kinds == {"fact_judge", "support_judge"}  # none of the paper's pairwise judgments: they weigh nothing here
    artifact = read_artifact_json(pytester.path / "out.json")
    for row in artifact["results"]:
        facts = row["scorer_details"]["v2"]["facts"]
        assert [f["fact"] for f in facts] == [k["fact"] for k in row["key_facts"]]
        assert all(isinstance(f["present"], bool) and f["raw"] in ("YES", "NO") for f in facts)
        assert row["metrics"]["fact_recall_judged"] == pytest.approx(sum(f["present"] for f in facts) / len(facts), abs=1e-6)
        metrics = row["metrics"]
        expected = 0.5 * metrics["fact_recall_judged"] + 0.3 * metrics["evidence_support"] + 0.2 * metrics["citation_validity"]
        assert row["composite"] == pytest.approx(0.0 if row["gated"] else expected, abs=1e-5)
    result.stdout.fnmatch_lines(["legend: composite = 0.20 citation_validity + 0.30 evidence_support + 0.50 fact_recall_judged (*"])


def test_a_judge_answering_prose_for_one_fact_leaves_that_question_without_the_metric(pytester: pytest.Pytester) -> None:
    with OpenAITestServer(LensPolicy(fact_judge=FactCheckPolicy(prose_for=("30% low",)))) as server:
        result = pytester.runpytest(*v2_args(server, "--lens-judge-max-failures=100%"))
    assert_answered(result, 8)
    rows = {row["question_id"]: row for row in read_artifact_json(pytester.path / "out.json")["results"]}
    hit = [qid for qid, row in rows.items() if row["scoring_failures"]]
    assert hit == ["ccd_q07_longitudinal"]
    assert "fact_recall_judged" not in rows["ccd_q07_longitudinal"]["metrics"]
    assert rows["ccd_q07_longitudinal"]["scoring_failures"][0].startswith("v2: fact_recall_judged: fact 3 ('30% low'): no usable verdict")
    assert all("fact_recall_judged" in row["metrics"] for qid, row in rows.items() if qid not in hit)
    result.stdout.fnmatch_lines(["judge failures (questions with a metric left absent): bm25 1/8"])
