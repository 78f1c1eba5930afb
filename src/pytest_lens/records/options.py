"""Every ``--lens-*`` option in one table: flag, ini key, parser, help, and the settings field it fills.

One row per option, written once. The plugin registers the rows with pytest and reads them into
:class:`~pytest_lens.records.settings.LensSettings`; ``lens compare`` checks its ``--alpha``,
``--max-drop`` and ``--seed`` with the same parsers, so a bad value reads the same in both.
Defaults are the settings dataclasses' own (:data:`DEFAULTS`); help texts quote them from there.

Standard library only and free of pytest: the plugin loads this module on every pytest run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_lens.llm.settings import CACHE_MODES, JUDGE_KINDS
from pytest_lens.records.settings import AdapterSpec, LensSettings

__all__ = [
    "ACCEPT_UNLIKE",
    "ADAPTER",
    "ADAPTER_OPTION",
    "AGENT",
    "AGENT_MAX_TOKENS",
    "AGENT_MODEL",
    "ALPHA",
    "BASELINE",
    "BOOTSTRAP",
    "BUDGET",
    "CALL_TIMEOUT",
    "COMPARE_FAIL",
    "COMPARE_PARTIAL",
    "CONCURRENCY",
    "CONTROLS",
    "DATASET",
    "DEFAULTS",
    "FAIL_UNDER",
    "GATE_BUDGET",
    "HEADLINE",
    "HTML",
    "JSON",
    "JUDGE",
    "JUDGE_BASE_URL",
    "JUDGE_CHECK",
    "JUDGE_CHECK_MODEL",
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
    "MARGIN",
    "MAX_CONNECTIONS",
    "MAX_DROP",
    "MAX_FAULT_RATE",
    "MAX_NOT_MEASURED",
    "MAX_REPEAT",
    "MAX_SHARDS",
    "MIN_ALPHA",
    "MUTANTS",
    "NO_BUILTIN",
    "OPAQUE_REFS",
    "OPTIONS",
    "REPEAT",
    "RERUN",
    "RESUME",
    "SAVE",
    "SCORING",
    "SEED",
    "SHARD",
    "SHARD_DURATIONS",
    "STORAGE",
    "STRICT",
    "SUITE",
    "WEIGHTS",
    "Option",
    "option",
    "parse_alpha",
    "parse_fraction",
    "parse_recorded",
    "parse_seed",
    "parse_shard",
]

#: How the command line takes the option (argparse's ``action``): a value, an on/off switch, or a repeatable value.
Action = Literal["store", "store_true", "store_false", "append"]
#: How the ini file holds it (pytest's ``addini`` type).
IniType = Literal["string", "bool", "linelist", "paths"]

#: The settings of a run given no option at all: the one source of every default.
DEFAULTS = LensSettings(adapters=())


@dataclass(frozen=True)
class Option:
    """One ``--lens-*`` option and its ``lens_*`` ini key.

    ``parse`` turns one text value (one entry of a repeatable option) into the value the settings hold,
    or raises :class:`ValueError` saying what is wrong with it; the caller names the option. A value given
    on the command line wins over the ini key; a repeatable option's entries ``extend`` the ini key's
    (ini first) or replace them. ``field`` is the settings field the value fills (``llm.NAME`` for
    :class:`~pytest_lens.llm.settings.LLMSettings`), or ``None`` where several options fill one field
    together (the reader says how). An option given nowhere keeps the field's dataclass default.
    """

    flag: str
    ini: str | None
    help: str
    ini_help: str = ""
    field: str | None = None
    parse: Callable[[str], Any] = str
    action: Action = "store"
    ini_type: IniType | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    extend: bool = False

    @property
    def ini_kind(self) -> IniType:
        """The ini key's type: as given, else what the command-line action implies."""
        if self.ini_type is not None:
            return self.ini_type
        if self.action == "append":
            return "linelist"
        return "bool" if self.switch else "string"

    @property
    def repeatable(self) -> bool:
        """The option may be given several times and holds a tuple."""
        return self.action == "append"

    @property
    def switch(self) -> bool:
        """An on/off option: no value on the command line, a bool in the ini file."""
        return self.action in ("store_true", "store_false")


