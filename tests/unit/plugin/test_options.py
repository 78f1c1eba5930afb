"""Registering the option table with pytest and reading it back (one pytest parse per case, no run)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_lens.cli.main import main
from pytest_lens.plugin import options
from pytest_lens.plugin.conformance import options as conformance
from pytest_lens.records.options import DEFAULTS, OPTIONS, Option
from pytest_lens.records.settings import LensSettings
from pytest_lens.scoring.composite import preset_weights

ROWS = (*OPTIONS, *conformance.OPTIONS)


class RecordingParser:
    """Stands in for :class:`pytest.Parser`: records what is registered."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.inis: list[tuple[str, dict[str, Any]]] = []

    def getgroup(self, name: str, description: str = "") -> RecordingParser:
        assert (name, description) == options.GROUP
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append((names, attrs))

    def addini(self, name: str, **attrs: Any) -> None:
        self.inis.append((name, attrs))


def test_every_row_is_registered_once_with_its_help_and_a_not_given_default() -> None:
    recorder = RecordingParser()
    options.add_options(cast(pytest.Parser, recorder))
    conformance.add_options(cast(pytest.Parser, recorder))
    assert Counter(names for names, _ in recorder.options) == Counter((row.flag,) for row in ROWS)
    assert Counter(name for name, _ in recorder.inis) == Counter(row.ini for row in ROWS if row.ini is not None)
    by_flag = {names[0]: attrs for names, attrs in recorder.options}
    by_ini = dict(recorder.inis)
    for row in ROWS:
        attrs = by_flag[row.flag]
        assert attrs["help"] == row.help and attrs["action"] == row.action
        assert attrs.get("metavar") == row.metavar and attrs.get("choices") == row.choices
        assert attrs["default"] == ([] if row.repeatable else None)  # "not given": the settings' default applies
        if row.ini is not None:
            assert by_ini[row.ini] == {"type": row.ini_kind, "default": [] if row.repeatable else None, "help": row.ini_help}


