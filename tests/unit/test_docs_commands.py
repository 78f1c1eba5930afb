"""Every ``--lens-...`` command line the documentation shows parses, and every adapter it names takes its options.

The lines are read from README.md and every page under docs/: code blocks (with backslash continuations) and
inline code. Each line's ``--lens-*`` arguments go through pytest's own option parser and pytest-lens's settings
reader, as a real run reads them; an adapter the line names that loads here (a reference adapter, a worked
example) must accept every ``--lens-adapter-option`` key given to it. Placeholders (``...``) are left out; an
adapter that exists only in prose (``mypkg.memory:MyAdapter``) is parsed but not loaded.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
from pytest_lens.extras import missing_extra
from pytest_lens.plugin.options import OPTIONS, read_options, read_settings
from pytest_lens.runs.setup import LensConfigError, check_adapters

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class DocCommand:
    """One command line as a page shows it.

    ``whole``: a command (``pytest ...``) or options that name an adapter, read as a run reads them, rules between
    options included; otherwise options mentioned in prose (``--lens-rerun=faults``), whose values alone are checked.
    """

    where: str
    line: str
    whole: bool = True


#: A command a block shows: pytest, however it is called (``.venv/bin/pytest``, ``python -m pytest``, ``$ pytest``).
COMMAND = re.compile(r"^(?:\$ )?(?:[\w./-]*/)?(?:pytest|python3? -m pytest)\s")
#: A value that stands for one the reader chooses: X, N, NAME|PATH, I/N, DIR.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_|/]*$")


def doc_commands(path: Path, name: str | None = None) -> list[DocCommand]:
    """The pytest command lines of ``path`` that pass ``--lens-`` options, in code blocks and in inline code.

    Inline code counts when it is a command (``pytest ...``) or options with values (``--lens-x=1 --lens-y=2``);
    an option named alone (``--lens-seed``) is a mention, and console output is not a command.
    """
    text = path.read_text(encoding="utf-8")
    name = name or str(path.relative_to(ROOT))
    found = []
    for block in FENCE.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        joined = re.sub(r"\\\n\s*", " ", block.group(1))  # continuation lines are one command
        lines = [line.strip() for line in joined.splitlines()]
        where = f"{name} (code block at line {first_line})"
        found += [DocCommand(where, line) for line in lines if "--lens-" in line and COMMAND.match(line)]
    for span in re.findall(r"`([^`\n]*--lens-[^`\n]*)`", FENCE.sub("", text)):
        words = span.split()
        if COMMAND.match(span + " ") or all(word.startswith("--lens-") and "=" in word for word in words):
            whole = bool(COMMAND.match(span + " ")) or any(word.startswith("--lens-adapter=") for word in words)
            found.append(DocCommand(f"{name} (inline)", span, whole))
    return found


def lens_arguments(line: str) -> list[list[str]]:
    """The ``--lens-*`` arguments of a command line, once per alternative a value offers (``4k|8k``).

    Comments, other arguments, empty values and placeholders (``...``, ``<...>``, ``NAME``) are left out.
    """
    words = shlex.split(line, comments=True)
    arguments: list[list[str]] = []
    for position, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if not flag.startswith("--lens-") or "..." in word or "<" in word or (equals and not value):
            continue
        following = words[position + 1] if position + 1 < len(words) else ""
        if not equals and following and not following.startswith("-") and following != "...":
            arguments.append([word, following])  # "--lens-x VALUE"; a switch followed by a word is argparse's to judge
            continue
        head, _, tail = value.rpartition("=")  # date_filter=callable|where|none: the alternatives are the last part's
        choices = [choice for choice in tail.split("|") if not PLACEHOLDER.match(choice)] if equals else [""]
        prefix = f"{flag}={head}=" if head else f"{flag}="
        arguments.append([prefix + choice if equals else flag for choice in choices])
    variants = []
    for alternative in range(max((len(choices) for choices in arguments), default=0)):
        variants.append([choices[min(alternative, len(choices) - 1)] for choices in arguments if choices])
    return [variant for variant in variants if variant]


def _cases() -> dict[tuple[str, ...], DocCommand]:
    """Each distinct argument list, with the first line that shows it."""
    cases: dict[tuple[str, ...], DocCommand] = {}
    for page in PAGES:
        for command in doc_commands(page):
            for arguments in lens_arguments(command.line):
                cases.setdefault(tuple(arguments), command)
    return cases


CASES = _cases()


def test_the_documentation_shows_command_lines_to_check() -> None:
    assert len(CASES) > 60
    assert any(argument.startswith("--lens-adapter-option=") for arguments in CASES for argument in arguments)


def check_arguments(pytester: pytest.Pytester, arguments: tuple[str, ...], command: DocCommand) -> None:
    """Parse ``arguments`` as a run does; fail naming the page and the line when they are refused."""
    try:
        config = pytester.parseconfig(*arguments)
        if not command.whole:
            read_options(config, OPTIONS)
            return
        settings = read_settings(config)
    except pytest.UsageError as exc:
        pytest.fail(f"{command.where}: {command.line!r} is refused: {exc}", pytrace=False)
    loadable = []
    for spec in settings.adapters:
        try:
            adapter_class = load_adapter_class(spec.target, [ROOT])
        except AdapterLoadError:
            continue  # an adapter named only in prose (mypkg.memory:MyAdapter), or one whose library is not installed
        extras = getattr(adapter_class, "lens_extras", None)
        if callable(extras) and any(missing_extra(extra, spec.target) for extra in extras(dict(spec.options))):
            continue  # its extra is not installed here (cognee has an environment of its own): the run would say so
        loadable.append(spec)
    try:
        check_adapters(replace(settings, adapters=tuple(loadable), rootdir=ROOT, invocation_dir=ROOT))
    except LensConfigError as exc:
        pytest.fail(f"{command.where}: {command.line!r} is refused: {exc}", pytrace=False)


@pytest.mark.parametrize(("arguments", "command"), list(CASES.items()), ids=[" ".join(arguments)[:80] for arguments in CASES])
def test_every_documented_command_line_parses(pytester: pytest.Pytester, arguments: tuple[str, ...], command: DocCommand) -> None:
    check_arguments(pytester, arguments, command)


def test_a_wrongly_written_option_in_a_page_is_caught(tmp_path: Path, pytester: pytest.Pytester) -> None:
    # The line docs/adapters/interfaces.md showed before issue 42, and an option bm25 does not take.
    page = tmp_path / "page.md"
    page.write_text(
        "Run it as (`--lens-adapter=mine=bm25 --lens-adapter-option=mine:max_results=10`), or:\n\n"
        "```\npytest -m lens --lens-adapter=bm25 \\\n    --lens-adapter-option=bm25.no_such_option=1   # a comment\n```\n",
        encoding="utf-8",
    )
    second, first = doc_commands(page, name="page.md")
    with pytest.raises(pytest.fail.Exception, match=r"LABEL\.KEY=VALUE \(mine\.max_results=10\)"):
        check_arguments(pytester, tuple(lens_arguments(first.line)[0]), first)
    with pytest.raises(pytest.fail.Exception, match="does not accept no_such_option"):
        check_arguments(pytester, tuple(lens_arguments(second.line)[0]), second)
