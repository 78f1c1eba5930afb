from __future__ import annotations

from pytest_lens.plugin.junit import junit_properties
from tests.unit.analysis.factory import result, tier1


def test_scores_become_flat_string_properties() -> None:
    properties = dict(junit_properties(result("cf01_q03", tier1(1.0, 0.5), question_type="temporal")))
    assert properties["lens.adapter"] == "bm25" and properties["lens.question"] == "cf01_q03"
    assert properties["lens.question_type"] == "temporal" and properties["lens.budget"] == "16k"
    assert properties["lens.composite"] == "0.878788" and properties["lens.gated"] == "false"
    assert properties["lens.metric.evidence_coverage"] == "0.5"
    assert all(isinstance(v, str) for v in properties.values())
    assert "lens.judge" not in properties