def test_pytest_knows_every_row_and_nothing_given_reads_as_the_defaults(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    for row in ROWS:
        assert config.getoption(row.flag) == ([] if row.repeatable else None)
        if row.ini is not None:
            assert config.getini(row.ini) in ([], None)
    settings = options.read_settings(config)
    defaults = LensSettings(adapters=(), rootdir=settings.rootdir, invocation_dir=settings.invocation_dir)
    assert replace(settings, weights=None) == defaults
    assert settings.weights == preset_weights(DEFAULTS.scoring)  # the preset's, where the dataclass leaves None
    assert conformance.read_conformance_settings(config) == conformance.ConformanceSettings()


Check = Callable[[Any], Any]
#: flag -> (a value that is not the default, how to find it in the settings, what it reads as).
SAMPLES: dict[str, tuple[str, Check, Any]] = {
    options.ADAPTER: ("a=bm25", lambda s: [(a.label, a.target) for a in s.adapters], [("a", "bm25")]),
    options.ADAPTER_OPTION: ("k=1", lambda s: dict(s.adapters[0].options), {"k": 1}),
    options.DATASET: ("data", lambda s: [p.name for p in s.datasets], ["data"]),
    options.BUDGET: ("8k", lambda s: s.budgets, ("8k",)),
    options.AGENT: ("llm", lambda s: s.agent, "llm"),
    options.JSON: ("out.json", lambda s: s.json_path, Path("out.json")),
    options.STRICT: ("", lambda s: s.strict, True),
    options.WEIGHTS: ("fact_recall=0.5", lambda s: s.weights["fact_recall"], 0.5),
    options.SCORING: ("v2", lambda s: s.scoring, "v2"),
    options.GATE_BUDGET: ("", lambda s: s.gate_budget, True),
    options.CALL_TIMEOUT: ("0", lambda s: s.call_timeout, None),
    options.OPAQUE_REFS: ("never", lambda s: s.opaque_refs, "never"),
    options.SEED: ("7", lambda s: s.seed, 7),
    options.NO_BUILTIN: ("", lambda s: s.builtin_tests, False),
    options.SUITE: ("meme", lambda s: s.suites, ("meme",)),
    options.ACCEPT_UNLIKE: ("judge,budget", lambda s: s.accept_unlike, ("judge", "budget")),
    options.SAVE: ("main", lambda s: s.save_name, "main"),
    options.BASELINE: ("main", lambda s: s.baseline, "main"),
    options.STORAGE: ("runs", lambda s: s.storage, Path("runs")),
    options.FAIL_UNDER: ("0.5", lambda s: s.fail_under, 0.5),
    options.COMPARE_FAIL: ("", lambda s: s.compare_fail, True),
    options.COMPARE_PARTIAL: ("", lambda s: s.compare_partial, True),
    options.ALPHA: ("0.01", lambda s: s.alpha, 0.01),
    options.MAX_DROP: ("0.1", lambda s: s.max_drop, 0.1),
    options.MARGIN: ("0.02", lambda s: s.margin, 0.02),
    options.BOOTSTRAP: ("plain", lambda s: s.bootstrap, "plain"),
    options.MAX_FAULT_RATE: ("10%", lambda s: s.max_fault_rate, 0.1),
    options.HEADLINE: ("retrieval", lambda s: s.headline, "retrieval"),
    options.LLM_BASE_URL: ("http://llm", lambda s: s.llm.base_url, "http://llm"),
    options.AGENT_MODEL: ("m", lambda s: s.llm.agent_model, "m"),
    options.JUDGE: ("offline", lambda s: s.llm.judge, "offline"),
    options.JUDGE_MODEL: ("j", lambda s: s.llm.judge_model, "j"),
    options.JUDGE_BASE_URL: ("http://judge", lambda s: s.llm.judge_base_url, "http://judge"),
    options.LLM_API_KEY_ENV: ("MY_KEY", lambda s: s.llm.api_key_env, "MY_KEY"),
    options.LLM_CACHE_MODE: ("off", lambda s: s.llm.cache_mode, "off"),
    options.LLM_CACHE: ("c.sqlite", lambda s: s.llm.cache_path, Path("c.sqlite")),
    options.JUDGE_MAX_FAILURES: ("20%", lambda s: s.llm.judge_max_failure_rate, 0.2),
    options.JUDGE_CHECK: ("30", lambda s: s.llm.judge_check, 30),
    options.JUDGE_CHECK_MODEL: ("k", lambda s: s.llm.judge_check_model, "k"),
    options.LLM_TIMEOUT: ("9", lambda s: s.llm.timeout_s, 9.0),
    options.LLM_RETRIES: ("1", lambda s: s.llm.retries, 1),
    options.AGENT_MAX_TOKENS: ("1k", lambda s: s.llm.agent_max_tokens, 1024),
    options.JUDGE_MAX_TOKENS: ("100", lambda s: s.llm.judge_max_tokens, 100),
    options.JUDGE_SHORT_MAX_TOKENS: ("8", lambda s: s.llm.judge_short_max_tokens, 8),
    options.LLM_CONTEXT: ("8k", lambda s: s.llm.context_tokens, 8192),
    options.MAX_NOT_MEASURED: ("0.5", lambda s: s.llm.max_not_measured_rate, 0.5),
    options.HTML: ("r.html", lambda s: s.html_path, Path("r.html")),
    options.CONTROLS: ("", lambda s: s.controls, True),
    options.MUTANTS: ("top2", lambda s: s.mutants, ("top2",)),
    options.CONCURRENCY: ("3", lambda s: s.concurrency, 3),
    options.MAX_CONNECTIONS: ("4", lambda s: s.llm.max_connections, 4),
    options.REPEAT: ("2", lambda s: s.repeat, 2),
    options.SHARD: ("2/3", lambda s: s.shard, (2, 3)),
    options.SHARD_DURATIONS: ("run.json", lambda s: s.shard_durations, Path("run.json")),
    options.RESUME: ("kept", lambda s: s.resume_dir, Path("kept")),
    options.RERUN: ("faults", lambda s: s.rerun, "faults"),
    conformance.CONFORMANCE: ("", lambda c: c.builtin, True),
    conformance.HYPOTHESIS_PROFILE: ("ci", lambda c: c.profile, "ci"),
    conformance.LATENCY_CEILING: ("search=0.2", lambda c: dict(c.latency_ceilings), {"search": 0.2}),
    conformance.LATENCY_ENFORCE: ("", lambda c: c.enforce_latency, True),
}
#: What a row needs besides itself, in the ini file (so that the command line or the ini key under test still decides).
NEEDS = {
    options.ADAPTER_OPTION: "lens_adapters = bm25",
    options.COMPARE_FAIL: "lens_baseline = main",
    options.MARGIN: "lens_baseline = main\nlens_compare_fail = true",
    options.MUTANTS: "lens_controls = true",
    options.RERUN: "lens_resume = kept",
}


def _read(config: pytest.Config, row: Option) -> Any:
    if row in conformance.OPTIONS:
        return conformance.read_conformance_settings(config)
    return options.read_settings(config)


def test_every_row_has_a_sample() -> None:
    assert set(SAMPLES) == {row.flag for row in ROWS}


#: Each row with each place it can be set: the command line always, the ini file where the row has a key.
SOURCES = [(row, source) for row in ROWS for source in ("command line", "ini") if source == "command line" or row.ini is not None]


@pytest.mark.parametrize(("row", "source"), SOURCES, ids=[f"{row.flag}-{source}" for row, source in SOURCES])
def test_every_row_round_trips_a_value_that_is_not_the_default(pytester: pytest.Pytester, row: Option, source: str) -> None:
    text, found, expected = SAMPLES[row.flag]
    before = _read(pytester.parseconfig(), row) if row.flag not in NEEDS else None
    assert before is None or found(before) != expected  # the sample is not the default
    lines = ["[pytest]", NEEDS.get(row.flag, "")]
    if source == "ini":
        value = ("false" if row.action == "store_false" else "true") if row.switch else text
        lines.append(f"{row.ini} = {value}")
        args: list[str] = []
    else:
        args = [row.flag] if row.switch else [f"{row.flag}={text}"]
    pytester.makeini("\n".join(lines) + "\n")
    assert found(_read(pytester.parseconfig(*args), row)) == expected


#: One bad value per kind of parser: (flag, value, what the message says after naming the option).
BAD = [
    (options.ALPHA, "1", "must lie strictly between 0 and 1, got '1'"),
    # Issue 46: 1e-300 passed, and the run crashed (StatisticsError) after its last question.
    (options.ALPHA, "1e-300", "must lie between 1e-09 and 1 - 1e-09 (the statistics cannot take a level closer to 0 or 1), got '1e-300'"),
    (options.FAIL_UNDER, "2", "must be a number between 0 and 1, got '2'"),
    (options.MAX_FAULT_RATE, "150%", "must be a fraction between 0 and 1 (or a percentage like 5%), got '150%'"),
    (options.SEED, "x", "must be a whole number; got 'x'"),
    (options.REPEAT, "0", "must be a whole number of answers per question, from 1 to 1,000; got '0'"),
    (options.REPEAT, "10000000", "must be a whole number of answers per question, from 1 to 1,000; got '10000000'"),
    (options.AGENT_MAX_TOKENS, "lots", "must be a positive number of tokens (e.g. 512 or 8k), got 'lots'"),
    (options.CALL_TIMEOUT, "soon", "must be a number of seconds (0 disables), got 'soon'"),
    (options.LLM_TIMEOUT, "-1", "must be a positive number of seconds, got '-1'"),
    (options.BUDGET, "17q", "unknown budget '17q': use one of 4k, 8k, 16k, 32k or results=N[,turns=N,calls=N,agent_tokens=N]"),
    (options.JUDGE, "maybe", "must be one of none, offline, llm, got 'maybe'"),
    (conformance.LATENCY_CEILING, "fast", "'fast': expected SECONDS or METHOD=SECONDS, e.g. 0.5 or search=0.2"),
]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--lens-shard=1/2", "--lens-save=main"],
            "--lens-save saves a whole run, not one shard's part: save the merged run (lens merge ... --save NAME)",
        ),
        (["--lens-rerun=faults"], "--lens-rerun reruns questions kept by a resumable run: add --lens-resume=DIR (the directory it wrote)"),
        (["--lens-shard=3/2"], "--lens-shard: must be I/N with 1 <= I <= N (e.g. 2/4), got '3/2'"),
        # Issue 46: an empty value and a margin without its gate were silently ignored.
        (["--lens-shard="], "--lens-shard= was given no value: give one, or leave the option out for its default"),
        (["--lens-margin="], "--lens-margin= was given no value: give one, or leave the option out for its default"),
        (
            ["--lens-margin=0.02", "--lens-baseline=main"],
            "--lens-margin is the margin of --lens-compare-fail's non-inferiority gate: add --lens-compare-fail and --lens-baseline",
        ),
    ],
)
def test_shard_and_rerun_options_that_cannot_work_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        options.read_settings(pytester.parseconfig(*args))
    assert str(caught.value) == message


