"""The conformance suite as users run it: --lens-conformance, the lens_conformance marker, xdist, options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_lens.plugin.conformance import options
from tests.support import small_dataset, write_dataset

NO_CACHE = ("-p", "no:cacheprovider")
BROKEN = "lens_fixtures.adapters.broken"


@pytest.fixture
def ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a CI runner: the lens-ci profile (bounded, derandomized) is the default."""
    monkeypatch.setenv("CI", "true")


def test_bm25_keeps_the_contract(pytester: pytest.Pytester, ci: None) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", options.CONFORMANCE, "-v", *NO_CACHE)
    result.assert_outcomes(passed=16, skipped=5)
    result.stdout.fnmatch_lines(
        [
            "lens conformance: 21 clauses per adapter, hypothesis profile lens-ci; LENS questions not added",
            "lens-conformance::test_manifest_valid[[]bm25[]] PASSED*",
            "lens-conformance::test_retrieve_roundtrip[[]bm25[]] PASSED*",
            "lens-conformance::test_filters_fields[[]bm25[]] SKIPPED*",
            "*= LENS conformance =*",
            "hypothesis profile lens-ci; latency ceiling p95 1,000 ms per call, advisory",
            "bm25 * 21 * 16 * 0 * 5 * s",
            "not applicable:",
            "  bm25: filters.fields (the manifest declares no filter_fields)",
            "latency per call over all clauses (ms):",
            "bm25 * search *",
        ]
    )
    assert "LENS summary" not in result.stdout.str()  # no LENS question was asked
    assert "lens: adapters bm25\n" in result.stdout.str()  # and the header does not count the questions not added
    assert "questions in" not in result.stdout.str()
    result.stdout.fnmatch_lines(["lens conformance [[]bm25[]]: 16 clauses, about * examples; expected about *"])
    assert "test_lens[" not in result.stdout.str()


def test_a_broken_adapter_fails_exactly_its_clause_with_a_readable_message(pytester: pytest.Pytester, ci: None) -> None:
    result = pytester.runpytest(f"--lens-adapter={BROKEN}:IgnoresLimit", options.CONFORMANCE, "-k", "search", *NO_CACHE)
    result.assert_outcomes(passed=3, failed=1, skipped=1, deselected=16)
    result.stdout.fnmatch_lines(
        [
            "*_ test_search_limit[[]IgnoresLimit[]] _*",
            "conformance clause search.limit failed for adapter 'IgnoresLimit', in search()",
            "  contract: search(query, limit=n) returns at most n results, *",
            "  violation: search('beacon', limit=1) returned 2 results, more than limit=1",
            "  minimal failing example (hypothesis profile lens-ci, * examples run, shrunk):",
            "    episodes: 2 episode(s), ingested in this order",
            "      [[]1[]] id='ep_001' timestamp='2020-01-01T00:00:00' text='beacon'",
            "      [[]2[]] id='ep_002' timestamp='2020-01-01T01:00:00' text='beacon'",
            "    searches: [[][[]'beacon', 1[]][]]",
            "broken clauses:",
            "  IgnoresLimit: search.limit in search(): search('beacon', limit=1) returned 2 results, more than limit=1",
            "FAILED lens-conformance::test_search_limit[[]IgnoresLimit[]] - Failed: conformance clause search.limit *",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_xdist_workers_report_to_one_summary(pytester: pytest.Pytester, ci: None) -> None:
    adapters = ("--lens-adapter=bm25", f"--lens-adapter={BROKEN}:AscendingScores")
    result = pytester.runpytest(*adapters, options.CONFORMANCE, "-k", "search_ordered or manifest", "-n", "2", *NO_CACHE)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*= LENS conformance =*",
            "AscendingScores * 2 * 1 * 1 * 0 *",
            "bm25 * 2 * 2 * 0 * 0 *",
            "  AscendingScores: search.ordered in search(): search(*) is not sorted by descending score: *",
        ]
    )


