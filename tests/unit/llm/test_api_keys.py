"""Issue 32, defect 1: every secret that can enter pytest-lens, masked by the one function every writer uses.

One table: each row is a way a secret gets in (an environment key, a base URL's query or user-info, an
``Authorization`` header, an adapter option, a model quoting a key back) and the text it shows up in; the
row's secret must be gone from :func:`mask_secrets`' output and the text around it kept. A second table
holds text that looks close to a secret and must come out unchanged.
"""

from __future__ import annotations

import base64
import json

import pytest

from pytest_lens.llm.api_keys import (
    MASK,
    looks_secret,
    mask_data,
    mask_secrets,
    masked_options,
    read_api_key,
    remember_arguments,
    remember_options,
    remember_url,
)

KEY = "sk-lens-table-7f3a9b2c4d5e6f70"
PASSWORD = "hunter2-lens-pw"
OPTION_KEY = "mem-opt-9d8c7b6a"
QUOTED = "zq-quoted-key-5512aa"
SERVICE_TOKEN = "svc-token-77aa88bb"
ARGUMENT_PASSWORD = "arg-pw-31f0c2"
ARGUMENT_KEY = "arg-key-c0ffee11"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()

# (where the secret enters, how it is remembered (or None: recognised by its shape), the text it reaches, the secret, what stays)
SECRET_TABLE: list[tuple[str, str | None, str, str, str]] = [
    ("env key echoed by a server", "env", f"HTTP 401: invalid api key (Authorization: Bearer {KEY})", KEY, "HTTP 401: invalid api key"),
    ("env key quoted by a model", "env", f"The key you gave me was {KEY}.", KEY, "The key you gave me was"),
    (
        "base URL query api_key",
        None,
        f"agent: scripted at http://127.0.0.1:8000/v1?api_key={KEY}",
        KEY,
        "http://127.0.0.1:8000/v1?api_key=",
    ),
    ("base URL query key", None, f"http://127.0.0.1:8000/v1?model=x&key={KEY}&b=1", KEY, "?model=x&key=***&b=1"),
    ("base URL query token (HTML-escaped)", None, f"http://h/v1?a=1&amp;access_token={KEY}", KEY, "?a=1&amp;access_token="),
    (
        "base URL user-info",
        None,
        f"embedding endpoint http://alice:{PASSWORD}@127.0.0.1:9/v1 failed",
        PASSWORD,
        "http://***@127.0.0.1:9/v1",
    ),
    ("base URL token as user name", None, f"https://{KEY}@gateway.example/v1", KEY, "https://***@gateway.example/v1"),
    ("Basic header of the user-info", None, f"(request headers: Authorization: Basic {BASIC})", BASIC, "Authorization: Basic ***"),
    ("Basic credential, remembered", "url", f"echoed {BASIC} back", BASIC, "echoed"),
    ("password, remembered, alone", "url", f"the server said: {PASSWORD}", PASSWORD, "the server said:"),
    ("Bearer header in JSON", None, json.dumps({"authorization": f"Bearer {QUOTED}"}), QUOTED, '"authorization": "Bearer ***"'),
    ("Bearer credential in prose", None, f"sent Bearer {QUOTED} to the proxy", QUOTED, "sent Bearer *** to the proxy"),
    ("Authorization header in parentheses", None, f"(Authorization: Bearer {QUOTED})", QUOTED, "(Authorization: Bearer ***)"),
    ("adapter option api_key=", None, f"--lens-adapter-option api_key={OPTION_KEY}", OPTION_KEY, "--lens-adapter-option api_key="),
    ("adapter option in a repr", None, f"Mem0Adapter(api_key='{OPTION_KEY}', top_k=5)", OPTION_KEY, "top_k=5"),
    ("adapter option value, remembered", "option", f"adapter said: login with {OPTION_KEY} failed", OPTION_KEY, "login with"),
    ("JSON field password, remembered", "url", json.dumps({"db_password": PASSWORD, "n": 3}), PASSWORD, '"n": 3'),
    ("OpenAI-style key a model quotes", None, f"Sure! Use sk-proj-{'A1b2C3d4' * 3} for that.", f"sk-proj-{'A1b2C3d4' * 3}", "Sure! Use"),
    # Issue 46: an MCP server's stderr quoting its environment, and its command line's secret flags.
    ("any *_TOKEN pair", None, f'refused {{"MEMORY_SERVICE_TOKEN": "{SERVICE_TOKEN}"}}', SERVICE_TOKEN, '"MEMORY_SERVICE_TOKEN": "***"'),
    ("password: pair", None, "login failed, password: Tr0ub4dor-horse", "Tr0ub4dor-horse", "login failed, password: ***"),
    (
        "--password V, remembered",
        "arguments",
        f"server --password {ARGUMENT_PASSWORD} exited",
        ARGUMENT_PASSWORD,
        "server --password *** exited",
    ),
    ("--api-key=V, remembered", "arguments", f"npx srv --api-key={ARGUMENT_KEY}", ARGUMENT_KEY, "npx srv --api-key=***"),
]

