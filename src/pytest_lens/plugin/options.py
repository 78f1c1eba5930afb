"""Command-line options and ini keys, and turning them into :class:`LensSettings`.

Option strings are constants so tests and docs can import them. Nothing heavy is
imported here: the plugin loads this module on every pytest run.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, overload

import pytest

from pytest_lens.llm.settings import LLMSettings
from pytest_lens.records.settings import AdapterSpec, LensSettings, parse_adapter_spec, parse_option_value

__all__ = [
    "ADAPTER",
    "ADAPTER_OPTION",
    "AGENT",
    "AGENT_MAX_TOKENS",
    "AGENT_MODEL",
    "ALPHA",
    "BASELINE",
    "BUDGET",
    "CALL_TIMEOUT",
    "COMPARE_FAIL",
    "COMPARE_PARTIAL",
    "CONCURRENCY",
    "CONTROLS",
    "DATASET",
    "FAIL_UNDER",
    "GATE_BUDGET",
    "HEADLINE",
    "HTML",
    "JSON",
    "JUDGE",
    "JUDGE_MAX_FAILURES",
    "JUDGE_MAX_TOKENS",
    "JUDGE_MODEL",
    "JUDGE_SHORT_MAX_TOKENS",
    "LLM_API_KEY_ENV",
    "LLM_BASE_URL",
    "LLM_CACHE",
    "LLM_CACHE_MODE",
    "LLM_CONTEXT",
    "LLM_RETRIES",
    "LLM_TIMEOUT",
    "MAX_CONNECTIONS",
    "MAX_DROP",
    "MAX_FAULT_RATE",
    "MAX_NOT_MEASURED",
    "MUTANTS",
    "OPAQUE_REFS",
    "REPEAT",
    "SAVE",
    "SCORING",
    "SEED",
    "STORAGE",
    "STRICT",
    "SUITE",
    "WEIGHTS",
    "add_options",
    "lens_requested",
    "read_settings",
]

ADAPTER = "--lens-adapter"
ADAPTER_OPTION = "--lens-adapter-option"
DATASET = "--lens-dataset"
BUDGET = "--lens-budget"
AGENT = "--lens-agent"
JSON = "--lens-json"
HTML = "--lens-html"
STRICT = "--lens-strict"
WEIGHTS = "--lens-weights"
GATE_BUDGET = "--lens-gate-budget"
CALL_TIMEOUT = "--lens-call-timeout"
OPAQUE_REFS = "--lens-opaque-refs"
SEED = "--lens-seed"
SCORING = "--lens-scoring"
NO_BUILTIN = "--lens-no-builtin"
SUITE = "--lens-suite"
SAVE = "--lens-save"
BASELINE = "--lens-baseline"
STORAGE = "--lens-storage"
FAIL_UNDER = "--lens-fail-under"
COMPARE_FAIL = "--lens-compare-fail"
COMPARE_PARTIAL = "--lens-compare-partial"
ALPHA = "--lens-alpha"
MAX_DROP = "--lens-max-drop"
MAX_FAULT_RATE = "--lens-max-fault-rate"
LLM_BASE_URL = "--lens-llm-base-url"
AGENT_MODEL = "--lens-agent-model"
JUDGE = "--lens-judge"
JUDGE_MODEL = "--lens-judge-model"
LLM_API_KEY_ENV = "--lens-llm-api-key-env"
LLM_CACHE_MODE = "--lens-llm-cache-mode"
LLM_CACHE = "--lens-llm-cache"
JUDGE_MAX_FAILURES = "--lens-judge-max-failures"
LLM_TIMEOUT = "--lens-llm-timeout"
LLM_RETRIES = "--lens-llm-retries"
HEADLINE = "--lens-headline"
CONTROLS = "--lens-controls"
MUTANTS = "--lens-mutants"
AGENT_MAX_TOKENS = "--lens-agent-max-tokens"
JUDGE_MAX_TOKENS = "--lens-judge-max-tokens"
JUDGE_SHORT_MAX_TOKENS = "--lens-judge-short-max-tokens"
LLM_CONTEXT = "--lens-llm-context"
MAX_NOT_MEASURED = "--lens-max-not-measured"
CONCURRENCY = "--lens-concurrency"
MAX_CONNECTIONS = "--lens-max-connections"
REPEAT = "--lens-repeat"


def add_options(parser: pytest.Parser) -> None:
    """Register the ``--lens-*`` options and ``lens_*`` ini keys."""
    group = parser.getgroup("lens", "LENS memory benchmark (pytest-lens)")
    group.addoption(
        ADAPTER,
        action="append",
        default=[],
        metavar="[LABEL=]TARGET",
        help="memory adapter to test: module:Class or a registered name (bm25, null, ...); repeat to compare. Activates pytest-lens.",
    )
    group.addoption(
        ADAPTER_OPTION,
        action="append",
        default=[],
        metavar="[LABEL.]KEY=VALUE",
        help="constructor option for every adapter, or for one adapter when prefixed with its label; "
        "values are parsed as JSON when possible.",
    )
    group.addoption(
        DATASET,
        action="append",
        default=[],
        metavar="PATH",
        help="LENS JSON file or directory of them (repeatable; default: the bundled datasets).",
    )
    group.addoption(
        BUDGET,
        action="append",
        default=[],
        metavar="NAME",
        help="agent budget: 4k, 8k, 16k (default), 32k or results=N,turns=N,calls=N (repeatable).",
    )
    group.addoption(AGENT, default=None, metavar="NAME", help="answering agent (default: offline, deterministic, no LLM).")
    group.addoption(JSON, default=None, metavar="PATH", help="write the run artifact (per-question results and summary) as JSON.")
    group.addoption(STRICT, action="store_true", default=None, help="treat dataset defects (e.g. evidence after its checkpoint) as errors.")
    group.addoption(WEIGHTS, action="append", default=[], metavar="METRIC=W,...", help="override composite weights.")
    group.addoption(
        SCORING,
        choices=("paper", "v2"),
        default=None,
        help="composite preset: paper (LENS paper's weights, default) or v2 (LENS V2: judged fact recall, evidence support, "
        "citation validity); --lens-weights apply on top.",
    )
    parser.addini("lens_scoring", default="paper", help="composite preset, as for --lens-scoring: paper or v2.")
    group.addoption(GATE_BUDGET, action="store_true", default=None, help="also gate the composite on budget_compliance < 0.5.")
    group.addoption(CALL_TIMEOUT, type=float, default=None, metavar="SECONDS", help="per adapter call timeout (default 120; 0 disables).")
    group.addoption(
        OPAQUE_REFS,
        choices=("auto", "always", "never"),
        default=None,
        help="show agents opaque ref aliases: auto (when ids leak labels), always, never.",
    )
    group.addoption(SEED, type=int, default=None, metavar="N", help="seed for everything random in scoring (default 42).")
    group.addoption(
        NO_BUILTIN,
        action="store_true",
        default=None,
        help="do not add the built-in LENS tests; run only test modules that use the lens fixtures.",
    )
    group.addoption(
        SUITE,
        action="append",
        default=[],
        metavar="NAME",
        help="benchmark suite to run: lens (default), meme, mab (repeatable). With --lens-dataset, "
        "keeps only the datasets of these suites (a dataset file names its suite).",
    )
    group.addoption(SAVE, default=None, metavar="NAME", help="save this run as .lens/<machine>/NNNN_NAME.json (see --lens-storage).")
    group.addoption(
        BASELINE,
        default=None,
        metavar="NAME|PATH",
        help="compare with a saved run (by name, NNNN or NNNN_NAME) or a --lens-json file, paired by question.",
    )
    group.addoption(STORAGE, default=None, metavar="DIR", help="directory of saved runs (default: .lens in the rootdir).")
    group.addoption(FAIL_UNDER, type=float, default=None, metavar="X", help="fail when an adapter headline is below X.")
    group.addoption(
        COMPARE_FAIL,
        action="store_true",
        default=None,
        help="fail on a significant regression vs --lens-baseline (one-sided Wilcoxon, Holm, --lens-alpha) or a drop over --lens-max-drop.",
    )
    group.addoption(
        COMPARE_PARTIAL,
        action="store_true",
        default=None,
        help="with --lens-compare-fail: gate on the questions both runs have, even when either run has questions the other lacks.",
    )
    group.addoption(ALPHA, type=float, default=None, metavar="P", help="significance level after Holm correction (default 0.05).")
    group.addoption(
        MAX_DROP, type=float, default=None, metavar="X", help="with --lens-compare-fail: also fail when a headline falls by more than X."
    )
    group.addoption(
        MAX_FAULT_RATE,
        default=None,
        metavar="RATE",
        help="fail when an adapter faulted (raised, returned a wrong value, hung) on more than this fraction of its questions "
        "(default 0.05, or e.g. 10%%); its scores are then marked not comparable.",
    )

    group.addoption(
        HEADLINE,
        choices=("auto", "retrieval", "composite"),
        default=None,
        help="the score gates, CIs, paired tests and baselines are about: retrieval (first-search nDCG@10 and MRR), "
        "composite (the paper's), or auto (default: composite with --lens-judge, else retrieval).",
    )

    _add_llm_options(group)
    _add_report_options(group, parser)
    group.addoption(
        CONTROLS,
        action="store_true",
        default=None,
        help="add the null and random control memories and mutants of every adapter (degraded copies), "
        "and print the sensitivity table: which degradations this run can detect.",
    )
    group.addoption(
        MUTANTS,
        action="append",
        default=[],
        metavar="NAME,...",
        help="which mutants --lens-controls adds: top2, reversed, shuffled, half-random, stale, cut200 (default all; none for none).",
    )
    _add_concurrency_options(group, parser)
    _add_repeat_option(group, parser)

    parser.addini("lens_adapters", type="linelist", default=[], help="adapters, as for --lens-adapter (activates pytest-lens).")
    parser.addini("lens_adapter_options", type="linelist", default=[], help="adapter options, as for --lens-adapter-option.")
    parser.addini("lens_datasets", type="paths", default=[], help="dataset files or directories, relative to the ini file.")
    parser.addini("lens_budgets", type="linelist", default=[], help="budgets, as for --lens-budget.")
    parser.addini("lens_agent", default="offline", help="answering agent.")
    parser.addini("lens_json", default="", help="path for the run artifact.")
    parser.addini("lens_strict", type="bool", default=False, help="dataset defects are errors.")
    parser.addini("lens_weights", type="linelist", default=[], help="composite weight overrides, METRIC=W.")
    parser.addini("lens_gate_budget", type="bool", default=False, help="gate on budget_compliance too.")
    parser.addini("lens_call_timeout", default="120", help="per adapter call timeout in seconds (0 disables).")
    parser.addini("lens_opaque_refs", default="auto", help="auto, always or never.")
    parser.addini("lens_seed", default="42", help="seed for scoring randomness.")
    parser.addini("lens_suites", type="linelist", default=[], help="suites, as for --lens-suite.")
    parser.addini("lens_builtin_tests", type="bool", default=True, help="add the built-in LENS tests.")
    parser.addini("lens_baseline", default="", help="saved run or artifact to compare with, as for --lens-baseline.")
    parser.addini("lens_storage", default=".lens", help="directory of saved runs, relative to the rootdir.")
    parser.addini("lens_fail_under", default="", help="minimum adapter headline, as for --lens-fail-under.")
    parser.addini("lens_compare_fail", type="bool", default=False, help="fail on a regression vs the baseline.")
    parser.addini("lens_compare_partial", type="bool", default=False, help="a baseline comparison may leave out questions.")
    parser.addini("lens_alpha", default="0.05", help="significance level after Holm correction.")
    parser.addini("lens_max_drop", default="", help="largest tolerated headline drop vs the baseline.")
    parser.addini("lens_max_fault_rate", default="0.05", help="fail above this fraction of an adapter's questions with faults.")
    parser.addini("lens_headline", default="auto", help="auto, retrieval or composite, as for --lens-headline.")
    parser.addini("lens_llm_base_url", default="", help="OpenAI-compatible endpoint for the LLM agent, judge and adapters.")
    parser.addini("lens_agent_model", default="", help="model of the LLM agent (and of the naive baseline).")
    parser.addini("lens_judge", default="none", help="none, offline or llm.")
    parser.addini("lens_judge_model", default="", help="model of the LLM judge (default: the agent model).")
    parser.addini("lens_llm_api_key_env", default="OPENAI_API_KEY", help="environment variable holding the API key.")
    parser.addini("lens_llm_cache_mode", default="record", help="record, replay or off.")
    parser.addini("lens_llm_cache", default="", help="LLM request cache file (default .lens/llm-cache.sqlite under the root).")
    parser.addini("lens_judge_max_failures", default="0.05", help="flag the run above this fraction of judge-failed questions.")
    parser.addini("lens_llm_timeout", default="120", help="seconds per LLM request.")
    parser.addini("lens_llm_retries", default="4", help="retries of a 429/5xx/timed-out LLM request.")
    parser.addini("lens_controls", type="bool", default=False, help="add controls and mutants, as for --lens-controls.")
    parser.addini("lens_mutants", type="linelist", default=[], help="mutants --lens-controls adds, as for --lens-mutants.")
    parser.addini("lens_agent_max_tokens", default="", help="max_tokens of each agent request and the naive baseline's answer.")
    parser.addini("lens_judge_max_tokens", default="", help="max_tokens of judge requests answered with a reason (JSON verdicts).")
    parser.addini("lens_judge_short_max_tokens", default="", help="max_tokens of one-word judge verdicts (A, B or TIE).")
    parser.addini("lens_llm_context", default="", help="the answering model's context window in tokens (sizes the naive baseline).")
    parser.addini("lens_max_not_measured", default="0.05", help="fail above this fraction of questions not measured.")


def _add_llm_options(group: pytest.OptionGroup) -> None:
    from pytest_lens.llm.settings import CACHE_MODES, JUDGE_KINDS

    group.addoption(LLM_BASE_URL, default=None, metavar="URL", help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, OpenAI).")
    group.addoption(AGENT_MODEL, default=None, metavar="NAME", help="model of --lens-agent=llm (and of the naive baseline).")
    group.addoption(JUDGE, choices=JUDGE_KINDS, default=None, help="judge for tier-2/3 metrics: none (default), offline, llm.")
    group.addoption(JUDGE_MODEL, default=None, metavar="NAME", help="model of --lens-judge=llm (default: the agent model).")
    group.addoption(LLM_API_KEY_ENV, default=None, metavar="VAR", help="environment variable holding the API key (default OPENAI_API_KEY).")
    group.addoption(
        LLM_CACHE_MODE,
        choices=CACHE_MODES,
        default=None,
        help="LLM request cache: record (default: reuse, add new), replay (cache only; a miss is an error), off.",
    )
    group.addoption(LLM_CACHE, default=None, metavar="PATH", help="LLM request cache file (default .lens/llm-cache.sqlite).")
    group.addoption(
        JUDGE_MAX_FAILURES,
        default=None,
        metavar="RATE",
        help="flag the run when more than RATE (e.g. 0.05 or 5%%) of an adapter's questions had a judge failure.",
    )
    group.addoption(LLM_TIMEOUT, type=float, default=None, metavar="SECONDS", help="timeout per LLM request (default 120).")
    group.addoption(LLM_RETRIES, type=int, default=None, metavar="N", help="retries of a 429/5xx/timed-out LLM request (default 4).")
    from pytest_lens.llm.settings import DEFAULT_AGENT_MAX_TOKENS, DEFAULT_JUDGE_MAX_TOKENS, DEFAULT_JUDGE_SHORT_MAX_TOKENS

    group.addoption(
        AGENT_MAX_TOKENS,
        default=None,
        metavar="N",
        help=f"max_tokens of each agent request and of the naive baseline's answer (default {DEFAULT_AGENT_MAX_TOKENS}).",
    )
    group.addoption(
        JUDGE_MAX_TOKENS,
        default=None,
        metavar="N",
        help=f"max_tokens of judge replies with a reason: MEME's and LongMemEval's JSON verdicts (default {DEFAULT_JUDGE_MAX_TOKENS}).",
    )
    group.addoption(
        JUDGE_SHORT_MAX_TOKENS,
        default=None,
        metavar="N",
        help=f"max_tokens of one-word judge verdicts: A, B or TIE (default {DEFAULT_JUDGE_SHORT_MAX_TOKENS}; more for reasoning models).",
    )
    group.addoption(
        LLM_CONTEXT,
        default=None,
        metavar="TOKENS",
        help="the answering model's context window in tokens: the naive baseline sends no more than fits (with a safety margin).",
    )
    group.addoption(
        MAX_NOT_MEASURED,
        default=None,
        metavar="RATE",
        help="fail the run when more than RATE (e.g. 0.05 or 5%%) of an adapter's questions could not be measured "
        "(the agent could not reach its model).",
    )


def _add_report_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        HTML,
        default=None,
        metavar="PATH",
        help="write a self-contained HTML report: plots, tables and every question's transcript (needs pytest-lens[html]).",
    )
    parser.addini("lens_html", default="", help="path for the HTML report, as for --lens-html.")


def _html_path(config: pytest.Config) -> Path | None:
    """``--lens-html`` (or ``lens_html``); a usage error up front when the report's libraries are missing."""
    value = config.getoption(HTML) or config.getini("lens_html") or None
    if value is None:
        return None
    from importlib.util import find_spec

    missing = [name for name in ("markupsafe",) if find_spec(name) is None]
    if missing:
        raise pytest.UsageError(f"{HTML} needs {' and '.join(missing)}: pip install 'pytest-lens[html]'")
    return Path(value)