@pytest.mark.parametrize(("flag", "text", "message"), BAD, ids=[flag for flag, _, _ in BAD])
def test_a_bad_value_names_its_option(pytester: pytest.Pytester, flag: str, text: str, message: str) -> None:
    row = next(row for row in ROWS if row.flag == flag)
    if not row.choices:  # argparse itself rejects a bad choice on the command line, naming the option
        with pytest.raises(pytest.UsageError) as caught:
            _read(pytester.parseconfig(f"{flag}={text}"), row)
        assert str(caught.value) == f"{flag}: {message}"
    ini = pytester.makeini(f"[pytest]\n{row.ini} = {text}\n")
    with pytest.raises(pytest.UsageError) as caught:
        _read(pytester.parseconfig(), row)
    assert str(caught.value) == f"{flag} (ini {row.ini} in {ini}): {message}"


@pytest.mark.parametrize(
    ("flag", "twin", "text"),
    [(options.ALPHA, "--alpha", "1.5"), (options.MAX_DROP, "--max-drop", "2"), (options.SEED, "--seed", "x")],
)
def test_lens_compare_gives_the_same_message(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], flag: str, twin: str, text: str
) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        options.read_settings(pytester.parseconfig(f"{flag}={text}"))
    assert main(["compare", "base", "current", twin, text]) == 2
    assert capsys.readouterr().err.strip() == f"lens compare: {twin}: {str(caught.value).removeprefix(f'{flag}: ')}"