# Text that resembles a secret's surroundings and must be left alone.
KEPT = [
    "http://127.0.0.1:8000/v1",
    "max_tokens=2048, result_token_cap: 3000",
    "key_facts: 3 of 4; the key: value pairs",
    "password resets: 31 on 2024-03-02",
    "Basic facts about the outage",
    "the author wrote Bearer of bad news",
    "see https://example.org/docs?page=2&sort=asc",
    # LENS scope 01's service reports
    "- /auth: REQUESTS 152300 | p50: 28ms",
    "- /authn_failures: REQUESTS N/A | invalid_password: 1411 | mfa_challenge_failed: 382",
    "- pool-auth: active 120 | idle 30",
    "prompt tokens: 1234567890; input_token: 12345678",
]


@pytest.fixture
def remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_KEY_ENV", KEY)
    read_api_key("TABLE_KEY_ENV")
    remember_url(f"http://alice:{PASSWORD}@127.0.0.1:9/v1")
    remember_options({"service_token": OPTION_KEY, "top_k": 5})
    remember_arguments(["server", "--password", ARGUMENT_PASSWORD, f"--api-key={ARGUMENT_KEY}", "--verbose"])


@pytest.mark.parametrize(("entry", "how", "text", "secret", "kept"), SECRET_TABLE, ids=[row[0] for row in SECRET_TABLE])
def test_secret_table_every_way_in_is_masked(remembered: None, entry: str, how: str | None, text: str, secret: str, kept: str) -> None:
    masked = mask_secrets(text)
    assert secret not in masked
    assert MASK in masked
    assert kept in masked
    assert mask_secrets(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize("text", KEPT)
def test_secret_table_text_that_only_looks_close_is_kept(remembered: None, text: str) -> None:
    assert mask_secrets(text) == text


def test_secret_table_shape_rows_need_nothing_remembered() -> None:
    # A fresh process's worker has remembered nothing yet: the rows recognised by shape still hold.
    for entry, how, text, secret, _ in SECRET_TABLE:
        if how is None and secret not in (PASSWORD, BASIC, OPTION_KEY, KEY):
            assert secret not in mask_secrets(text), entry


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("openai_api_key", True), ("service_token", True), ("db_password", True), ("key", True),
     ("client_secret", True), ("top_k", False), ("max_tokens", False), ("key_facts", False), ("embedding_model", False)],
)  # fmt: skip
def test_option_names_that_look_like_secrets(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_masked_options_hide_secret_names_whole_and_mask_urls_in_the_rest() -> None:
    options = {"api_key": 12345678, "top_k": 5, "embedding_base_url": f"http://u:{PASSWORD}@h/v1?key=abcd1234"}
    assert masked_options(options) == {"api_key": MASK, "top_k": 5, "embedding_base_url": "http://***@h/v1?key=***"}


def test_mask_data_masks_every_string_of_a_json_value_and_keeps_the_rest(remembered: None) -> None:
    value = {"answer": f"it is {KEY}", "n": 1234, "ok": True, "calls": [{"args": f"access_token={QUOTED}"}]}
    assert mask_data(value) == {"answer": f"it is {MASK}", "n": 1234, "ok": True, "calls": [{"args": f"access_token={MASK}"}]}
