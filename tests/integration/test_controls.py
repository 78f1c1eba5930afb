"""--lens-controls end to end: controls and mutants run beside the adapter, the sensitivity table says what the run can see."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_lens.plugin import options
from pytest_lens.records.rows import read_artifact_json
from tests.integration.test_baseline_gating import needle_dataset
from tests.support import assert_answered

NO_CACHE = ("-p", "no:cacheprovider")
CONTROLS = ["null", "random", "oracle", "bm25/top2", "bm25/reversed", "bm25/shuffled", "bm25/half-random", "bm25/stale", "bm25/cut200"]
#: The sensitivity table's rows: every control but the oracle, which is a ceiling, not a degradation.
SENSITIVITY = [label for label in CONTROLS if label != "oracle"]


@pytest.fixture
def needles(pytester: pytest.Pytester) -> str:
    """Twelve questions, each answered by the one episode BM25 ranks first."""
    return f"{options.DATASET}={needle_dataset(pytester.path / 'needles.json')}"


def _table(text: str) -> dict[str, str]:
    """Sensitivity rows by control label."""
    lines = text.split("sensitivity (--lens-controls)", 1)[1].split("floor and ceiling (", 1)[0].splitlines()
    return {line.split()[1]: line for line in lines[2:] if line.startswith("bm25 ")}


def test_controls_run_beside_the_adapter_never_gate_and_the_table_lists_each(pytester: pytest.Pytester, needles: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", options.CONTROLS, needles, "--lens-json=run.json", *NO_CACHE)
    assert_answered(result, 12 * 10)
    assert result.ret == pytest.ExitCode.OK  # null is gated, but controls never decide the verdict
    text = result.stdout.str()
    assert "lens: adapters bm25, " + ", ".join(CONTROLS) + ";" in text
    result.stdout.fnmatch_lines(["null * 12 * 0.000 * control (gated: evidence_grounding 0.000 < 0.5)", "*LENS verdict: PASS"])
    rows = _table(text)
    assert list(rows) == SENSITIVITY
    assert rows["null"].endswith(" detected") and "stores nothing" in rows["null"]
    # The headline is the retrieval score. The needle is BM25's first hit: keeping two results still ranks it first.
    assert "NOT detected (no question changed)" in rows["bm25/top2"] and "0▼ 0▲" in rows["bm25/top2"]
    # Ranked worst first, the needle falls out of the ten results shown: every question drops.
    assert rows["bm25/reversed"].endswith(" detected") and "12▼ 0▲" in rows["bm25/reversed"]
    assert rows["random"].endswith(" detected")
    artifact = read_artifact_json(pytester.path / "run.json")
    sensitivity = artifact["sensitivity"]
    assert sensitivity["metric"] == "retrieval_score" and sensitivity["alpha"] == 0.05
    assert [row["control"] for row in sensitivity["rows"]] == SENSITIVITY
    assert {row["control"]: row["detected"] for row in sensitivity["rows"]} == {
        label: rows[label].endswith(" detected") for label in SENSITIVITY
    }
    top2 = next(row for row in sensitivity["rows"] if row["control"] == "bm25/top2")
    assert (top2["kind"], top2["mutant"], top2["test"]["alternative"]) == ("mutant", "top2", "less")
    assert artifact["summary"]["bm25"]["control"] is None
    assert artifact["summary"]["bm25/top2"]["control"] == {"kind": "mutant", "of": "bm25", "mutant": "top2"}
    assert {r["adapter"] for r in artifact["results"] if r["control"] is None} == {"bm25"}
    assert [(p["first"], p["second"]) for p in artifact["statistics"]["pairs"]] == []  # controls join no pair
    labelled = {entry["label"]: entry.get("control") for entry in artifact["run"]["adapters"]}
    assert labelled["bm25"] is None and labelled["random"] == {"kind": "random", "of": None, "mutant": None}


def test_the_oracle_is_the_ceiling_and_each_adapter_stands_between_floor_and_ceiling(pytester: pytest.Pytester, needles: str) -> None:
    args = ("--lens-adapter=bm25", options.CONTROLS, f"{options.MUTANTS}=reversed", needles, "--lens-json=run.json", *NO_CACHE)
    result = pytester.runpytest(*args)
    assert_answered(result, 12 * 5)
    result.stdout.fnmatch_lines(
        [
            "floor and ceiling (retrieval_score): floor random 16k 0.*; ceiling oracle 16k 1.000 (the required evidence ranked first*",
            "adapter *n *score *share of range [[]CI[]] *memory losses",
            "bm25 *12 *1.000 *1.000 [[]1.000, 1.000[]] *0",
            "bm25/reversed *12 *0.000 *",
            "agent or answer-key suspects: none (the oracle scores 0.5 or more on all 12 questions)",
        ]
    )
    ceiling = read_artifact_json(pytester.path / "run.json")["ceiling"]
    assert (ceiling["oracle"], ceiling["floor"], ceiling["oracle_scores"]) == ("oracle", "random", {"16k": 1.0})
    rows = {row["adapter"]: row for row in ceiling["rows"]}
    assert list(rows) == ["bm25", "null", "bm25/reversed"]  # the floor is not a row of its own (its share is 0)
    # A measurement that can fail: the reversed mutant loses every needle the oracle finds; bm25 loses none.
    assert rows["bm25/reversed"]["memory_losses"] == 12 and rows["bm25"]["memory_losses"] == 0
    assert rows["bm25/reversed"]["share"]["value"] < 0 < rows["bm25"]["share"]["value"]
    assert ceiling["suspects"] == []


def test_the_oracle_alone_is_a_control_and_its_views_see_each_questions_evidence_first(pytester: pytest.Pytester, needles: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-adapter=oracle", needles, "--lens-json=run.json", *NO_CACHE)
    assert_answered(result, 12 * 2)
    result.stdout.fnmatch_lines(["floor and ceiling (retrieval_score): floor 0 (no random or null adapter ran*"])
    artifact = read_artifact_json(pytester.path / "run.json")
    assert artifact["summary"]["oracle"]["control"] == {"kind": "oracle", "of": None, "mutant": None}
    assert artifact["statistics"]["pairs"] == []  # a ceiling is paired with no one
    for r in (r for r in artifact["results"] if r["adapter"] == "oracle"):
        first = r["tool_calls"][1]  # after memory_capabilities
        assert first["name"] == "memory_search" and first["returned_refs"][: len(r["required_refs"])] == r["required_refs"]


def test_the_controls_are_no_ones_baseline(pytester: pytest.Pytester, needles: str) -> None:
    assert pytester.runpytest("--lens-adapter=bm25", options.CONTROLS, needles, f"{options.SAVE}=main", *NO_CACHE).ret == 0
    result = pytester.runpytest("--lens-adapter=bm25", needles, f"{options.BASELINE}=main", options.COMPARE_FAIL, *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    assert "in the baseline but not in this run" not in text and "bm25/top2" not in text
    result.stdout.fnmatch_lines(
        ["  pass  --lens-compare-fail: no significant regression vs baseline 0001_main (alpha 0.05; 1 adapter(s) compared)*"]
    )


def test_the_table_is_the_same_under_xdist(pytester: pytest.Pytester, needles: str) -> None:
    pytest.importorskip("xdist")
    args = ("--lens-adapter=bm25", options.CONTROLS, f"{options.MUTANTS}=top2,cut200", needles, *NO_CACHE)
    assert pytester.runpytest(*args, "--lens-json=serial.json").ret == 0
    parallel = pytester.runpytest("-n", "2", *args, "--lens-json=parallel.json")
    assert_answered(parallel, 12 * 6)
    sensitivity: list[Any] = [read_artifact_json(pytester.path / f"{name}.json")["sensitivity"] for name in ("serial", "parallel")]
    assert sensitivity[0] == sensitivity[1]
    assert [row["control"] for row in sensitivity[1]["rows"]] == ["null", "random", "bm25/top2", "bm25/cut200"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((f"{options.MUTANTS}=top2",), "--lens-mutants chooses the mutants --lens-controls adds: add --lens-controls"),
        ((options.CONTROLS, f"{options.MUTANTS}=sideways"), "--lens-mutants: unknown mutant(s) sideways; known: top2, *"),
        (
            (options.CONTROLS, "--lens-adapter=random=bm25"),
            "*adds a control labelled 'random', but adapter 'bm25' already uses that label*",
        ),
    ],
)
def test_bad_control_options_are_usage_errors(pytester: pytest.Pytester, args: tuple[str, ...], message: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", *args, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_cut200_breaks_the_roundtrip_clause_and_top2_keeps_it(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        options.CONTROLS,
        f"{options.MUTANTS}=top2,cut200",
        "--lens-conformance",
        "-k",
        "retrieve_roundtrip and (cut200 or top2)",
        *NO_CACHE,
    )
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed")) == (1, 1)
    result.stdout.fnmatch_lines(["*conformance clause retrieve.roundtrip failed for adapter 'bm25/cut200', in retrieve()*"])


def pump_dataset(path: Any, count: int = 12) -> Any:
    """``count`` questions, each about one pump named by an identifier (``PX-3``) and a site word only its episode holds.

    BM25 ranks each question's episode first (the site word); the graph finds it through the pump (an entity).
    """
    from tests.integration.test_baseline_gating import WORDS
    from tests.support import episode, question, write_dataset

    episodes = [
        episode(f"p{i:02d}", i + 1, f"## Log\n- Pump PX-{i} at the {word} site: vibration rose to {i + 2}.5 mm/s overnight.")
        for i, word in enumerate(WORDS[:count])
    ]
    prompts = [f"What vibration did pump PX-{i} at the {word} site log?" for i, word in enumerate(WORDS[:count])]
    questions = [question(f"pump_{i:02d}", count, [f"p{i:02d}"], [f"{i + 2}.5 mm/s"], prompt=prompt) for i, prompt in enumerate(prompts)]
    return write_dataset(path, {"version": "1", "scopes": [{"scope_id": "s1", "episodes": episodes}], "questions": questions})


@pytest.mark.parametrize(("search", "flagged"), [("memory", False), ("fused", True)])
def test_a_memory_the_model_builds_is_run_against_the_empty_extractor_too(pytester: pytest.Pytester, search: str, flagged: bool) -> None:
    # graphrag-light reads its graph by default: built by the empty extractor it finds nothing, and the run sees it. Its
    # fused mode scores BM25 over the raw episodes whatever the model built: flagged as insensitive to it.
    from lens_fixtures.openai_server import OpenAITestServer

    dataset = pump_dataset(pytester.path / "pumps.json")
    with OpenAITestServer() as server:
        result = pytester.runpytest(
            "--lens-adapter=graph=graphrag-light",
            f"--lens-adapter-option=graph.search={search}",
            options.CONTROLS,
            f"{options.MUTANTS}=none",
            f"{options.DATASET}={dataset}",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-agent-model=scripted",
            "--lens-json=run.json",
            *NO_CACHE,
        )
        sent = server.count(kind="extraction")
    assert_answered(result, 12 * 5)  # graph, null, random, oracle, graph/empty-extraction
    assert sent == 12  # the user's adapter's extractions; the control's went to the empty extractor
    artifact = read_artifact_json(pytester.path / "run.json")
    rows = {row["control"]: row for row in artifact["sensitivity"]["rows"]}
    # The run's requests are the user's adapter's (noted for bundles); the empty extractor's are no part of the run.
    assert any(r["llm_requests"] for r in artifact["results"] if r["adapter"] == "graph")
    assert not any(r["llm_requests"] or r["llm"] for r in artifact["results"] if r["adapter"] == "graph/empty-extraction")
    empty = rows["graph/empty-extraction"]
    assert (empty["kind"], empty["detected"]) == ("empty-extraction", not flagged)
    assert empty["flag"] == ("insensitive to what the model built" if flagged else None)
    assert empty["test"]["second"] == 0.0 if not flagged else empty["test"]["delta"]["value"] == 0.0
    warning = "*WARNING graph: insensitive to what the model built: its retrieval_score is * when its memory is built by an empty*"
    if flagged:
        result.stdout.fnmatch_lines([warning])
    else:
        result.stdout.no_fnmatch_line(warning)