# -- parsers: one text value in, the settings' value out; ValueError says what is wrong --------------


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_fraction(text: str) -> float:
    """A number between 0 and 1 (``--lens-fail-under``, ``--lens-max-drop``)."""
    number = _number(text)
    if number is None or not 0.0 <= number <= 1.0:
        raise ValueError(f"must be a number between 0 and 1, got {text!r}")
    return number


#: The smallest significance level (or power) taken: below it ``1 - alpha`` rounds to 1 in floating point, where
#: the normal quantile of an interval or a power calculation does not exist (``--lens-alpha=1e-300`` failed the run
#: after its last question). Five sigma is 3e-7.
MIN_ALPHA = 1e-9


def parse_alpha(text: str) -> float:
    """A significance level (or a power), strictly between 0 and 1, and from :data:`MIN_ALPHA` to ``1 - MIN_ALPHA``."""
    number = _number(text)
    if number is None or not 0.0 < number < 1.0:
        raise ValueError(f"must lie strictly between 0 and 1, got {text!r}")
    if not MIN_ALPHA <= number <= 1 - MIN_ALPHA:
        raise ValueError(
            f"must lie between {MIN_ALPHA:g} and 1 - {MIN_ALPHA:g} (the statistics cannot take a level closer to 0 or 1), got {text!r}"
        )
    return number


def _rate(text: str) -> float:
    """A fraction between 0 and 1, written as ``0.05`` or ``5%``."""
    raw = text.strip()
    if raw.endswith("%"):
        percent = _number(raw[:-1])
        rate = None if percent is None else percent / 100
    else:
        rate = _number(raw)
    if rate is None or not 0.0 <= rate <= 1.0:
        raise ValueError(f"must be a fraction between 0 and 1 (or a percentage like 5%), got {text!r}")
    return rate


def _whole(low: int | None = None, unit: str = "", high: int | None = None) -> Callable[[str], int]:
    """A whole number (of ``unit``), at least ``low`` and at most ``high``."""
    bounds = f", from {low} to {high:,}" if low is not None and high is not None else f", at least {low}" if low is not None else ""
    what = f"a whole number{f' of {unit}' if unit else ''}{bounds}"

    def parse(text: str) -> int:
        try:
            number: int | None = int(text.strip())
        except ValueError:
            number = None
        if number is None or (low is not None and number < low) or (high is not None and number > high):
            raise ValueError(f"must be {what}; got {text!r}")
        return number

    return parse


def parse_seed(text: str) -> int:
    """The seed of everything random in scoring: any whole number."""
    return _whole()(text)


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N``: shard I (counted from 1) of N, N at most :data:`MAX_SHARDS`."""
    index, sep, total = text.strip().partition("/")
    try:
        shard = (int(index), int(total))
    except ValueError:
        shard = (0, 0)
    shown = text if len(text) <= 40 else text[:37] + "..."
    if not sep or not 1 <= shard[0] <= shard[1]:
        raise ValueError(f"must be I/N with 1 <= I <= N (e.g. 2/4), got {shown!r}")
    if shard[1] > MAX_SHARDS:
        raise ValueError(f"must be I/N with N at most {MAX_SHARDS:,} (a shard cannot split a stream group), got {shown!r}")
    return shard


def _tokens(text: str) -> int:
    """A positive token count: ``4096`` or ``8k``."""
    raw = text.strip().lower()
    try:
        count = int(float(raw[:-1]) * 1024) if raw.endswith("k") else int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"must be a positive number of tokens (e.g. 512 or 8k), got {text!r}")
    return count


def _call_timeout(text: str) -> float | None:
    """Seconds per adapter call; 0 (or less) disables the timeout."""
    seconds = _number(text)
    if seconds is None:
        raise ValueError(f"must be a number of seconds (0 disables), got {text!r}")
    return seconds if seconds > 0 else None


def _positive_seconds(text: str) -> float:
    seconds = _number(text)
    if seconds is None or not seconds > 0:
        raise ValueError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {text!r}")
        return text

    return parse


def _budget(text: str) -> str:
    """A budget preset or ``results=N,...`` (checked now, built per question)."""
    from pytest_lens.records.budget import parse_budget  # the budget records import pydantic: not at start-up

    parse_budget(text)
    return text


def _save_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text):
        raise ValueError(f"{text!r}: use letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. {SAVE}=main)")
    return text


def _names(text: str) -> tuple[str, ...]:
    """``a,b`` -> ``("a", "b")``."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _accepted(text: str) -> tuple[str, ...]:
    """``--lens-accept-unlike``'s names, checked against the card's refusing fields."""
    from pytest_lens.records.card import parse_accepted  # pydantic: only when the option is given

    return parse_accepted(text)