def _add_concurrency_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        CONCURRENCY,
        type=int,
        default=None,
        metavar="N",
        help="questions answered at once per process (default: 8 for --lens-agent=llm, 1 for the offline agent).",
    )
    group.addoption(
        MAX_CONNECTIONS,
        type=int,
        default=None,
        metavar="N",
        help="most LLM requests in flight per process; adapts below it on 429/503 answers (default 16).",
    )
    parser.addini("lens_concurrency", default="", help="questions answered at once per process, as for --lens-concurrency.")
    parser.addini("lens_max_connections", default="16", help="most LLM requests in flight per process.")


def _positive_int(config: pytest.Config, option: str, ini: str) -> int | None:
    number = _number(config, option, ini, 1, float("inf"), whole=True)
    return None if number is None else int(number)


def _add_repeat_option(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        REPEAT,
        type=int,
        default=None,
        metavar="M",
        help="answer each question M times (one test each, distinct seeds); statistics use per-question means (default 1).",
    )
    parser.addini("lens_repeat", default="1", help="answers per question, as for --lens-repeat.")


def _repeat(config: pytest.Config) -> int:
    raw = _pick(config, REPEAT, "lens_repeat")
    try:
        repeat = int(raw)
    except (TypeError, ValueError):
        repeat = 0
    if repeat < 1:
        raise pytest.UsageError(f"{REPEAT} must be a whole number of answers per question, at least 1; got {raw!r}")
    return repeat


