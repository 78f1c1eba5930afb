"""A plain LENS run imports what it uses and nothing else (``benchmarks/overhead.py`` measures what that saves)."""

from __future__ import annotations

import json

import pytest

from pytest_lens.records.rows import read_artifact_json
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
    assert read_artifact_json(pytester.path / "out.json")["statistics"] is not None
    imported: list[str] = json.loads((pytester.path / "imported.json").read_text())
    return imported


def test_a_one_adapter_run_with_intervals_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    assert _imported(pytester, "--lens-adapter=bm25") == []


def test_paired_tests_between_two_adapters_import_scipy_when_they_run(pytester: pytest.Pytester) -> None:
    assert _imported(pytester, "--lens-adapter=bm25", "--lens-adapter=null") == ["scipy"]


#: Marks our packages for rewriting before pytest-lens loads, as pytest does for a wheel install of a pytest11 plugin.
MARK_LIKE_A_WHEEL = "import pytest\npytest.register_assert_rewrite('pytest_lens', 'lens_fixtures')\n"
REWRITTEN = """
import json, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    names = [
        name for name, module in sys.modules.items()
        if name.split(".")[0] in ("pytest_lens", "lens_fixtures")
        and type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook"
    ]
    loaded = [name for name in sys.modules if name.split(".")[0] in ("pytest_lens", "lens_fixtures")]
    with open("rewritten.json", "w") as handle:
        json.dump({"rewritten": sorted(names), "loaded": len(loaded)}, handle)
"""


def test_pytest_does_not_rewrite_our_modules_beyond_the_plugins_own(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mark_like_a_wheel=MARK_LIKE_A_WHEEL)
    pytester.makeconftest(REWRITTEN)
    path = write_dataset(pytester.path / "data.json", small_dataset())
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "mark_like_a_wheel", "--lens-adapter=bm25", f"--lens-dataset={path}", *PLAIN_INSTALL)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    found = json.loads((pytester.path / "rewritten.json").read_text())
    # Only what pytest imports before pytest-lens's first hook runs: the plugin module and its stdlib-only settings.
    assert "pytest_lens.plugin.hooks" in found["rewritten"]  # the marks took effect: the probe sees rewriting
    assert set(found["rewritten"]) <= {
        "pytest_lens",
        "pytest_lens._lazy",
        "pytest_lens.plugin",
        "pytest_lens.plugin.hooks",
        "pytest_lens.records",
        "pytest_lens.contract",
        "pytest_lens.plugin.conformance",
        "pytest_lens.plugin.options",
        "pytest_lens.records.settings",
        "pytest_lens.records.options",
        "pytest_lens.llm",
        "pytest_lens.llm.settings",
        "pytest_lens.contract.adapter",
        "pytest_lens.plugin.hookspecs",
        "pytest_lens.conformance",
        "pytest_lens.plugin.conformance.options",
        "pytest_lens.plugin.conformance.hooks",
        "pytest_lens.conformance.latency",
    }
    assert found["loaded"] > 40  # the run imported many more of ours, none rewritten
