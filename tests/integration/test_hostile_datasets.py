"""Issue 15, defects 4 and 5 and rough edges, through pytest: hostile datasets are usage errors, never INTERNALERROR."""

from __future__ import annotations

import pytest

from tests.support import assert_answered, small_dataset, write_dataset

NO_CACHE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def assert_usage_error(result: pytest.RunResult, *lines: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(list(lines))
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_deeply_nested_json_pytest_run_is_a_usage_error(pytester: pytest.Pytester) -> None:
    path = pytester.path / "deep.json"
    path.write_text("[" * 100_000)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={path}", *NO_CACHE)
    assert_usage_error(result, f"*{path}: -: nested too deeply (over 200 levels) at line 1 column * [[]too_deep[]]*")


def test_timestamps_integer_timestamp_pytest_run_is_a_usage_error_naming_episode_and_field(pytester: pytest.Pytester) -> None:
    document = small_dataset()
    document["scopes"][0]["episodes"][0]["timestamp"] = "2025-01-01T09:00:00Z"
    document["scopes"][0]["episodes"][3]["timestamp"] = 1735981200
    path = write_dataset(pytester.path / "stamps.json", document)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={path}", *NO_CACHE)
    assert_usage_error(result, f"*{path}: scopes[[]0[]].episodes[[]3[]].timestamp: Value error, episode 'e4': timestamp must be*")


def test_timestamps_mixed_naive_and_aware_pytest_run_answers_every_question(pytester: pytest.Pytester) -> None:
    document = small_dataset()
    document["scopes"][0]["episodes"][0]["timestamp"] = "2025-01-01T09:00:00Z"
    document["scopes"][0]["episodes"][4]["timestamp"] = "2025-01-05T10:00:00+01:00"
    path = write_dataset(pytester.path / "mixed.json", document)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={path}", *NO_CACHE)
    assert_answered(result, 3)


def test_rough_edges_every_bad_file_is_named_in_a_pytest_run(pytester: pytest.Pytester) -> None:
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "a.json").write_text('{"scopes": [')
    document = small_dataset()
    document["questions"][1]["checkpoint_after"] = True
    write_dataset(pytester.path / "data" / "b.json", document)
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={pytester.path / 'data'}", *NO_CACHE)
    assert_usage_error(
        result,
        "*--lens-dataset: cannot use 2 dataset files (*a.json, *b.json):",
        "*a.json: -: not valid JSON: EOF while parsing a list at line 1 column 12 [[]invalid_json[]]",
        "*b.json: questions[[]1[]].checkpoint_after: Input should be a valid integer (got True) [[]schema[]]",
    )