def lens_requested(config: pytest.Config) -> bool:
    """pytest-lens does anything only when an adapter is configured."""
    return bool(config.getoption(ADAPTER) or config.getini("lens_adapters"))


def _pick(config: pytest.Config, option: str, ini: str) -> Any:
    value = config.getoption(option)
    return config.getini(ini) if value is None else value


def read_settings(config: pytest.Config) -> LensSettings:
    """Read every option once; :class:`pytest.UsageError` names the option at fault."""
    adapter_texts = list(config.getoption(ADAPTER)) or list(config.getini("lens_adapters"))
    specs = _adapter_specs(adapter_texts, list(config.getini("lens_adapter_options")) + list(config.getoption(ADAPTER_OPTION)))

    datasets = tuple(Path(p) for p in config.getoption(DATASET)) or tuple(Path(p) for p in config.getini("lens_datasets"))
    budgets = tuple(config.getoption(BUDGET)) or tuple(config.getini("lens_budgets")) or ("16k",)
    from pytest_lens.records.budget import parse_budget

    for budget in budgets:
        try:
            parse_budget(budget)
        except ValueError as exc:
            raise pytest.UsageError(f"{BUDGET}: {exc}") from None

    weights_entries = list(config.getini("lens_weights")) + list(config.getoption(WEIGHTS))
    from pytest_lens.scoring.composite import SCORING_PRESETS, parse_weights, preset_weights

    scoring = _pick(config, SCORING, "lens_scoring")
    if scoring not in SCORING_PRESETS:
        raise pytest.UsageError(f"lens_scoring must be one of {', '.join(SCORING_PRESETS)}, got {scoring!r}")
    try:
        weights = parse_weights(weights_entries, preset_weights(scoring))
    except ValueError as exc:
        raise pytest.UsageError(f"{WEIGHTS}: {exc}") from None

    timeout = _pick(config, CALL_TIMEOUT, "lens_call_timeout")
    seed = _pick(config, SEED, "lens_seed")
    try:
        timeout_s = float(timeout)
        seed_value = int(seed)
    except ValueError:
        raise pytest.UsageError(f"{CALL_TIMEOUT} must be a number of seconds and {SEED} an integer") from None
    opaque = _pick(config, OPAQUE_REFS, "lens_opaque_refs")
    if opaque not in ("auto", "always", "never"):
        raise pytest.UsageError(f"lens_opaque_refs must be auto, always or never, got {opaque!r}")
    headline = _pick(config, HEADLINE, "lens_headline")
    if headline not in ("auto", "retrieval", "composite"):
        raise pytest.UsageError(f"lens_headline must be auto, retrieval or composite, got {headline!r}")
    json_path = config.getoption(JSON) or config.getini("lens_json") or None
    no_builtin = config.getoption(NO_BUILTIN)
    gating = _gate_settings(config)
    return LensSettings(
        adapters=specs,
        datasets=datasets,
        budgets=budgets,
        agent=_pick(config, AGENT, "lens_agent"),
        json_path=Path(json_path) if json_path else None,
        html_path=_html_path(config),
        strict=bool(_pick(config, STRICT, "lens_strict")),
        weights=weights,
        scoring=scoring,
        gate_budget=bool(_pick(config, GATE_BUDGET, "lens_gate_budget")),
        call_timeout=timeout_s if timeout_s > 0 else None,
        opaque_refs=opaque,
        seed=seed_value,
        # --lens-conformance replaces the built-in LENS questions with the conformance suite.
        builtin_tests=not no_builtin and bool(config.getini("lens_builtin_tests")) and not config.getoption("--lens-conformance", False),
        rootdir=Path(config.rootpath),
        invocation_dir=Path(config.invocation_params.dir),
        suites=tuple(dict.fromkeys(config.getoption(SUITE) or config.getini("lens_suites"))),
        llm=replace(_llm_settings(config), max_connections=_positive_int(config, MAX_CONNECTIONS, "lens_max_connections") or 16),
        concurrency=_positive_int(config, CONCURRENCY, "lens_concurrency"),
        headline=headline,
        repeat=_repeat(config),
        **gating,
        **_control_settings(config),
    )


