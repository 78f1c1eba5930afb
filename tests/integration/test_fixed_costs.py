"""A plain LENS run imports what it uses and nothing else (``benchmarks/overhead.py`` measures what that saves)."""

from __future__ import annotations

import json

import pytest

from tests.support import small_dataset, write_dataset

#: Heavy modules a one-adapter offline LENS run has no use for.
HEAVY = ("hypothesis", "scipy", "matplotlib", "ir_measures", "torch", "openai", "sentence_transformers")
#: Records which of them the run imported, after every other plugin's end-of-session hooks.
RECORDER = f"""
import json, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("imported.json", "w") as handle:
        json.dump(sorted(name for name in {HEAVY!r} if name in sys.modules), handle)
"""
#: hypothesis's own pytest plugin imports hypothesis at the end of every session; it is installed with hypothesis,
#: which a plain install of pytest-lens does not pull in (the conformance extra does).
PLAIN_INSTALL = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


def _imported(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makeconftest(RECORDER)
    path = write_dataset(pytester.path / "data.json", small_dataset())
    result = pytester.runpytest_subprocess(f"--lens-dataset={path}", "--lens-json=out.json", *PLAIN_INSTALL, *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    assert json.loads((pytester.path / "out.json").read_text())["statistics"] is not None
    imported: list[str] = json.loads((pytester.path / "imported.json").read_text())
    return imported


def test_a_one_adapter_run_with_intervals_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    assert _imported(pytester, "--lens-adapter=bm25") == []


def test_paired_tests_between_two_adapters_import_scipy_when_they_run(pytester: pytest.Pytester) -> None:
    assert _imported(pytester, "--lens-adapter=bm25", "--lens-adapter=null") == ["scipy"]
