"""Which test files a ``pytest -m lens`` run needs to import.

``-m lens`` keeps only items marked ``lens``: the built-in LENS questions, and test
functions of the user's that take ``lens_case`` or carry the ``lens`` mark. Every other
test module would be imported only to be deselected (in a project with a thousand tests
that is most of the start-up time, and an import error there would stop a LENS run that
needs none of it). When the mark expression can only select ``lens`` items, the plugin
skips the test files that cannot hold one.

The two errors are not alike: importing a file that holds no LENS test costs start-up
time; skipping one that does loses the user's LENS tests without a word (pytest runs the
built-in questions in their place). So the check is textual and errs towards importing.
A module may hold LENS tests when its code (comments and strings aside) says
``lens`` as a name in any spelling (``@pytest.mark.lens``, ``@mark.lens``, ``@m.lens``,
``pytestmark = [pt.mark.lens]``, ``pytest.param(..., marks=...)``, ``add_marker("lens")``),
names a LENS fixture, could add a mark by a computed name (``getattr(pytest.mark, name)``,
``add_marker``) or loads plugins (``pytest_plugins``). A conftest in its directory or
above, and a plugin module of the user's project, keep it when they define fixtures on the
LENS fixtures, add marks, load plugins, or implement a collection hook (saying ``lens``
alone marks nothing there: a conftest that names a ``lens`` data directory keeps the
shortcut). Out of reach: a test that reaches ``lens_case``
only through a fixture it imports from a helper module, or a mark named in such a
module; name that file on the command line (always collected), or say more than
``lens`` in ``-m``.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["LensFileFilter", "lens_file_filter", "may_add_marks", "may_hold_lens_tests", "selects_only_lens"]

# ``lens``, ``(lens)``, or ``lens and <anything>``: expressions no unmarked item can satisfy.
_ONLY_LENS = re.compile(r"\s*(?:lens|\(\s*lens\s*\))(?:\s+and\s+.+)?\s*", re.DOTALL)

# Each a word (the text before it is no letter, digit, underscore or hyphen), searched in the lower-cased source;
# every pattern starts with a literal, which lets ``re`` skip ahead (one alternation of them all scans ~1 MB/s).
#: The mark as a name in code (``.lens``, ``@m.lens``, ``LENS = ...``). A string ``"lens"`` (a data path, a suite name)
#: marks a test only through a computed mark (``add_marker``, ``getattr(pytest.mark, ...)``, ``Mark(...)``), which is
#: searched for itself: this one is looked for in the code with every string blanked out.
_LENS_NAME = r"lens\b"
#: The fixtures that make a test using them (or a fixture built on them) a LENS question (``lens_adapter`` and
#: ``lens_run`` need ``lens_case``; the others are named for good measure); also as one-word strings (``usefixtures``).
_LENS_FIXTURES = r"lens_(?:case|run|adapter|session|runtime)\b"
#: A mark by a computed name, or plugins that this module loads (they could add any mark anywhere).
_COMPUTES_MARKS = (r"getattr\s*\(\s*[\w.]*mark\b", r"mark(?:decorator)?\s*\(", r"add_marker\b", r"own_markers\b", r"pytest_plugins\b")
#: What else a conftest or plugin module can reach other modules' tests with: saying ``lens`` alone (a path, a fixture
#: ``lens_scope``) marks nothing there.
_ADDS_MARKS = (
    r"pytestmark\b",
    r"pluginmanager\b",
    r"pytest_(?:collection\w*|itemcollected|generate_tests|pycollect_\w+|collect_file|collect_directory|make_collect_report)\b",
)


def _compiled(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


#: Anything a test module may hold a LENS test by, searched first in its whole source (comments and strings too).
_TEST_MODULE = _compiled(_LENS_NAME, _LENS_FIXTURES, *_COMPUTES_MARKS)
#: Then: in its code with comments and prose strings blanked out, and the mark's name with every string blanked out.
_NAMED_IN_TEST_MODULE = _compiled(_LENS_FIXTURES, *_COMPUTES_MARKS)
_BARE_LENS = _compiled(_LENS_NAME)
_MARKING_MODULE = _compiled(_LENS_FIXTURES, *_COMPUTES_MARKS, *_ADDS_MARKS)


def selects_only_lens(markexpr: str | None) -> bool:
    """Whether the ``-m`` expression rejects every item without the ``lens`` mark."""
    return bool(markexpr) and _ONLY_LENS.fullmatch(markexpr or "") is not None


def may_hold_lens_tests(path: Path) -> bool:
    """Whether the test module at ``path`` may define ``lens``-marked tests (when in doubt: yes)."""
    source = _source(path)
    if source is None:
        return True  # let pytest import it and report what is wrong
    if not _says(_TEST_MODULE, source.lower()):
        return False  # most modules never say any of it
    with_words, bare = _code_of(source)
    return _says(_NAMED_IN_TEST_MODULE, with_words.lower()) or _says(_BARE_LENS, bare.lower())


def may_add_marks(path: Path) -> bool:
    """Whether a conftest or plugin module at ``path`` may mark other modules' tests ``lens``."""
    return _matches(_MARKING_MODULE, path)