def _default(value: object) -> str:
    """A default as help texts show it: ``120`` for 120.0."""
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- the table ------------------------------------------------------------------------------------

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
ACCEPT_UNLIKE = "--lens-accept-unlike"
ALPHA = "--lens-alpha"
MAX_DROP = "--lens-max-drop"
MARGIN = "--lens-margin"
BOOTSTRAP = "--lens-bootstrap"
MAX_FAULT_RATE = "--lens-max-fault-rate"
LLM_BASE_URL = "--lens-llm-base-url"
AGENT_MODEL = "--lens-agent-model"
JUDGE = "--lens-judge"
JUDGE_MODEL = "--lens-judge-model"
JUDGE_BASE_URL = "--lens-judge-base-url"
LLM_API_KEY_ENV = "--lens-llm-api-key-env"
LLM_CACHE_MODE = "--lens-llm-cache-mode"
LLM_CACHE = "--lens-llm-cache"
JUDGE_MAX_FAILURES = "--lens-judge-max-failures"
JUDGE_CHECK = "--lens-judge-check"
JUDGE_CHECK_MODEL = "--lens-judge-check-model"
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
#: The most answers per question ``--lens-repeat`` takes: each is a test item, and ten million of them exhaust memory.
MAX_REPEAT = 1_000
SHARD = "--lens-shard"
#: The most shards ``--lens-shard`` splits a run into: past the run's stream groups a shard owns nothing, and a CI
#: matrix holds a few hundred jobs.
MAX_SHARDS = 10_000
SHARD_DURATIONS = "--lens-shard-durations"
RESUME = "--lens-resume"
RERUN = "--lens-rerun"

_LLM = DEFAULTS.llm
_SCORING_CHOICES = ("paper", "v2")
_OPAQUE_CHOICES = ("auto", "always", "never")
_HEADLINE_CHOICES = ("auto", "retrieval", "composite")
_RERUN_CHOICES = ("not-measured", "faults")
_BOOTSTRAP_CHOICES = ("auto", "clustered", "two-stage", "plain")