def _control_settings(config: pytest.Config) -> dict[str, Any]:
    """``--lens-controls`` and ``--lens-mutants`` (checked against the known mutants)."""
    controls = bool(_pick(config, CONTROLS, "lens_controls"))
    entries = list(config.getoption(MUTANTS)) or list(config.getini("lens_mutants"))
    names = [name.strip() for entry in entries for name in entry.split(",") if name.strip()]
    if not names:
        return {"controls": controls, "mutants": None}
    if not controls:
        raise pytest.UsageError(f"{MUTANTS} chooses the mutants {CONTROLS} adds: add {CONTROLS}")
    if names == ["none"]:
        return {"controls": True, "mutants": ()}
    from pytest_lens.controls.plan import mutant_names

    try:
        return {"controls": True, "mutants": tuple(mutant_names(names))}
    except ValueError as exc:
        raise pytest.UsageError(f"{MUTANTS}: {exc}") from None


def _llm_settings(config: pytest.Config) -> LLMSettings:
    from pytest_lens.llm.settings import (
        CACHE_MODES,
        DEFAULT_AGENT_MAX_TOKENS,
        DEFAULT_CACHE_PATH,
        DEFAULT_JUDGE_MAX_TOKENS,
        DEFAULT_JUDGE_SHORT_MAX_TOKENS,
        JUDGE_KINDS,
    )

    judge = _pick(config, JUDGE, "lens_judge")
    if judge not in JUDGE_KINDS:
        raise pytest.UsageError(f"lens_judge must be one of {', '.join(JUDGE_KINDS)}, got {judge!r}")
    cache_mode = _pick(config, LLM_CACHE_MODE, "lens_llm_cache_mode")
    if cache_mode not in CACHE_MODES:
        raise pytest.UsageError(f"lens_llm_cache_mode must be one of {', '.join(CACHE_MODES)}, got {cache_mode!r}")
    rate = _rate(config, JUDGE_MAX_FAILURES, "lens_judge_max_failures")
    try:
        timeout = float(_pick(config, LLM_TIMEOUT, "lens_llm_timeout"))
        retries = int(_pick(config, LLM_RETRIES, "lens_llm_retries"))
    except ValueError:
        raise pytest.UsageError(f"{LLM_TIMEOUT} must be a number of seconds and {LLM_RETRIES} an integer") from None
    if timeout <= 0 or retries < 0:
        raise pytest.UsageError(f"{LLM_TIMEOUT} must be positive and {LLM_RETRIES} at least 0")
    cache_path = _pick(config, LLM_CACHE, "lens_llm_cache")
    return LLMSettings(
        base_url=_pick(config, LLM_BASE_URL, "lens_llm_base_url") or None,
        agent_model=_pick(config, AGENT_MODEL, "lens_agent_model") or None,
        judge_model=_pick(config, JUDGE_MODEL, "lens_judge_model") or None,
        api_key_env=_pick(config, LLM_API_KEY_ENV, "lens_llm_api_key_env") or "OPENAI_API_KEY",
        judge=judge,
        cache_mode=cache_mode,
        cache_path=Path(cache_path) if cache_path else DEFAULT_CACHE_PATH,
        timeout_s=timeout,
        retries=retries,
        judge_max_failure_rate=rate,
        agent_max_tokens=_tokens(config, AGENT_MAX_TOKENS, "lens_agent_max_tokens", DEFAULT_AGENT_MAX_TOKENS),
        judge_max_tokens=_tokens(config, JUDGE_MAX_TOKENS, "lens_judge_max_tokens", DEFAULT_JUDGE_MAX_TOKENS),
        judge_short_max_tokens=_tokens(config, JUDGE_SHORT_MAX_TOKENS, "lens_judge_short_max_tokens", DEFAULT_JUDGE_SHORT_MAX_TOKENS),
        context_tokens=_tokens(config, LLM_CONTEXT, "lens_llm_context", None),
        max_not_measured_rate=_rate(config, MAX_NOT_MEASURED, "lens_max_not_measured"),
    )