def _source(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def _matches(patterns: tuple[re.Pattern[str], ...], path: Path) -> bool:
    source = _source(path)
    if source is None:
        return True  # let pytest import it and report what is wrong
    # Most modules never say any of it; those that do may say it only in a comment or a message.
    return _says(patterns, source.lower()) and _says(patterns, _code_of(source)[0].lower())


def _says(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    """Whether one of ``patterns`` matches ``text`` at the start of a word."""
    for pattern in patterns:
        for match in pattern.finditer(text):
            start = match.start()
            if start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_-"):  # "--lens-..." is an option
                return True
    return False


#: A string literal that is one word (``"lens"``, ``'lens_case'``): a mark or fixture name, not prose.
_WORD_STRING = re.compile(r"""[rRuUbB]{0,2}('{1,3}|"{1,3})\w+\1""")


def _code_of(source: str) -> tuple[str, str]:
    """``source`` with comments and prose strings blanked out, and with every string blanked out (one tokenizing).

    Prose strings are those of more than one word; a one-word string (``"lens_case"``) may name a fixture or mark.
    Both are all of ``source`` when it does not tokenize.
    """
    lines = io.StringIO(source).readlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    with_words, bare = list(source), list(source)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in (tokenize.COMMENT, tokenize.STRING):
                continue
            start = offsets[token.start[0] - 1] + token.start[1]
            end = offsets[token.end[0] - 1] + token.end[1]
            bare[start:end] = " " * (end - start)
            if token.type == tokenize.COMMENT or not _WORD_STRING.fullmatch(token.string):
                with_words[start:end] = " " * (end - start)
    except (tokenize.TokenError, SyntaxError):
        return source, source  # cannot tell code from prose: judge all of it
    return "".join(with_words), "".join(bare)


class LensFileFilter:
    """Decides, file by file, whether a ``-m lens`` run may skip importing a test module.

    ``confcutdir`` is where pytest stops looking upwards for conftests (``None``: conftests
    are not loaded); ``plugin_files`` are the source files of the user's project plugins
    (``-p``, entry points of a project installed in place), any of which can mark any test.
    """

    def __init__(self, confcutdir: Path | None, plugin_files: Iterable[Path] = ()) -> None:
        self.confcutdir = confcutdir
        #: A project plugin that may add marks makes every module a possible holder of LENS tests.
        self.plugins_may_mark = any(may_add_marks(path) for path in plugin_files)
        self._directory_may_mark: dict[Path, bool] = {}

    def may_skip(self, path: Path) -> bool:
        """Whether the test module at ``path`` surely holds no LENS test."""
        if self.plugins_may_mark or self._marked_from_above(path.parent):
            return False
        return not may_hold_lens_tests(path)

    def _marked_from_above(self, directory: Path) -> bool:
        """Whether a conftest pytest loads for ``directory`` (its own or one above) may add the mark."""
        if self.confcutdir is None or directory in self.confcutdir.parents:
            return False  # pytest loads no conftest above its confcutdir
        cached = self._directory_may_mark.get(directory)
        if cached is None:
            conftest = directory / "conftest.py"
            cached = (conftest.is_file() and may_add_marks(conftest)) or (
                directory.parent != directory and self._marked_from_above(directory.parent)
            )
            self._directory_may_mark[directory] = cached
        return cached


#: Plugins that never mark a user's test ``lens`` by a computed name: pytest's own, ours, xdist's.
_KNOWN_PLUGINS = ("_pytest", "pytest", "pluggy", "xdist", "pytest_lens", "lens_fixtures")


def lens_file_filter(config: pytest.Config) -> LensFileFilter:
    """The filter for this run: pytest's conftest cut-off and the user's own plugin modules."""
    confcutdir: Path | None = None
    if not config.getoption("noconftest"):
        # pytest's default when --confcutdir is not given: the ini file's directory, else the rootdir.
        given = config.getoption("confcutdir")
        confcutdir = Path(given).resolve() if given else (config.inipath.parent if config.inipath else config.rootpath)
    plugin_files = [
        Path(plugin.__file__)
        for plugin in config.pluginmanager.get_plugins()
        if isinstance(plugin, ModuleType)
        and plugin.__file__
        and plugin.__name__.partition(".")[0] not in _KNOWN_PLUGINS
        # Installed third-party plugins are trusted not to mark a project's tests "lens"; a conftest is judged
        # for the directories below it.
        and not {"site-packages", "dist-packages"} & set(Path(plugin.__file__).parts)
        and Path(plugin.__file__).name != "conftest.py"
    ]
    return LensFileFilter(confcutdir, plugin_files)
