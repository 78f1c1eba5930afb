"""A new user's first steps: their own adapter module, from their own directory, in a real pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.unit.test_registry import ADAPTER

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