def _rate(config: pytest.Config, option: str, ini: str) -> float:
    """A fraction between 0 and 1, written as ``0.05`` or ``5%``."""
    raw = str(_pick(config, option, ini)).strip()
    try:
        rate = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise pytest.UsageError(f"{option} must be a fraction between 0 and 1 (or a percentage like 5%), got {raw!r}")
    return rate


@overload
def _tokens(config: pytest.Config, option: str, ini: str, default: int) -> int: ...
@overload
def _tokens(config: pytest.Config, option: str, ini: str, default: None) -> int | None: ...
def _tokens(config: pytest.Config, option: str, ini: str, default: int | None) -> int | None:
    """A positive token count (``4096``, ``8k``), or ``default`` when the option and ini key are unset."""
    raw = str(_pick(config, option, ini) or "").strip()
    if not raw:
        return default
    text = raw.lower()
    try:
        count = int(float(text[:-1]) * 1024) if text.endswith("k") else int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"{option} (ini {ini}) must be a positive number of tokens (e.g. 512 or 8k), got {raw!r}")
    return count


def _number(config: pytest.Config, option: str, ini: str, low: float, high: float, *, whole: bool = False) -> float | None:
    value = _pick(config, option, ini)
    if value in (None, ""):
        return None
    try:
        number = float(int(value) if whole else value)
    except ValueError:
        raise pytest.UsageError(f"{option} (ini {ini}) must be a {'whole ' if whole else ''}number, got {value!r}") from None
    if not low <= number <= high:
        bounds = f"at least {low:g}" if high == float("inf") else f"between {low:g} and {high:g}"
        raise pytest.UsageError(f"{option} must be {bounds}, got {number:g}")
    return number