def test_an_adapter_option_nested_past_the_limit_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    # Issue 32: 60,000 nested lists were a RecursionError (INTERNALERROR) from the JSON parser.
    from pytest_lens.records.settings import MAX_OPTION_DEPTH

    deep = "[" * 60_000 + "]" * 60_000
    with pytest.raises(pytest.UsageError) as caught:
        options.read_settings(pytester.parseconfig("--lens-adapter=bm25", f"--lens-adapter-option=filters={deep}"))
    assert str(caught.value) == (
        f"--lens-adapter-option filters: the JSON value nests 60000 levels deep; at most {MAX_OPTION_DEPTH} are allowed"
    )
    nested = "[" * MAX_OPTION_DEPTH + "]" * MAX_OPTION_DEPTH  # at the limit: read as JSON
    settings = options.read_settings(pytester.parseconfig("--lens-adapter=bm25", f"--lens-adapter-option=filters={nested}"))
    assert settings.adapters[0].options["filters"] == eval(nested)
    quoted = '"' + "[" * 500 + '"'  # brackets inside a JSON string do not nest
    settings = options.read_settings(pytester.parseconfig("--lens-adapter=bm25", f"--lens-adapter-option=note={quoted}"))
    assert settings.adapters[0].options["note"] == "[" * 500


def test_an_adapter_option_written_label_colon_key_says_the_dotted_form(pytester: pytest.Pytester) -> None:
    # Issue 42: docs/adapters/interfaces.md wrote mine:max_results=10; it reached the adapter as the key
    # "mine:max_results" and was refused at session start ("does not accept").
    args = ("--lens-adapter=mine=bm25", "--lens-adapter=bm25")
    with pytest.raises(pytest.UsageError) as caught:
        options.read_settings(pytester.parseconfig(*args, "--lens-adapter-option=mine:max_results=10"))
    assert str(caught.value) == (
        "--lens-adapter-option='mine:max_results=10': an option of one adapter is LABEL.KEY=VALUE (mine.max_results=10)"
    )
    settings = options.read_settings(pytester.parseconfig(*args, "--lens-adapter-option=mine.max_results=10"))
    assert [dict(spec.options) for spec in settings.adapters] == [{"max_results": 10}, {}]
    # A colon in a key that is not a label is left alone (an adapter may take such a key).
    settings = options.read_settings(pytester.parseconfig(*args, "--lens-adapter-option=x:y=1"))
    assert dict(settings.adapters[0].options) == {"x:y": 1}