#: In ``pytest --help`` order. Help texts are argparse's (``%%`` is a percent sign).
OPTIONS: tuple[Option, ...] = (
    Option(
        ADAPTER,
        "lens_adapters",
        "memory adapter to test: module:Class or a registered name (bm25, null, ...); repeat to compare. Activates pytest-lens.",
        "adapters, as for --lens-adapter (activates pytest-lens).",
        action="append",
        metavar="[LABEL=]TARGET",
    ),
    Option(
        ADAPTER_OPTION,
        "lens_adapter_options",
        "constructor option for every adapter, or for one adapter when prefixed with its label; values are parsed as JSON when possible.",
        "adapter options, as for --lens-adapter-option.",
        action="append",
        metavar="[LABEL.]KEY=VALUE",
        extend=True,
    ),
    Option(
        DATASET,
        "lens_datasets",
        "LENS JSON file or directory of them (repeatable; default: the bundled datasets).",
        "dataset files or directories, relative to the ini file.",
        field="datasets",
        parse=Path,
        action="append",
        ini_type="paths",
        metavar="PATH",
    ),
    Option(
        BUDGET,
        "lens_budgets",
        "agent budget: 4k, 8k, 16k (default), 32k or results=N,turns=N,calls=N (repeatable).",
        "budgets, as for --lens-budget.",
        field="budgets",
        parse=_budget,
        action="append",
        metavar="NAME",
    ),
    Option(
        AGENT, "lens_agent", "answering agent (default: offline, deterministic, no LLM).", "answering agent.", field="agent", metavar="NAME"
    ),
    Option(
        JSON,
        "lens_json",
        "write the run artifact: the run document (summaries, statistics, verdict) at PATH and its per-question rows "
        "beside it (PATH.json -> PATH.rows.jsonl), each row written as its question finishes.",
        "path for the run artifact.",
        field="json_path",
        parse=Path,
        metavar="PATH",
    ),
    Option(
        STRICT,
        "lens_strict",
        "treat dataset defects (e.g. evidence after its checkpoint) as errors.",
        "dataset defects are errors.",
        field="strict",
        action="store_true",
    ),
    Option(
        WEIGHTS,
        "lens_weights",
        "override composite weights.",
        "composite weight overrides, METRIC=W.",
        action="append",
        metavar="METRIC=W,...",
        extend=True,
    ),
    Option(
        SCORING,
        "lens_scoring",
        "composite preset: paper (LENS paper's weights, default) or v2 (LENS V2: judged fact recall, evidence support, "
        "citation validity); --lens-weights apply on top.",
        "composite preset, as for --lens-scoring: paper or v2.",
        field="scoring",
        parse=_one_of(_SCORING_CHOICES),
        choices=_SCORING_CHOICES,
    ),
    Option(
        GATE_BUDGET,
        "lens_gate_budget",
        "also gate the composite on budget_compliance < 0.5.",
        "gate on budget_compliance too.",
        field="gate_budget",
        action="store_true",
    ),
    Option(
        CALL_TIMEOUT,
        "lens_call_timeout",
        f"per adapter call timeout (default {_default(DEFAULTS.call_timeout)}; 0 disables).",
        "per adapter call timeout in seconds (0 disables).",
        field="call_timeout",
        parse=_call_timeout,
        metavar="SECONDS",
    ),
    Option(
        OPAQUE_REFS,
        "lens_opaque_refs",
        "show agents opaque ref aliases: auto (when ids leak labels), always, never.",
        "auto, always or never.",
        field="opaque_refs",
        parse=_one_of(_OPAQUE_CHOICES),
        choices=_OPAQUE_CHOICES,
    ),
    Option(
        SEED,
        "lens_seed",
        f"seed for everything random in scoring (default {DEFAULTS.seed}).",
        "seed for scoring randomness.",
        field="seed",
        parse=parse_seed,
        metavar="N",
    ),
    Option(
        NO_BUILTIN,
        "lens_builtin_tests",
        "do not add the built-in LENS tests; run only test modules that use the lens fixtures.",
        "add the built-in LENS tests.",
        field="builtin_tests",
        action="store_false",
    ),
    Option(
        SUITE,
        "lens_suites",
        "benchmark suite to run: lens (default), meme, mab (repeatable). With --lens-dataset, "
        "keeps only the datasets of these suites (a dataset file names its suite).",
        "suites, as for --lens-suite.",
        field="suites",
        action="append",
        metavar="NAME",
    ),
    Option(
        SAVE,
        None,
        "save this run as .lens/<machine>/NNNN_NAME.json (see --lens-storage).",
        field="save_name",
        parse=_save_name,
        metavar="NAME",
    ),
    Option(
        BASELINE,
        "lens_baseline",
        "compare with a saved run (by name, NNNN or NNNN_NAME) or a --lens-json file, paired by question.",
        "saved run or artifact to compare with, as for --lens-baseline.",
        field="baseline",
        metavar="NAME|PATH",
    ),
    Option(
        STORAGE,
        "lens_storage",
        f"directory of saved runs (default: {DEFAULTS.storage} in the rootdir).",
        "directory of saved runs, relative to the rootdir.",
        field="storage",
        parse=Path,
        metavar="DIR",
    ),
    Option(
        FAIL_UNDER,
        "lens_fail_under",
        "fail when an adapter headline is below X.",
        "minimum adapter headline, as for --lens-fail-under.",
        field="fail_under",
        parse=parse_fraction,
        metavar="X",
    ),
    Option(
        COMPARE_FAIL,
        "lens_compare_fail",
        "fail on a significant regression vs --lens-baseline (one-sided paired t-test of the headline's mean drop, Holm, "
        "--lens-alpha), a drop no test could detect, or a drop over --lens-max-drop.",
        "fail on a regression vs the baseline.",
        field="compare_fail",
        action="store_true",
    ),
    Option(
        COMPARE_PARTIAL,
        "lens_compare_partial",
        "with --lens-compare-fail: gate on the questions both runs have, even when either run has questions the other lacks.",
        "a baseline comparison may leave out questions.",
        field="compare_partial",
        action="store_true",
    ),
    Option(
        ACCEPT_UNLIKE,
        "lens_accept_unlike",
        "compare with --lens-baseline although the runs' comparability cards differ in these fields "
        "(data, budget, agent, judge, scoring; repeatable); without it such a baseline is refused (exit 2). "
        "The verdict line says which were accepted.",
        "comparability-card fields a baseline may differ in, as for --lens-accept-unlike.",
        field="accept_unlike",
        parse=_accepted,
        action="append",
        metavar="FIELD,...",
    ),
    Option(
        ALPHA,
        "lens_alpha",
        f"significance level after Holm correction (default {_default(DEFAULTS.alpha)}).",
        "significance level after Holm correction.",
        field="alpha",
        parse=parse_alpha,
        metavar="P",
    ),
    Option(
        MAX_DROP,
        "lens_max_drop",
        "with --lens-compare-fail: also fail when a headline falls by more than X.",
        "largest tolerated headline drop vs the baseline.",
        field="max_drop",
        parse=parse_fraction,
        metavar="X",
    ),
    Option(
        MARGIN,
        "lens_margin",
        "with --lens-compare-fail: non-inferiority; fail when the one-sided (1 - --lens-alpha) upper bound of a headline's "
        "drop vs the baseline exceeds X, and pass when it does not, whatever the test of a drop says.",
        "non-inferiority margin of the headline vs the baseline.",
        field="margin",
        parse=parse_fraction,
        metavar="X",
    ),
    Option(
        BOOTSTRAP,
        "lens_bootstrap",
        "the independent units of CIs and paired t-tests: clustered (scopes, t(scopes - 1)), two-stage (scopes, with a "
        "two-stage bootstrap standard error), plain (questions), or auto (default: clustered with 5 or more scopes).",
        "auto, clustered, two-stage or plain, as for --lens-bootstrap.",
        field="bootstrap",
        parse=_one_of(_BOOTSTRAP_CHOICES),
        choices=_BOOTSTRAP_CHOICES,
    ),
    Option(
        MAX_FAULT_RATE,
        "lens_max_fault_rate",
        "fail when an adapter faulted (raised, returned a wrong value, hung) on more than this fraction of its questions "
        f"(default {_default(DEFAULTS.max_fault_rate)}, or e.g. 10%%); its scores are then marked not comparable.",
        "fail above this fraction of an adapter's questions with faults.",
        field="max_fault_rate",
        parse=_rate,
        metavar="RATE",
    ),
    Option(
        HEADLINE,
        "lens_headline",
        "the score gates, CIs, paired tests and baselines are about: retrieval (first-search nDCG@10 and MRR), "
        "composite (the paper's), or auto (default: composite with --lens-judge, else retrieval).",
        "auto, retrieval or composite, as for --lens-headline.",
        field="headline",
        parse=_one_of(_HEADLINE_CHOICES),
        choices=_HEADLINE_CHOICES,
    ),
    Option(
        LLM_BASE_URL,
        "lens_llm_base_url",
        "OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, OpenAI).",
        "OpenAI-compatible endpoint for the LLM agent, judge and adapters.",
        field="llm.base_url",
        metavar="URL",
    ),
    Option(
        AGENT_MODEL,
        "lens_agent_model",
        "model of --lens-agent=llm (and of the naive baseline).",
        "model of the LLM agent (and of the naive baseline).",
        field="llm.agent_model",
        metavar="NAME",
    ),
    Option(
        JUDGE,
        "lens_judge",
        "judge for tier-2/3 metrics: none (default), offline, llm.",
        "none, offline or llm.",
        field="llm.judge",
        parse=_one_of(JUDGE_KINDS),
        choices=JUDGE_KINDS,
    ),
    Option(
        JUDGE_MODEL,
        "lens_judge_model",
        "model of --lens-judge=llm (default: the agent model).",
        "model of the LLM judge (default: the agent model).",
        field="llm.judge_model",
        metavar="NAME",
    ),
    Option(
        JUDGE_BASE_URL,
        "lens_judge_base_url",
        "OpenAI-compatible endpoint of the judge (default: --lens-llm-base-url); its key from --lens-llm-api-key-env.",
        "OpenAI-compatible endpoint of the LLM judge (default: lens_llm_base_url).",
        field="llm.judge_base_url",
        metavar="URL",
    ),
    Option(
        LLM_API_KEY_ENV,
        "lens_llm_api_key_env",
        f"environment variable holding the API key (default {_LLM.api_key_env}).",
        "environment variable holding the API key.",
        field="llm.api_key_env",
        metavar="VAR",
    ),
    Option(
        LLM_CACHE_MODE,
        "lens_llm_cache_mode",
        "LLM request cache: record (default: reuse, add new), replay (cache only; a miss is an error), off.",
        "record, replay or off.",
        field="llm.cache_mode",
        parse=_one_of(CACHE_MODES),
        choices=CACHE_MODES,
    ),
    Option(
        LLM_CACHE,
        "lens_llm_cache",
        f"LLM request cache file (default {_LLM.cache_path.as_posix()}).",
        f"LLM request cache file (default {_LLM.cache_path.as_posix()} under the root).",
        field="llm.cache_path",
        parse=Path,
        metavar="PATH",
    ),
    Option(
        JUDGE_MAX_FAILURES,
        "lens_judge_max_failures",
        "flag the run when more than RATE (e.g. 0.05 or 5%%) of an adapter's questions had a judge failure.",
        "flag the run above this fraction of judge-failed questions.",
        field="llm.judge_max_failure_rate",
        parse=_rate,
        metavar="RATE",
    ),
    Option(
        JUDGE_CHECK,
        "lens_judge_check",
        "grade the judgments of a seeded sample of N answers again with a second judge (the same model with swapped "
        "positions, or --lens-judge-check-model) and report Cohen's kappa and positional bias.",
        "answers whose judgments a second judge grades again (0: none).",
        field="llm.judge_check",
        parse=_whole(low=0, unit="answers"),
        metavar="N",
    ),
    Option(
        JUDGE_CHECK_MODEL,
        "lens_judge_check_model",
        "model of the second judge of --lens-judge-check (default: the judge's model, positions swapped).",
        "model of the second judge of --lens-judge-check.",
        field="llm.judge_check_model",
        metavar="NAME",
    ),
    Option(
        LLM_TIMEOUT,
        "lens_llm_timeout",
        "seconds an LLM request may take (default: sized to each request, 60 s + 0.25 s per token of its max_tokens + "
        "0.01 s per token of its prompt; doubled for a resend after a timeout).",
        "seconds per LLM request (default: sized to each request).",
        field="llm.timeout_s",
        parse=_positive_seconds,
        metavar="SECONDS",
    ),
    Option(
        LLM_RETRIES,
        "lens_llm_retries",
        f"retries of a 429/5xx/timed-out LLM request (default {_LLM.retries}).",
        "retries of a 429/5xx/timed-out LLM request.",
        field="llm.retries",
        parse=_whole(low=0),
        metavar="N",
    ),
    Option(
        AGENT_MAX_TOKENS,
        "lens_agent_max_tokens",
        f"max_tokens of each agent request and of the naive baseline's answer (default {_LLM.agent_max_tokens}).",
        "max_tokens of each agent request and the naive baseline's answer.",
        field="llm.agent_max_tokens",
        parse=_tokens,
        metavar="N",
    ),
    Option(
        JUDGE_MAX_TOKENS,
        "lens_judge_max_tokens",
        f"max_tokens of judge replies with a reason: MEME's and LongMemEval's JSON verdicts (default {_LLM.judge_max_tokens}).",
        "max_tokens of judge requests answered with a reason (JSON verdicts).",
        field="llm.judge_max_tokens",
        parse=_tokens,
        metavar="N",
    ),
    Option(
        JUDGE_SHORT_MAX_TOKENS,
        "lens_judge_short_max_tokens",
        f"max_tokens of one-word judge verdicts: A, B or TIE (default {_LLM.judge_short_max_tokens}; more for reasoning models).",
        "max_tokens of one-word judge verdicts (A, B or TIE).",
        field="llm.judge_short_max_tokens",
        parse=_tokens,
        metavar="N",
    ),
    Option(
        LLM_CONTEXT,
        "lens_llm_context",
        "the answering model's context window in tokens: the naive baseline sends no more than fits (with a safety margin).",
        "the answering model's context window in tokens (sizes the naive baseline).",
        field="llm.context_tokens",
        parse=_tokens,
        metavar="TOKENS",
    ),
    Option(
        MAX_NOT_MEASURED,
        "lens_max_not_measured",
        "fail the run when more than RATE (e.g. 0.05 or 5%%) of an adapter's questions could not be measured "
        "(the agent could not reach its model).",
        "fail above this fraction of questions not measured.",
        field="llm.max_not_measured_rate",
        parse=_rate,
        metavar="RATE",
    ),
    Option(
        HTML,
        "lens_html",
        "write a self-contained HTML report: plots, tables and every question's transcript (needs pytest-lens[html]).",
        "path for the HTML report, as for --lens-html.",
        field="html_path",
        parse=Path,
        metavar="PATH",
    ),
    Option(
        CONTROLS,
        "lens_controls",
        "add the null and random control memories and mutants of every adapter (degraded copies), "
        "and print the sensitivity table: which degradations this run can detect.",
        "add controls and mutants, as for --lens-controls.",
        field="controls",
        action="store_true",
    ),
    Option(
        MUTANTS,
        "lens_mutants",
        "which mutants --lens-controls adds: top2, reversed, shuffled, half-random, stale, cut200 (default all; none for none).",
        "mutants --lens-controls adds, as for --lens-mutants.",
        parse=_names,
        action="append",
        metavar="NAME,...",
    ),
    Option(
        CONCURRENCY,
        "lens_concurrency",
        "questions answered at once per process (default: 8 for --lens-agent=llm, 1 for the offline agent).",
        "questions answered at once per process, as for --lens-concurrency.",
        field="concurrency",
        parse=_whole(low=1, unit="questions"),
        metavar="N",
    ),
    Option(
        MAX_CONNECTIONS,
        "lens_max_connections",
        f"most LLM requests in flight per process; adapts below it on 429/503 answers (default {_LLM.max_connections}).",
        "most LLM requests in flight per process.",
        field="llm.max_connections",
        parse=_whole(low=1, unit="requests"),
        metavar="N",
    ),
    Option(
        REPEAT,
        "lens_repeat",
        f"answer each question M times (one test each, distinct seeds); statistics use per-question means (default {DEFAULTS.repeat}).",
        "answers per question, as for --lens-repeat.",
        field="repeat",
        parse=_whole(low=1, unit="answers per question", high=MAX_REPEAT),
        metavar="M",
    ),
    Option(
        SHARD,
        None,
        "run shard I of N: a deterministic, cost-balanced share of the run's stream groups (adapter x scope x budget); "
        "N shards' artifacts merged with 'lens merge' are the whole run.",
        field="shard",
        parse=parse_shard,
        metavar="I/N",
    ),
    Option(
        SHARD_DURATIONS,
        "lens_shard_durations",
        "an earlier run's artifact (--lens-json, or a merged run): its measured durations balance the shards.",
        "artifact whose durations balance --lens-shard.",
        field="shard_durations",
        parse=Path,
        metavar="PATH",
    ),
    Option(
        RESUME,
        "lens_resume",
        "keep each stream group's results in DIR as it finishes, and reuse those whose inputs (data, adapter, agent, "
        "models, budget, seed, scoring, code) are unchanged.",
        "directory of resumable results, as for --lens-resume.",
        field="resume_dir",
        parse=Path,
        metavar="DIR",
    ),
    Option(
        RERUN,
        None,
        "with --lens-resume: ask again the kept questions that were not measured (endpoint or judge failures) "
        "or had adapter faults, and replace them.",
        field="rerun",
        parse=_one_of(_RERUN_CHOICES),
        choices=_RERUN_CHOICES,
    ),
)