def _gate_settings(config: pytest.Config) -> dict[str, Any]:
    """Saving, baseline and gate options (``--lens-save`` ... ``--lens-max-drop``), checked together."""
    baseline = config.getoption(BASELINE) or config.getini("lens_baseline") or None
    compare_fail = bool(_pick(config, COMPARE_FAIL, "lens_compare_fail"))
    if compare_fail and not baseline:
        raise pytest.UsageError(f"{COMPARE_FAIL} needs a baseline: add {BASELINE}=NAME|PATH (a run saved with {SAVE}=NAME)")
    alpha = _number(config, ALPHA, "lens_alpha", 0.0, 1.0)
    if alpha is not None and not 0 < alpha < 1:
        raise pytest.UsageError(f"{ALPHA} must lie strictly between 0 and 1, got {alpha:g}")
    save = config.getoption(SAVE)
    if save is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", save):
        raise pytest.UsageError(
            f"{SAVE}={save!r}: use letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. {SAVE}=main)"
        )
    return {
        "save_name": save,
        "baseline": baseline,
        "storage": Path(config.getoption(STORAGE) or config.getini("lens_storage") or ".lens"),
        "fail_under": _number(config, FAIL_UNDER, "lens_fail_under", 0.0, 1.0),
        "compare_fail": compare_fail,
        "compare_partial": bool(_pick(config, COMPARE_PARTIAL, "lens_compare_partial")),
        "alpha": 0.05 if alpha is None else alpha,
        "max_drop": _number(config, MAX_DROP, "lens_max_drop", 0.0, 1.0),
        "max_fault_rate": _rate(config, MAX_FAULT_RATE, "lens_max_fault_rate"),
    }


