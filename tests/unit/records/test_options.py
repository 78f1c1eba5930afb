"""The option table: one row per option, parsers that say what is wrong (no pytest needed)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_lens.llm.settings import LLMSettings
from pytest_lens.records import options
from pytest_lens.records.options import OPTIONS, option
from pytest_lens.records.settings import LensSettings


def test_every_row_has_one_flag_one_ini_key_and_a_real_settings_field() -> None:
    flags = [row.flag for row in OPTIONS]
    inis = [row.ini for row in OPTIONS if row.ini is not None]
    assert len(set(flags)) == len(flags) and len(set(inis)) == len(inis)
    assert all(flag.startswith("--lens-") for flag in flags) and all(ini.startswith("lens_") for ini in inis)
    lens_fields = {f.name for f in dataclasses.fields(LensSettings)}
    llm_fields = {f.name for f in dataclasses.fields(LLMSettings)}
    for row in OPTIONS:
        if row.field is not None:
            name = row.field.removeprefix("llm.")
            assert name in (llm_fields if row.field.startswith("llm.") else lens_fields), row.flag
    # Every flag constant is a row, and every row has its constant.
    constants = {value for name, value in vars(options).items() if name.isupper() and isinstance(value, str) and value.startswith("--")}
    assert constants == set(flags)


@pytest.mark.parametrize(
    ("flag", "default"),
    [
        (options.SEED, "(default 42)"),
        (options.ALPHA, "(default 0.05)"),
        (options.CALL_TIMEOUT, "(default 120;"),
        (options.MAX_CONNECTIONS, "(default 16)"),
        (options.LLM_RETRIES, "(default 4)"),
        (options.REPEAT, "(default 1)"),
    ],
)
def test_help_quotes_the_settings_default(flag: str, default: str) -> None:
    assert default in option(flag).help


@pytest.mark.parametrize(
    ("flag", "text", "value"),
    [
        (options.ALPHA, "0.01", 0.01),
        (options.FAIL_UNDER, "1", 1.0),
        (options.MAX_FAULT_RATE, "10%", 0.1),
        (options.MAX_FAULT_RATE, "0.2", 0.2),
        (options.SEED, "-3", -3),
        (options.REPEAT, "2", 2),
        (options.LLM_RETRIES, "0", 0),
        (options.AGENT_MAX_TOKENS, "8k", 8192),
        (options.AGENT_MAX_TOKENS, "512", 512),
        (options.CALL_TIMEOUT, "0", None),
        (options.CALL_TIMEOUT, "2.5", 2.5),
        (options.LLM_TIMEOUT, "30", 30.0),
        (options.JUDGE, "llm", "llm"),
        (options.BUDGET, "results=8000,turns=4", "results=8000,turns=4"),
        (options.MUTANTS, "top2, stale", ("top2", "stale")),
        (options.SAVE, "main-1.x", "main-1.x"),
    ],
)
def test_parsers_read_good_values(flag: str, text: str, value: object) -> None:
    assert option(flag).parse(text) == value


@pytest.mark.parametrize(
    ("flag", "text", "message"),
    [
        (options.ALPHA, "1", "must lie strictly between 0 and 1, got '1'"),
        (options.ALPHA, "often", "must lie strictly between 0 and 1, got 'often'"),
        (options.FAIL_UNDER, "2", "must be a number between 0 and 1, got '2'"),
        (options.MAX_DROP, "x", "must be a number between 0 and 1, got 'x'"),
        (options.MAX_FAULT_RATE, "150%", "must be a fraction between 0 and 1 (or a percentage like 5%), got '150%'"),
        (options.SEED, "4.2", "must be a whole number; got '4.2'"),
        (options.REPEAT, "0", "must be a whole number of answers per question, from 1 to 1,000; got '0'"),
        (options.REPEAT, "10000000", "must be a whole number of answers per question, from 1 to 1,000; got '10000000'"),
        (options.CONCURRENCY, "many", "must be a whole number of questions, at least 1; got 'many'"),
        (options.LLM_RETRIES, "-1", "must be a whole number, at least 0; got '-1'"),
        (options.AGENT_MAX_TOKENS, "0", "must be a positive number of tokens (e.g. 512 or 8k), got '0'"),
        (options.CALL_TIMEOUT, "soon", "must be a number of seconds (0 disables), got 'soon'"),
        (options.LLM_TIMEOUT, "0", "must be a positive number of seconds, got '0'"),
        (options.JUDGE, "maybe", "must be one of none, offline, llm, got 'maybe'"),
        (options.BUDGET, "17q", "unknown budget '17q': use one of 4k, 8k, 16k, 32k or results=N"),
        (options.SAVE, "../up", "'../up': use letters, digits, '.', '_' or '-', starting with a letter or digit"),
    ],
)
def test_parsers_say_what_is_wrong(flag: str, text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        option(flag).parse(text)
    assert str(caught.value).startswith(message)