def test_the_marker_runs_clauses_from_a_user_test_module_without_any_option(pytester: pytest.Pytester, ci: None) -> None:
    pytester.makepyfile(
        test_contract="""
        import pytest

        pytestmark = pytest.mark.lens_conformance(
            "lens_fixtures.adapters.faceted:FacetedMemory", clauses=["filters"], label="faceted"
        )

        def test_contract(lens_conformance):
            outcome = lens_conformance.check()
            assert outcome.status == "passed" and outcome.examples > 0
        """
    )
    pytester.makepyfile(test_other="def test_other(): pass")
    result = pytester.runpytest("-v", "-m", "lens_conformance", "--junitxml=out.xml", *NO_CACHE)
    result.assert_outcomes(passed=2, deselected=1)
    junit = (pytester.path / "out.xml").read_text()
    assert 'name="test_contract[faceted-filters.fields]"' in junit and "latencies" not in junit
    result.stdout.fnmatch_lines(
        [
            "test_contract.py::test_contract[[]faceted-filters.fields[]] PASSED*",
            "test_contract.py::test_contract[[]faceted-filters.date_range[]] PASSED*",
            "faceted * 2 * 2 * 0 * 0 *",
        ]
    )


def test_marker_clauses_run_next_to_the_lens_questions(pytester: pytest.Pytester, ci: None) -> None:
    dataset = write_dataset(pytester.path / "small.json", small_dataset())
    pytester.makepyfile(
        test_contract="""
        import pytest

        @pytest.mark.lens_conformance(clauses=["retrieve.roundtrip"])
        def test_contract(lens_conformance):
            lens_conformance.check()
        """
    )
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={dataset}", "-v", *NO_CACHE)
    result.assert_outcomes(passed=4)  # three LENS questions and the clause, on the --lens-adapter adapter
    result.stdout.fnmatch_lines(["test_contract.py::test_contract[[]bm25[]] PASSED*", "*= LENS summary =*", "*= LENS conformance =*"])


