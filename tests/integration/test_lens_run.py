"""End-to-end LENS runs through pytester on the real LENS scope and on small data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.support import assert_answered, small_dataset, write_dataset

NO_CACHE = ("-p", "no:cacheprovider")


def run_lens(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest(*args, "--lens-json=out.json", *NO_CACHE)
    artifact_path = pytester.path / "out.json"
    artifact = read_artifact_json(artifact_path) if artifact_path.exists() else {}
    return result, artifact


def by_key(artifact: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    return {(r["adapter"], r["scope_id"], r["budget"], r["question_id"]): r for r in artifact["results"]}


def test_bm25_on_the_real_lens_scope(pytester: pytest.Pytester, lens_scope_path: Path) -> None:
    result, artifact = run_lens(pytester, "--lens-adapter=bm25", f"--lens-dataset={lens_scope_path}", "--lens-budget=16k")
    assert_answered(result, 24)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*= LENS summary =*",
            "agent: offline (deterministic extractive agent, no LLM)*",
            "adapter * n * composite * grounding * ev.coverage * cit.coverage * budget*",
            "bm25 * 24 *pass",
            "*empty_key_facts*",
            "LENS verdict: PASS",
        ]
    )
    assert len(artifact["results"]) == 24
    record = artifact["results"][0]
    for field in (
        "adapter",
        "scope_id",
        "checkpoint",
        "question_id",
        "question_type",
        "metrics",
        "answer",
        "cited_refs",
        "tool_calls",
        "result_tokens",
        "violations",
    ):
        assert field in record
    summary = artifact["summary"]["bm25"]
    assert summary["gated"] is False and 0 < summary["metrics"]["evidence_coverage"] < 1
    assert set(summary["metrics"]) >= {"evidence_grounding", "evidence_coverage", "citation_coverage", "budget_compliance"}
    flagged = {r["question_id"] for r in artifact["results"] if "empty_key_facts" in r["defects"]}
    assert flagged == {"cf01_q02_null", "cf01_q09_longitudinal", "cf01_q10_evidence", "cf01_q23_null"}
    assert artifact["run"]["datasets"][0]["sha256"] and artifact["run"]["agent"]["name"] == "offline"
    # Ground-truth labels never reach the agent; ids leak the split in this dataset, so the agent saw aliases.
    for r in artifact["results"]:
        for call in r["tool_calls"]:
            assert "_ep_" not in json.dumps(call["arguments"]) and "_dx_" not in json.dumps(call["arguments"])


def test_null_is_gated_and_fails_the_session(pytester: pytest.Pytester, lens_scope_path: Path) -> None:
    result, artifact = run_lens(pytester, "--lens-adapter=bm25", "--lens-adapter=null", f"--lens-dataset={lens_scope_path}")
    assert_answered(result, 48)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["null * 24 * 0.000 *FAIL evidence_grounding 0.000 < 0.5", "LENS verdict: FAIL - null: hard gate evidence_grounding 0.000 < 0.5"]
    )
    bm25, null = artifact["summary"]["bm25"], artifact["summary"]["null"]
    assert null["gated"] and null["composite"] == 0.0
    assert bm25["metrics"]["evidence_coverage"] > null["metrics"]["evidence_coverage"] == 0.0


def test_subsets_and_reversed_order_give_the_same_per_question_results(pytester: pytest.Pytester, lens_scope_path: Path) -> None:
    dataset = f"--lens-dataset={lens_scope_path}"
    _, full = run_lens(pytester, "--lens-adapter=bm25", dataset)
    result, subset = run_lens(pytester, "--lens-adapter=bm25", dataset, "-k", "cp099 or cp018")
    assert_answered(result, 9, deselected=15)
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(items):
            items.reverse()
        """
    )
    result, reversed_run = run_lens(pytester, "--lens-adapter=bm25", dataset)
    assert_answered(result, 24)
    full_results = by_key(full)
    for other in (subset, reversed_run):
        for key, record in by_key(other).items():
            reference = full_results[key]
            assert (record["answer"], record["cited_refs"], record["metrics"]) == (
                reference["answer"],
                reference["cited_refs"],
                reference["metrics"],
            )
    assert [r["question_id"] for r in reversed_run["results"]] == [r["question_id"] for r in full["results"]]


def test_a_malformed_dataset_is_a_usage_error_naming_file_and_field(pytester: pytest.Pytester) -> None:
    document = small_dataset()
    document["questions"][2]["ground_truth"]["required_evidence_refs"] = "e1"
    path = write_dataset(pytester.path / "broken.json", document)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={path}", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--lens-dataset: cannot use the dataset:*",
            f"*{path}: questions[[]2[]].ground_truth.required_evidence_refs: Input should be a valid list (got 'e1')*",
        ]
    )
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()


def test_an_adapter_that_raises_fails_its_questions_and_loses_nothing_else(pytester: pytest.Pytester) -> None:
    path = write_dataset(pytester.path / "small.json", small_dataset())
    result, artifact = run_lens(
        pytester, "--lens-adapter=bm25", "--lens-adapter=raiser=tests.support:SearchRaises", f"--lens-dataset={path}"
    )
    assert_answered(result, 3, failed=3)
    result.stdout.fnmatch_lines(
        ["*adapter 'raiser' raised in search(): RuntimeError: index corrupted*", "FAILED lens::test_lens[[]raiser-s1-cp002-q1[]]*"]
    )
    assert len(artifact["results"]) == 6
    raiser = [r for r in artifact["results"] if r["adapter"] == "raiser"]
    assert all(r["faults"][0]["method"] == "search" for r in raiser)
    assert artifact["summary"]["bm25"]["n_questions"] == 3 and not artifact["summary"]["bm25"]["gated"]
    assert artifact["summary"]["raiser"]["faults"] == 3


def test_an_adapter_that_cannot_be_constructed_fails_clearly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        badinit="""
        from tests.support import RecordingMemory

        class Broken(RecordingMemory):
            def __init__(self):
                raise OSError("cannot reach the vector store")
        """
    )
    pytester.syspathinsert()
    path = write_dataset(pytester.path / "small.json", small_dataset())
    result = pytester.runpytest("--lens-adapter=badinit:Broken", f"--lens-dataset={path}", *NO_CACHE)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*adapter 'Broken' could not be constructed: OSError: cannot reach the vector store*"])


def test_a_hanging_adapter_times_out(pytester: pytest.Pytester) -> None:
    path = write_dataset(pytester.path / "small.json", small_dataset())
    result = pytester.runpytest(
        "--lens-adapter=slow=tests.support:SlowSearch", f"--lens-dataset={path}", "--lens-call-timeout=0.3", "-k", "q1", *NO_CACHE
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*adapter 'slow' timed out in search(): no answer after 0.3 s (--lens-call-timeout)*"])