_BY_FLAG = {row.flag: row for row in OPTIONS}
_BY_FIELD = {row.field: row for row in OPTIONS if row.field is not None}


def option(flag: str) -> Option:
    """The row of ``flag`` (``--lens-alpha``)."""
    return _BY_FLAG[flag]


# -- settings recorded as JSON data (a shard's ``run.shard.settings``), read back as the options are read ------------


def _recorded_text(value: Any, where: str) -> str:
    """A recorded scalar as the text its option's parser reads; :class:`ValueError` for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    raise ValueError(f"{where} is {_recorded_repr(value)}, not a single value")


def _recorded_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _recorded_value(row: Option, value: Any, nullable: bool, where: str) -> Any:
    """One recorded field, checked by ``row``'s parser as the option's value would be."""
    where = f"{where} ({row.flag})"
    if value is None:
        if nullable:
            return None
        raise ValueError(f"{where} is null")
    if row.switch:
        if not isinstance(value, bool):
            raise ValueError(f"{where} is {_recorded_repr(value)}, not true or false")
        return value
    try:
        if row.repeatable:
            if not isinstance(value, list):
                raise ValueError(f"{where} is {_recorded_repr(value)}, not a list")
            return tuple(row.parse(_recorded_text(entry, where)) for entry in value)
        return row.parse(_recorded_text(value, where))
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message if message.startswith(where) else f"{where}: {message}") from None


def _recorded_fields(record: Any, owner: type, prefix: str, skip: frozenset[str]) -> dict[str, Any]:
    """The fields of dataclass ``owner`` in ``record`` whose options have rows (``prefix``: ``llm.`` for the LLM's)."""
    from dataclasses import fields

    if not isinstance(record, dict):
        raise ValueError(f"{prefix.rstrip('.') or 'the settings'} is {_recorded_repr(record)}, not an object")
    known = {f.name: f for f in fields(owner)}
    unknown = sorted(set(record) - set(known) - skip)
    if unknown:
        raise ValueError(f"setting {prefix}{unknown[0]} is unknown to this pytest-lens")
    found: dict[str, Any] = {}
    for name, value in record.items():
        row = _BY_FIELD.get(prefix + name)
        if row is not None:
            found[name] = _recorded_value(row, value, "None" in str(known[name].type), f"setting {prefix}{name}")
    return found


def _recorded_number(value: Any, where: str, *, low: float = 0.0) -> float:
    import math

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < low:
        raise ValueError(f"{where} is {_recorded_repr(value)}, not a finite number of at least {low:g}")
    return float(value)


def _recorded_adapters(value: Any) -> tuple[AdapterSpec, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"setting adapters ({ADAPTER}) is {_recorded_repr(value)}, not a list of adapters")
    specs = []
    for index, entry in enumerate(value):
        where = f"setting adapters[{index}] ({ADAPTER})"
        if not isinstance(entry, dict) or not isinstance(entry.get("label"), str) or not isinstance(entry.get("target"), str):
            raise ValueError(f"{where} is {_recorded_repr(entry)}, not {{label, target, options}}")
        options = entry.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError(f"{where}.options is {_recorded_repr(options)}, not an object ({ADAPTER_OPTION})")
        specs.append(AdapterSpec(entry["label"], entry["target"], dict(options)))
    return tuple(specs)


def parse_recorded(record: Any) -> dict[str, Any]:
    """Settings a shard recorded as JSON data, as :class:`LensSettings` fields, each checked as its option is.

    A field of the wrong type, out of its option's range (``repeat`` over :data:`MAX_REPEAT`, an ``alpha`` of 2),
    unknown or missing where it is needed is a :class:`ValueError` naming the field and its option; nothing is
    trusted as recorded. Fields that belong to one process (paths of outputs, the shard itself) are not recorded.
    """
    from pytest_lens.llm.settings import LLMSettings

    composite = frozenset({"adapters", "llm", "weights", "mutants"})
    found = _recorded_fields(record, LensSettings, "", composite)
    found["adapters"] = _recorded_adapters(record.get("adapters"))
    llm = record.get("llm")
    if llm is None:
        raise ValueError("setting llm is missing: the shard's settings are incomplete")
    llm_fields = _recorded_fields(llm, LLMSettings, "llm.", frozenset({"judge_check_min_kappa"}))
    if "judge_check_min_kappa" in llm:
        llm_fields["judge_check_min_kappa"] = _recorded_number(llm["judge_check_min_kappa"], "setting llm.judge_check_min_kappa", low=-1.0)
    found["llm"] = LLMSettings(**llm_fields)
    weights = record.get("weights")
    if weights is not None:
        if not isinstance(weights, dict):
            raise ValueError(f"setting weights ({WEIGHTS}) is {_recorded_repr(weights)}, not an object")
        found["weights"] = {str(name): _recorded_number(value, f"setting weights.{name} ({WEIGHTS})") for name, value in weights.items()}
    mutants = record.get("mutants")
    if mutants is not None and (not isinstance(mutants, list) or not all(isinstance(name, str) for name in mutants)):
        raise ValueError(f"setting mutants ({MUTANTS}) is {_recorded_repr(mutants)}, not a list of names")
    found["mutants"] = None if mutants is None else tuple(mutants)
    return found