def test_the_fixture_without_an_adapter_says_how_to_give_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_contract(lens_conformance): lens_conformance.check()")
    result = pytester.runpytest(*NO_CACHE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*lens_conformance has no adapter: give the test @pytest.mark.lens_conformance('module:Class')*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((options.CONFORMANCE,), "*--lens-conformance needs an adapter: add --lens-adapter=module:Class*"),
        (("--lens-adapter=bm25", options.CONFORMANCE, f"{options.HYPOTHESIS_PROFILE}=nope"), "*unknown hypothesis profile 'nope'*"),
        (("--lens-adapter=bm25", options.CONFORMANCE, f"{options.LATENCY_CEILING}=fast"), "*--lens-latency-ceiling: 'fast': expected*"),
    ],
)
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, args: tuple[str, ...], message: str) -> None:
    result = pytester.runpytest(*args, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_latency_over_an_advisory_ceiling_warns_and_an_enforced_one_fails(pytester: pytest.Pytester, ci: None) -> None:
    args = (f"--lens-adapter={BROKEN}:SlowSearch", "--lens-adapter-option=delay_s=0.03", options.CONFORMANCE, "-k", "latency")
    advisory = pytester.runpytest(*args, f"{options.LATENCY_CEILING}=search=0.01", *NO_CACHE)
    advisory.assert_outcomes(passed=1, deselected=20, warnings=1)
    advisory.stdout.fnmatch_lines(
        [
            "*LensLatencyWarning: adapter 'SlowSearch': search() p95 * ms exceeds the ceiling of 10 ms*",
            "hypothesis profile lens-ci; latency ceiling p95 1,000 ms per call (search 10 ms), advisory",
            "over the latency ceiling (advisory):",
            "  SlowSearch: search() p95 * exceeds the ceiling of 10 ms *",
        ]
    )
    enforced = pytester.runpytest(*args, f"{options.LATENCY_CEILING}=search=0.01", options.LATENCY_ENFORCE, *NO_CACHE)
    enforced.assert_outcomes(failed=1, deselected=20)
    enforced.stdout.fnmatch_lines(["conformance clause latency.ceiling failed for adapter 'SlowSearch', in search()"])


def test_the_users_hypothesis_profile_is_left_alone_unless_named(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # so that the default is lens-dev, also on a CI runner
    pytester.makeconftest(
        """
        from hypothesis import settings
        settings.register_profile("mine", max_examples=7, deadline=None)
        settings.load_profile("mine")
        """
    )
    pytester.makepyfile(
        test_order="""
        import pytest
        from hypothesis import settings

        @pytest.mark.lens_conformance("bm25", clauses=["retrieve.unknown"])
        def test_a_contract(lens_conformance):
            assert lens_conformance.check().profile == pytest.PROFILE

        def test_b_still_mine():
            assert settings.default.max_examples == 7
        """.replace("pytest.PROFILE", repr("lens-dev"))
    )
    default = pytester.runpytest(*NO_CACHE)
    default.assert_outcomes(passed=2)
    (pytester.path / "test_order.py").write_text((pytester.path / "test_order.py").read_text().replace("'lens-dev'", "'mine'"))
    named = pytester.runpytest(f"{options.HYPOTHESIS_PROFILE}=mine", *NO_CACHE)
    named.assert_outcomes(passed=2)
    named.stdout.fnmatch_lines(["hypothesis profile mine; *"])


def test_loading_the_plugin_imports_no_hypothesis() -> None:
    code = (
        "import sys, pytest_lens.plugin, pytest_lens.plugin.conformance.hooks; "
        "print(sorted(m for m in ('hypothesis', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


#: A conftest that makes hypothesis unimportable, as in an install without the conformance extra.
WITHOUT_HYPOTHESIS = """
import sys

class _NoHypothesis:
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoHypothesis())
"""
#: hypothesis's own pytest plugin is part of the hypothesis install: without hypothesis it is not there either.
NO_HYPOTHESIS_PLUGIN = ("-p", "no:hypothesispytest")


def test_without_the_conformance_extra_lens_conformance_says_what_to_install(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(WITHOUT_HYPOTHESIS)
    result = pytester.runpytest_subprocess("--lens-adapter=bm25", options.CONFORMANCE, *NO_HYPOTHESIS_PLUGIN, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--lens-conformance: the conformance suite needs the conformance extra (hypothesis is not installed): "
            "pip install 'pytest-lens[[]conformance[]]'"
        ]
    )


def test_without_the_conformance_extra_a_marked_test_fails_and_the_rest_of_the_run_survives(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(WITHOUT_HYPOTHESIS)
    pytester.makepyfile(
        test_contract="""
        import pytest

        @pytest.mark.lens_conformance("bm25")
        def test_contract(lens_conformance):
            lens_conformance.check()

        def test_other():
            pass
        """
    )
    result = pytester.runpytest_subprocess(*NO_HYPOTHESIS_PLUGIN, *NO_CACHE)
    result.assert_outcomes(passed=1, errors=1)  # the fixture fails, as it does without an adapter
    result.stdout.fnmatch_lines(
        [
            "*lens_conformance (bm25): the conformance suite needs the conformance extra (hypothesis *): "
            "pip install 'pytest-lens[[]conformance[]]'"
        ]
    )


def test_without_hypothesis_a_lens_run_works_and_never_looks_for_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(WITHOUT_HYPOTHESIS)
    path = write_dataset(pytester.path / "data.json", small_dataset())
    result = pytester.runpytest_subprocess("--lens-adapter=bm25", f"--lens-dataset={path}", *NO_HYPOTHESIS_PLUGIN, *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["LENS verdict: PASS"])


def test_an_llm_backed_adapter_runs_the_suite_through_the_run_llm_client(pytester: pytest.Pytester, ci: None) -> None:
    from lens_fixtures.openai_server import OpenAITestServer

    with OpenAITestServer() as server:
        args = ("--lens-adapter=compaction", f"--lens-llm-base-url={server.base_url}", "--lens-agent-model=scripted")
        result = pytester.runpytest(*args, options.CONFORMANCE, "-k", "recall or tools", *NO_CACHE)
        summaries = len(server.requests)
    result.assert_outcomes(passed=4, deselected=17)  # the summary quotes the rare token: found through the synthetic ref
    assert summaries > 0
    unavailable = pytester.runpytest("--lens-adapter=compaction", options.CONFORMANCE, "-k", "recall", "-rs", *NO_CACHE)
    unavailable.assert_outcomes(skipped=1, deselected=20)
    unavailable.stdout.fnmatch_lines(["*the adapter is unavailable here: compaction needs an LLM to write its summary*"])
