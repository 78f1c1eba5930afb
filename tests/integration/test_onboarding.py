"""A new user's first steps: their own adapter module, from their own directory, in a real pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import assert_answered, fast_progress_lines
from tests.unit.contract.test_registry import ADAPTER

NO_CACHE = ("-p", "no:cacheprovider")


def test_an_adapter_module_in_an_empty_directory_runs_the_conformance_suite(tmp_path: Path) -> None:
    # A real process started from a directory holding only mymem.py: no conftest, no ini file, nothing installed.
    (tmp_path / "mymem.py").write_text(ADAPTER)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    run = subprocess.run(
        # The pytest script, not ``python -m pytest``, which would put the directory on sys.path itself.
        [str(Path(sys.executable).parent / "pytest"), "--lens-adapter=mymem:Memory", "--lens-conformance", "-k", "manifest or roundtrip"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout, run.stdout


def test_an_adapter_in_the_rootdir_is_found_from_a_subdirectory(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "rootmem.py").write_text(ADAPTER)
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    result = pytester.runpytest("--lens-adapter=rootmem:Memory", "--lens-conformance", "-k", "manifest", *NO_CACHE)
    result.assert_outcomes(passed=1)


def test_an_unknown_adapter_module_is_a_usage_error_saying_where_it_looked(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=chroma_adapter:ChromaMemory", "--lens-conformance", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--lens-adapter=chroma_adapter:ChromaMemory: cannot import module 'chroma_adapter'*no module named 'chroma_adapter'.",
            "Looked in:",
            f"  - {pytester.path} (no chroma_adapter.py or chroma_adapter/ there)",
            "  - the installed packages of *",
            "Put chroma_adapter.py in the directory you run pytest from or in the rootdir*",
        ]
    )


def test_a_marker_target_is_found_in_the_rootdir(pytester: pytest.Pytester) -> None:
    (pytester.path / "markmem.py").write_text(ADAPTER)
    pytester.makepyfile(
        test_contract=textwrap.dedent(
            """
            import pytest

            @pytest.mark.lens_conformance("markmem:Memory", clauses=["manifest"])
            def test_contract(lens_conformance):
                lens_conformance.check()
            """
        )
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rootdir", str(pytester.path), "--import-mode=importlib")
    result.assert_outcomes(passed=1)


# -- progress ----------------------------------------------------------------------------------
def _demo(pytester: pytest.Pytester) -> str:
    from tests.support import COLD_CHAIN_DEMO

    return f"--lens-dataset={COLD_CHAIN_DEMO}"


def test_ingestion_prints_a_progress_line_per_adapter_and_scope(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-adapter=null", _demo(pytester), *NO_CACHE)
    assert_answered(result, 16)  # null's questions are gated
    result.stdout.fnmatch_lines(
        [
            "lens: bm25 | cold_chain_demo: ingesting 0/16 episodes, 0.0 s, estimate after the first episodes",
            "lens .*",
            "lens: null | cold_chain_demo: ingesting 0/16 episodes, 0.0 s, estimate after the first episodes",
        ]
    )


def test_verbose_output_keeps_each_result_on_its_test_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", _demo(pytester), "-v", *NO_CACHE)
    result.stdout.fnmatch_lines(
        [
            "lens: bm25 | cold_chain_demo: ingesting 0/16 episodes*",
            "lens::test_lens[[]bm25-cold_chain_demo-cp007-ccd_q01_null_hypothesis[]] PASSED*",
        ]
    )


def test_quiet_runs_print_no_progress(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", _demo(pytester), "-q", *NO_CACHE)
    result.assert_outcomes(passed=8)
    assert "ingesting" not in result.stdout.str()


def test_no_color_keeps_progress_plain_even_when_colour_is_forced(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("PY_COLORS", raising=False)
    result = pytester.runpytest_subprocess("--lens-adapter=bm25", _demo(pytester), *NO_CACHE)
    line = next(line for line in result.outlines if "ingesting" in line)
    assert line == "lens: bm25 | cold_chain_demo: ingesting 0/16 episodes, 0.0 s, estimate after the first episodes"


def test_xdist_workers_print_progress_on_stderr_with_their_id(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--lens-adapter=bm25", "--lens-adapter=null", _demo(pytester), "-n", "2", *NO_CACHE)
    assert_answered(result, 16)  # null's questions are gated
    result.stderr.fnmatch_lines_random(
        [
            "[[]gw?[]] lens: bm25 | cold_chain_demo: ingesting 0/16 episodes*",
            "[[]gw?[]] lens: null | cold_chain_demo: ingesting 0/16 episodes*",
        ]
    )
    assert "ingesting" not in result.stdout.str()


def test_the_offline_agents_answering_lines_say_nothing_about_a_model(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # No model is used: the lines had said "model: 0 requests being served, ..., 0 tokens generated" throughout.
    fast_progress_lines(monkeypatch, every_s=0.0)
    result = pytester.runpytest("--lens-adapter=bm25", _demo(pytester), "--lens-concurrency=2", *NO_CACHE)
    assert_answered(result, 8)
    result.stdout.fnmatch_lines(["lens: bm25 | cold_chain_demo: answering ?/8 questions done, ? in flight, ? queued, * s, *"])
    assert "model:" not in result.stdout.str()


def test_worker_progress_lines_never_share_a_line_with_the_dots_in_a_log(tmp_path: Path) -> None:
    # A CI log: no TTY, standard output and standard error in one file. Four stream groups on two workers,
    # so that later groups start (and print their progress line) while the controller is printing dots.
    pytest.importorskip("xdist")
    from tests.support import COLD_CHAIN_DEMO

    log = tmp_path / "ci.log"
    with log.open("w") as out:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "--lens-adapter=bm25", "--lens-adapter=null", f"--lens-dataset={COLD_CHAIN_DEMO}",
             "--lens-budget=4k", "--lens-budget=16k", "-n", "2", "-p", "no:randomly", *NO_CACHE],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600,
        )  # fmt: skip
    lines = log.read_text().splitlines()
    assert run.returncode == 1, "\n".join(lines)  # null's questions are gated
    # A stream group's first line: "ingesting", or "replaying" where its worker rebuilt the adapter's state for a budget.
    progress = [line for line in lines if "lens: " in line and ("ingesting 0/" in line or "replaying 0/" in line)]
    assert len(progress) == 4, "\n".join(lines)
    # Each progress line is a line of its own, and no line of dots carries a progress line.
    assert all(line.startswith("[gw") for line in progress), "\n".join(progress)
    dots = [line for line in lines if line[:1] in {".", "G", "F"}]
    assert dots and not any("lens:" in line for line in dots), "\n".join(dots)


def test_a_slow_conformance_clause_says_which_example_it_is_on(pytester: pytest.Pytester) -> None:
    (pytester.path / "slowmem.py").write_text(
        ADAPTER.replace("self.docs[episode_id] = text", "import time; time.sleep(0.05); self.docs[episode_id] = text")
    )
    result = pytester.runpytest("--lens-adapter=slowmem:Memory", "--lens-conformance", "-k", "roundtrip", *NO_CACHE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["lens conformance: retrieve.roundtrip [[]Memory[]]: example * of *, *s"])


# -- pytest -m lens ----------------------------------------------------------------------------
def test_m_lens_does_not_import_the_projects_other_test_modules(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_unrelated="raise RuntimeError('imported although -m lens selects nothing here')\ndef test_x(): pass",
        test_mine="def test_memory(lens_case, lens_run):\n    assert lens_run(lens_case).metrics",
    )
    result = pytester.runpytest("-m", "lens", "--lens-adapter=bm25", _demo(pytester), *NO_CACHE)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["collected 8 items"])
    # Named on the command line, a file is imported whatever it holds.
    named = pytester.runpytest("-m", "lens", "--lens-adapter=bm25", _demo(pytester), "test_unrelated.py", *NO_CACHE)
    named.stdout.fnmatch_lines(["*RuntimeError: imported although -m lens selects nothing here*"])


def test_without_m_lens_every_test_module_is_collected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unrelated="def test_x(): pass")
    result = pytester.runpytest("--lens-adapter=bm25", _demo(pytester), *NO_CACHE)
    result.assert_outcomes(passed=9)


def test_the_readme_pyproject_keys_configure_a_run(pytester: pytest.Pytester) -> None:
    from tests.support import COLD_CHAIN_DEMO

    (pytester.path / "mymem.py").write_text(ADAPTER)
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "my_scope.json").write_text(COLD_CHAIN_DEMO.read_text())
    pytester.makepyprojecttoml(
        textwrap.dedent(
            """
            [tool.pytest.ini_options]
            lens_adapters = ["mymem:Memory", "bm25"]
            lens_budgets = ["8k"]
            lens_datasets = ["data/my_scope.json"]
            lens_storage = ".lens"
            """
        )
    )
    result = pytester.runpytest("-m", "lens", "--lens-save=first", *NO_CACHE)
    assert_answered(result, 16)  # null's questions are gated
    result.stdout.fnmatch_lines(["lens: adapters Memory, bm25; agent offline; budget 8k; 16 questions in 1 scope(s)"])
    assert list((pytester.path / ".lens").glob("*/0001_first.json"))


# -- reading the result ------------------------------------------------------------------------
def test_gated_questions_and_failed_gates_say_so_to_the_end(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-adapter=null", _demo(pytester), "-v", *NO_CACHE)
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["gated"]) == (8, 8)  # the closing line's "1 LENS gate failed" is matched below
    result.stdout.fnmatch_lines(
        [
            "lens::test_lens[[]bm25-cold_chain_demo-cp013-ccd_q03_longitudinal[]] PASSED score 1.000 (grounding 1.000, ev.coverage *)*",
            "lens::test_lens[[]null-cold_chain_demo-cp013-ccd_q03_longitudinal[]] GATED score 0.000 (grounding 0.000, *)*",
            "legend: composite = 0.24 grounding + 0.24 ev.coverage + 0.30 cit.coverage + 0.21 budget *0 when a hard gate fails*",
            "  n = questions scored; res.tok/q = *; calls/q = tool calls per question; faults = *",
            "LENS verdict: FAIL - null: hard gate evidence_grounding 0.000 < 0.5",
            "*= 8 passed, 8 gated, 1 LENS gate failed in *",
        ]
    )
