"""The plugin's behaviour as a pytest citizen: activation, options, fixtures, user test modules, examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_lens.plugin import options
from pytest_lens.records.rows import read_artifact_json
from tests.support import small_dataset, write_dataset

REPO = Path(__file__).parents[2]
NO_CACHE = ("-p", "no:cacheprovider")


@pytest.fixture
def dataset(pytester: pytest.Pytester) -> str:
    return f"{options.DATASET}={write_dataset(pytester.path / 'small.json', small_dataset())}"


def test_inactive_plugin_changes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): assert 1 + 1 == 2")
    result = pytester.runpytest(*NO_CACHE)
    result.assert_outcomes(passed=1)
    assert "LENS" not in result.stdout.str()


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    heavy = "('pydantic', 'numpy', 'torch', 'openai', 'sqlite_utils')"
    code = f"import sys, pytest_lens.plugin; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_lens_fixtures_without_an_adapter_fail_with_instructions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_mine(lens_case, lens_run): lens_run(lens_case)")
    result = pytester.runpytest(*NO_CACHE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*pytest-lens is not active: pass --lens-adapter=module:Class (or set lens_adapters in the ini file)*"])


def test_user_test_modules_get_every_case_and_replace_the_builtin_tests(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.makepyfile(
        test_memory="""
        def test_grounded(lens_case, lens_run):
            result = lens_run(lens_case)
            assert result.metrics["evidence_grounding"] >= 0.5, result.answer

        def test_adapter_sees_the_checkpoint(lens_case, lens_adapter):
            assert len(lens_adapter._db.execute("select * from episodes").fetchall()) == lens_case.checkpoint
        """
    )
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "-v", *NO_CACHE)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["test_memory.py::test_grounded[[]bm25-s1-cp002-q1[]] PASSED*"])
    assert "lens::test_lens" not in result.stdout.str()


def test_a_lens_run_freezes_what_it_keeps_and_thaws_it_when_done(pytester: pytest.Pytester, dataset: str) -> None:
    import gc

    pytester.makepyfile(
        test_memory="""
        import gc

        def test_frozen(lens_case, lens_run):
            lens_run(lens_case)
            assert gc.get_freeze_count() > 0
        """
    )
    assert gc.get_freeze_count() == 0
    result = pytester.runpytest("--lens-adapter=bm25", dataset, *NO_CACHE)  # in this process
    result.assert_outcomes(passed=3)
    assert gc.get_freeze_count() == 0  # left as it found it


def test_markers_select_lens_questions(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.makepyfile("def test_other(): pass")
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "-m", "lens", *NO_CACHE)
    result.assert_outcomes(passed=3)  # the module without LENS tests is not even collected under -m lens
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "-m", "not lens", *NO_CACHE)
    result.assert_outcomes(passed=1, deselected=3)


def test_the_example_adapter_runs(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.syspathinsert(REPO)
    result = pytester.runpytest(
        "--lens-adapter=examples.my_memory:DictMemory", "--lens-adapter-option=snippet_chars=60", dataset, *NO_CACHE
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["DictMemory * 3 * pass"])


def test_ini_configuration(pytester: pytest.Pytester) -> None:
    write_dataset(pytester.path / "small.json", small_dataset())
    pytester.makeini(
        """
        [pytest]
        lens_adapters =
            kw=bm25
        lens_datasets = small.json
        lens_budgets = 8k
        lens_json = ini-run.json
        """
    )
    result = pytester.runpytest(*NO_CACHE)
    result.assert_outcomes(passed=3)
    artifact = read_artifact_json(pytester.path / "ini-run.json")
    assert {r["budget"] for r in artifact["results"]} == {"8k"} and list(artifact["summary"]) == ["kw"]


def test_adapter_options_reach_one_or_all_adapters(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.makepyfile(
        test_opts="""
        def test_options(lens_case, lens_adapter):
            expected = {"a": 5, "b": 48}[lens_case.adapter]
            assert lens_adapter._snippet_tokens == expected
            assert lens_adapter._max_results == 7
        """
    )
    result = pytester.runpytest(
        "--lens-adapter=a=bm25",
        "--lens-adapter=b=bm25",
        dataset,
        "--lens-adapter-option=max_results=7",
        "--lens-adapter-option=a.snippet_tokens=5",
        *NO_CACHE,
    )
    result.assert_outcomes(passed=6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lens-adapter=nosuchname"], "*'nosuchname' is neither module:Class nor a registered adapter name (registered: *bm25*null*"),
        (["--lens-adapter=nosuchmodule:Thing"], "*cannot import module 'nosuchmodule'*"),
        (["--lens-adapter=bm25", "--lens-adapter=bm25"], "*adapter label 'bm25' is used twice; name them apart with LABEL=TARGET*"),
        (["--lens-adapter=bm25", "--lens-adapter-option=colour=blue"], "*adapter 'bm25' (bm25) does not accept colour*"),
        (["--lens-adapter=bm25", "--lens-adapter-option=x.k=1"], "*no adapter labelled 'x'*"),
        (["--lens-adapter=bm25", "--lens-budget=huge"], "*--lens-budget: unknown budget 'huge'*"),
        (["--lens-adapter=bm25", "--lens-agent=oracle"], "*--lens-agent: unknown agent 'oracle'; available: llm, offline*"),
        (["--lens-adapter=tests.support:episode"], "*is a function, not an adapter class*"),
        (
            ["--lens-adapter=pathlib:Path"],
            "*does not implement the adapter contract: missing reset, ingest, search, retrieve, get_capabilities*",
        ),
    ],
)
def test_configuration_mistakes_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest(*args, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_defects_become_errors_when_strict(pytester: pytest.Pytester) -> None:
    document = small_dataset()
    document["questions"][0]["ground_truth"]["key_facts"] = []
    path = write_dataset(pytester.path / "d.json", document)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={path}", "--lens-strict", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*questions[[]0[]].ground_truth.key_facts: question 'q1' has no key facts [[]empty_key_facts[]]"])


def test_results_hook_sees_every_result(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.makeconftest(
        """
        seen = []

        def pytest_lens_result(result, config):
            seen.append(result.question_id)

        def pytest_sessionfinish(session):
            print("seen:", ",".join(seen))
        """
    )
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "-s", *NO_CACHE)
    result.stdout.fnmatch_lines(["*seen: q1,q2,q3*"])


def test_collection_counts_lens_items_and_collect_only_prints_no_verdict(pytester: pytest.Pytester, dataset: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "--collect-only", "-q", *NO_CACHE)
    result.stdout.fnmatch_lines(["lens::test_lens[[]bm25-s1-cp002-q1[]]", "*3 tests collected*"])
    assert result.ret == pytest.ExitCode.OK and "LENS" not in result.stdout.str()
    result = pytester.runpytest("--lens-adapter=bm25", dataset, "-k", "q1", *NO_CACHE)
    result.stdout.fnmatch_lines(["collected 3 items / 2 deselected / 1 selected"])


def test_dataset_defects_are_reported_only_for_the_selected_questions(pytester: pytest.Pytester) -> None:
    flawed = small_dataset()
    flawed["questions"][0]["ground_truth"]["key_facts"] = []  # q1 of scope s1: a question-level defect
    clean = json.loads(json.dumps(small_dataset()).replace('"s1"', '"s2"'))
    paths = [write_dataset(pytester.path / "flawed.json", flawed), write_dataset(pytester.path / "clean.json", clean)]
    data = [f"--lens-dataset={path}" for path in paths]

    def defects(*selection: str) -> list[str]:
        """The defects a run reports (summary and artifact agree), as ``file: code``."""
        result = pytester.runpytest("--lens-adapter=bm25", *data, *selection, "--lens-json=out.json", *NO_CACHE)
        assert result.ret == pytest.ExitCode.OK
        artifact = read_artifact_json(pytester.path / "out.json")["dataset_warnings"]
        shown = [line.strip() for line in result.stdout.lines if line.startswith(f"  {pytester.path}")]
        assert shown == artifact
        return [f"{Path(line.split(':')[0]).name}: {line.rsplit('[', 1)[1].rstrip(']')}" for line in artifact]

    # Both files carry label_meta (file-level); flawed.json's q1 has no key facts.
    assert defects() == ["flawed.json: label_meta", "flawed.json: empty_key_facts", "clean.json: label_meta"]
    assert defects("-k", "s2") == ["clean.json: label_meta"]  # the flawed file's questions were deselected
    assert defects("-k", "s1 and not q1") == ["flawed.json: label_meta"]  # its file, without the deselected question's defect
