"""The README stays a front page, the documentation site builds strictly, and the API reference covers the public face."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pytest_lens
import pytest_lens.api

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: The clean-clone CI and the quick start rely on these two commands, character for character.
MAIN_JOB = (
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[dev]' "
    "&& .venv/bin/pytest -m lens --lens-adapter=sqlite-hybrid --lens-json=lens-run.json"
)
TEST_COMMAND = ".venv/bin/pytest -n auto"


def fenced_blocks(markdown: str) -> list[str]:
    return [block.strip() for block in re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)]


def test_readme_is_a_front_page_with_the_two_quick_start_commands() -> None:
    words = len(README.split())
    assert words < 2000, f"README.md has {words} words: move the detail to a page under docs/"
    blocks = fenced_blocks(README)
    assert MAIN_JOB in blocks
    assert TEST_COMMAND in blocks
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(TEST_COMMAND)}$", ci, flags=re.MULTILINE), ".ci/run must run the README's test command"


def test_the_readme_names_every_variable_the_ci_script_reads() -> None:
    script = (ROOT / "examples" / "ci" / "lens-ci.sh").read_text(encoding="utf-8")
    variables = set(re.findall(r"\$\{?(LENS_[A-Z_]+)", script))
    # Variables the script reads from its environment (those it only sets for pytest-lens are not the user's).
    read = {name for name in variables if re.search(rf"{name}=\$\{{{name}:", script) or f"${{{name}:?" in script}
    expected = {"LENS_ADAPTER", "LENS_INSTALL", "LENS_TORCH", "LENS_PROJECT_INSTALL", "LENS_ARGS", "LENS_VENV", "LENS_CACHE_DIR"}
    expected.add("LENS_OUT")
    assert read >= expected
    missing = sorted(name for name in read if f"`{name}`" not in README)
    assert not missing, f"README.md's CI table lacks {missing}"


def test_every_relative_link_of_the_readme_resolves() -> None:
    targets = re.findall(r"\]\(((?!https?:|#)[^)#]+)(?:#[^)]*)?\)", README)
    assert targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing


def test_the_api_reference_documents_every_public_name() -> None:
    api_page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r'heading: "([\w.]+)"', api_page))
    public = {f"pytest_lens.{name}" for name in pytest_lens.__all__ if name not in ("__version__", "outside_call_timeout")}
    public |= {f"pytest_lens.api.{name}" for name in pytest_lens.api.__all__}
    assert not public - documented, f"docs/api.md lacks {sorted(public - documented)}"
    for directive in re.findall(r"^::: ([\w.]+)$", api_page, flags=re.MULTILINE):
        module, _, name = directive.rpartition(".")
        assert hasattr(__import__(module, fromlist=[name]), name), f"docs/api.md documents {directive}, which does not exist"


def test_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [page for entry in nav for page in pages(entry)]
        if isinstance(nav, dict):
            return [page for value in nav.values() for page in pages(value)]
        return []

    listed = pages(config["nav"])
    assert "index.md" in listed
    assert [page for page in listed if not (ROOT / "docs" / page).is_file()] == []


def ci_mkdocs_arguments() -> list[str]:
    """The arguments .ci/run gives ``mkdocs build``, its ``--site-dir`` left out: the test builds what CI builds."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = re.findall(r"^NO_MKDOCS_2_WARNING=1 \.venv/bin/mkdocs build (.*)$", ci, flags=re.MULTILINE)
    assert len(lines) == 1, ".ci/run must build the documentation site once, with .venv/bin/mkdocs build"
    words = shlex.split(lines[0])
    at = words.index("--site-dir")
    return words[:at] + words[at + 2 :]


def mkdocs_build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *ci_mkdocs_arguments(), "--site-dir", str(site / "out")],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def small_site(tmp_path: Path) -> Path:
    """The project's mkdocs.yml (theme, plugins, validation) over two pages of its own."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config[: config.index("\nnav:")] + "\nnav:\n  - Home: index.md\n  - Other: other.md\n"
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the other page](other.md#a-section).\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\n## A section\n\nText.\n", encoding="utf-8")
    return tmp_path


def test_a_strict_build_fails_on_a_broken_link_or_anchor_and_not_on_a_page_outside_the_nav(small_site: Path) -> None:
    # Built as .ci/run builds the site: with --quiet there, mkdocs counted no warning and this build passed.
    assert "--strict" in ci_mkdocs_arguments()
    docs = small_site / "docs"
    (docs / "later.md").write_text("# A page the nav does not list yet\n", encoding="utf-8")
    built = mkdocs_build(small_site)
    assert built.returncode == 0, built.stderr
    assert (small_site / "out" / "later" / "index.html").is_file()

    (docs / "index.md").write_text("# Home\n\nSee [a section](other.md#no-such-section) and [a page](missing.md).\n", encoding="utf-8")
    broken = mkdocs_build(small_site)
    assert broken.returncode != 0
    assert "no-such-section" in broken.stderr
    assert "missing.md" in broken.stderr


def shape(line: str) -> str:
    """A progress line with its numbers taken out: what the line says, whatever the run measured."""
    return re.sub(r"~?\d[\d,]*(\.\d+)?", "N", line)


def test_the_getting_started_progress_sample_is_what_a_run_prints() -> None:
    # Issue 42: the sample showed lines the run never printed. Each "lens:" line of the sample must have the shape of
    # a line the progress code writes (ingesting at the start, on the way with and without embeddings, done; the
    # embedder loading its model; answering on the way and done, without a model: the main job's agent is offline),
    # for the main job's adapter and the first bundled scope.
    from pytest_lens.datasets.bundled import bundled_dataset_paths
    from pytest_lens.embedding.sentence import BUNDLED_MODEL
    from pytest_lens.progress import AnsweringProgress, Progress, StreamProgress, format_stream_line, report_activity

    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    block = next(b for b in fenced_blocks(page) if "ingesting" in b)
    sample = [line for line in block.splitlines() if line.startswith("lens: ")]
    assert len(sample) >= 3
    scope = bundled_dataset_paths()[0].stem
    written: list[str] = []
    for done, total, embedded in ((0, 120, 0), (43, 120, 0), (43, 120, 86), (120, 120, 140)):
        written.append(format_stream_line(StreamProgress("sqlite-hybrid", scope, total, done=done, embedded=embedded), 12.5))
    with Progress(written.append).ingesting("sqlite-hybrid", scope, 120, restart=True):
        report_activity(f"loading the embedding model {BUNDLED_MODEL} (once per process)")  # what the embedder says
    answering = AnsweringProgress(lambda line: None)
    answering.start("sqlite-hybrid", scope, 24)
    written += [answering.line(0, 1, 3.0), answering.line(5, 1, 30.0), answering.line(24, 0, 60.0)]
    assert {shape(line) for line in sample} <= {shape(line) for line in written}, (sample, written)
