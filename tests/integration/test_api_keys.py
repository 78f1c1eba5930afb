"""Issue 15, defect 1: an API key echoed by a server's error body reaches no output, artifact or report.

Real proxies and gateways quote the request's ``Authorization`` header in their error bodies. Each
client pytest-lens runs (the chat client behind the LLM agent and the LLM judge, the embedding client
behind the embedding-backed adapters, ``lens generate``'s LLM stage) is sent to a real server on
127.0.0.1 that refuses every request with such a body; the key must then appear nowhere: terminal,
``--lens-json`` artifact, JUnit XML, HTML report, saved runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.cli.main import main
from tests.support import COLD_CHAIN_DEMO

SECRET = "sk-lens-echoed-4c1d2e3f5a6b7c8d"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}", "-k", "q01 or q02")
OUTPUTS = ("--lens-json=out.json", "--junitxml=junit.xml", "--lens-html=report.html", "--lens-save=keyed")
#: What OUTPUTS write: the run document, its rows (the streamed artifact), JUnit XML, the HTML report.
ARTIFACTS = ("out.json", "out.rows.jsonl", "junit.xml", "report.html")


def artifact_text(pytester: pytest.Pytester) -> str:
    """The run artifact as text: its document and its rows file."""
    return (pytester.path / "out.json").read_text() + (pytester.path / "out.rows.jsonl").read_text()


def echoing_server(only: str) -> OpenAITestServer:
    """Refuses every ``only`` request with HTTP 401 and an error body quoting the Authorization header."""
    refusal = Fault("status", status=401, permanent=True, only=only, text="invalid api key")
    return OpenAITestServer(faults=[refusal], echo_authorization=True)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_key_nowhere(pytester: pytest.Pytester, result: pytest.RunResult, server: OpenAITestServer, refused: str) -> None:
    refusals = [r for r in server.requests if r.kind == refused and r.status == 401]
    assert refusals and {r.authorization for r in refusals} == {f"Bearer {SECRET}"}  # the key was sent, and echoed back
    printed = "\n".join(result.outlines + result.errlines)
    assert SECRET not in printed
    written = [pytester.path / name for name in ARTIFACTS]
    written += [path for path in (pytester.path / ".lens").rglob("*") if path.is_file()]
    assert all(path.is_file() for path in written[: len(ARTIFACTS)])
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    # The error itself is reported, masked (the judge's in the artifact; the others' in the output too).
    assert "invalid api key (request headers: Authorization: Bearer ***)" in artifact_text(pytester)


@pytest.mark.parametrize("refused", ["agent", "judge"])
def test_secret_in_artifacts_the_chat_client_masks_an_echoed_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path, refused: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with echoing_server(refused) as server:
        result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            "--lens-judge=llm",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-llm-retries=0",
            "--lens-llm-cache-mode=off",
            *OUTPUTS,
            *QUIET,
        )
    assert_key_nowhere(pytester, result, server, refused)


def test_secret_in_artifacts_the_embedding_client_masks_an_echoed_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    monkeypatch.setenv("LENS_EMBEDDING_API_KEY", SECRET)
    with echoing_server("embedding") as server:
        result = pytester.runpytest(
            "--lens-adapter=sqlite-hybrid",
            f"--lens-adapter-option=embedding_base_url={server.base_url}",
            "--lens-adapter-option=embedding_model=echo-embed",
            *OUTPUTS,
            *QUIET,
        )
    result.assert_outcomes(failed=2)
    assert_key_nowhere(pytester, result, server, "embedding")


def test_secret_in_artifacts_lens_generate_masks_an_echoed_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GENERATOR_KEY", SECRET)
    out = tmp_path / "scope.json"
    with echoing_server("other") as server:
        args = ["generate", "--domain", "cascading_failure", "--seed", "3", "--signal", "30", "--distractors", "0", "--out", str(out)]
        llm = ["--llm-base-url", server.base_url, "--llm-model", "writer", "--llm-api-key-env", "GENERATOR_KEY"]
        assert main([*args, *llm, "--llm-cache", str(tmp_path / "c.sqlite")]) == 0
    assert {r.authorization for r in server.requests if r.status == 401} == {f"Bearer {SECRET}"}
    captured = capfd.readouterr()
    assert SECRET not in captured.out + captured.err
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


def test_mask_keys_hides_every_key_read_and_every_known_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_lens.llm.api_keys import mask_keys, read_api_key

    monkeypatch.setenv("LENS_EMBEDDING_API_KEY", "sk-embedding-key")
    monkeypatch.setenv("CUSTOM_KEY_ENV", "sk-custom-key-0042")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert mask_keys("said sk-custom-key-0042") == "said sk-custom-key-0042"  # not a key pytest-lens reads, until read
    assert read_api_key("UNSET_KEY_ENV", "CUSTOM_KEY_ENV") == "sk-custom-key-0042"
    assert mask_keys("Bearer sk-custom-key-0042 / sk-embedding-key") == "Bearer *** / ***"
    monkeypatch.setenv("SHORT_KEY_ENV", "ab")
    assert read_api_key("SHORT_KEY_ENV") == "ab" and mask_keys("about a tab") == "about a tab"


# -- issue 32: secrets in URLs, options and answers -------------------------------------------------------------
URL_PASSWORD = "pw-lens-userinfo-61c0ffee"
QUERY_KEY = "qk-lens-query-0b5e55ed"
OPTION_KEY = "ok-lens-option-5ca1ab1e"

LEAKY_ADAPTER = '''
from lens_fixtures.adapters.bm25 import BM25Adapter


class LeakyAdapter(BM25Adapter):
    """Takes an api_key option and, like careless client libraries, quotes it in an error on its first search."""

    def __init__(self, api_key: str, storage_dir: str | None = None) -> None:
        super().__init__(storage_dir=storage_dir)
        self.api_key = api_key
        self.searched = False

    def search(self, query, filters=None, limit=None):
        if not self.searched:
            self.searched = True
            raise RuntimeError(f"login refused for key {self.api_key}")
        return super().search(query, filters, limit)
'''


def assert_secrets_nowhere(pytester: pytest.Pytester, result: pytest.RunResult, secrets: tuple[str, ...], cache_dir: Path) -> None:
    printed = "\n".join(result.outlines + result.errlines)
    written = [pytester.path / name for name in ARTIFACTS]
    assert all(path.is_file() for path in written)
    written += [path for root in (pytester.path / ".lens", cache_dir) for path in root.rglob("*") if path.is_file()]
    assert any(path.name == "llm-cache.sqlite" for path in written)
    for secret in secrets:
        assert secret not in printed, secret
        for path in written:
            assert secret.encode() not in path.read_bytes(), (secret, path)


def test_secret_in_artifacts_user_info_options_and_quoted_keys_are_masked_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    from lens_fixtures.openai_server import LensPolicy, ScriptedAgentPolicy

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    pytester.makepyfile(leaky=LEAKY_ADAPTER)
    script = [[("memory_search", {"query": "freezer FR-3"})], f"Sure, the key is {SECRET} and {OPTION_KEY}."]
    policy = LensPolicy(agent=ScriptedAgentPolicy(script))
    with OpenAITestServer(policy) as server:
        base = server.base_url.replace("http://", f"http://lens:{URL_PASSWORD}@")
        result = pytester.runpytest(
            "--lens-adapter=leaky:LeakyAdapter",
            f"--lens-adapter-option=api_key={OPTION_KEY}",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={base}",
            "--lens-llm-retries=0",
            *OUTPUTS,
            *QUIET,
        )
    assert server.count(kind="agent", status=200) >= 1  # the user-info URL reached the server
    assert result.parseoutcomes()["failed"] >= 1  # the first search's error quoting the option's key fails its question
    assert_secrets_nowhere(pytester, result, (SECRET, URL_PASSWORD, OPTION_KEY), cache_dir)
    artifact = artifact_text(pytester)
    assert "login refused for key ***" in artifact and "Sure, the key is *** and ***." in artifact
    assert '"api_key": "***"' in artifact


def test_secret_in_artifacts_a_key_in_the_base_url_query_is_masked_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with OpenAITestServer() as server:
        base = server.base_url
        result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={base}?api_key={QUERY_KEY}",
            "--lens-llm-retries=0",
            *OUTPUTS,
            *QUIET,
        )
        sent = [(r.path, r.query, r.status) for r in server.requests if r.kind == "agent"]
    # The requests go to BASE_PATH/chat/completions with the key kept a query parameter (it used to be glued into
    # the path: /v1?api_key=.../chat/completions, HTTP 404 for every question).
    assert sent and set(sent) == {("/v1/chat/completions", f"api_key={QUERY_KEY}", 200)}
    result.assert_outcomes(passed=2)
    assert f"{base}?api_key=***" in result.stdout.str()  # the agent line
    assert_secrets_nowhere(pytester, result, (SECRET, QUERY_KEY), cache_dir)


def test_an_azure_style_api_version_stays_a_query_parameter_of_every_request(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    with OpenAITestServer() as server:
        result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={server.base_url}/?api-version=2024-10-21&deployment=gpt",
            "--lens-llm-retries=0",
            *QUIET,
        )
        sent = {(r.path, r.query, r.status) for r in server.requests if r.kind == "agent"}
    assert sent == {("/v1/chat/completions", "api-version=2024-10-21&deployment=gpt", 200)}
    assert server.count(kind="agent") >= 2
    result.assert_outcomes(passed=2)


def test_secret_in_artifacts_an_embedding_endpoints_user_info_query_and_basic_header_are_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    import base64

    monkeypatch.delenv("LENS_EMBEDDING_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with echoing_server("embedding") as server:
        base = server.base_url.replace("http://", f"http://lens:{URL_PASSWORD}@") + f"?api_key={QUERY_KEY}"
        result = pytester.runpytest(
            "--lens-adapter=sqlite-hybrid",
            f"--lens-adapter-option=embedding_base_url={base}",
            "--lens-adapter-option=embedding_model=echo-embed",
            *OUTPUTS,
            *QUIET,
        )
    result.assert_outcomes(failed=2)
    basic = base64.b64encode(f"lens:{URL_PASSWORD}".encode()).decode()
    printed = "\n".join(result.outlines + result.errlines)
    assert "embedding endpoint http://***@127.0.0.1" in printed
    for secret in (URL_PASSWORD, QUERY_KEY, basic):
        assert secret not in printed, secret
        for name in ARTIFACTS:
            assert secret.encode() not in (pytester.path / name).read_bytes(), (secret, name)