def _adapter_specs(texts: list[str], option_texts: list[str]) -> tuple[AdapterSpec, ...]:
    parsed: list[tuple[str, str]] = []
    for text in texts:
        label, target = parse_adapter_spec(text)
        if not target:
            raise pytest.UsageError(f"{ADAPTER}={text!r}: empty adapter")
        parsed.append((label or _default_label(target), target))
    labels = [label for label, _ in parsed]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise pytest.UsageError(
            f"{ADAPTER}: adapter label {duplicates[0]!r} is used twice; name them apart with LABEL=TARGET (e.g. a={duplicates[0]})"
        )
    options: dict[str, dict[str, Any]] = {label: {} for label in labels}
    for text in option_texts:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise pytest.UsageError(f"{ADAPTER_OPTION}={text!r}: expected [LABEL.]KEY=VALUE")
        scope_label, dot, name = key.rpartition(".")
        value = parse_option_value(raw)
        if dot and scope_label in options:
            options[scope_label][name] = value
        elif dot:
            raise pytest.UsageError(f"{ADAPTER_OPTION}={text!r}: no adapter labelled {scope_label!r} (labels: {', '.join(labels)})")
        else:
            for label in labels:
                options[label][key] = value
    return tuple(AdapterSpec(label, target, options[label]) for label, target in parsed)


def _default_label(target: str) -> str:
    """A registered name labels itself; ``pkg.mod:Class`` is labelled ``Class``."""
    return target.rpartition(":")[2].rpartition(".")[2] if ":" in target else target
