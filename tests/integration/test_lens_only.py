"""``pytest -m lens`` imports only the test files that may hold LENS tests: every spelling of one is collected.

Each case is a real pytest run (``--collect-only``: collection is what is tested) with one user test module that
holds a LENS test in one spelling, beside a module that raises when imported. The LENS test must be selected; a
module the plugin skipped would lose it silently (and for a ``lens_case`` test, pytest would run the built-in
LENS questions in its place).
"""

from __future__ import annotations

import textwrap

import pytest

from pytest_lens.plugin import options
from tests.support import small_dataset, write_dataset

NO_CACHE = ("-p", "no:cacheprovider")
#: A module that is no LENS test: importing it fails the run, so its absence from the output proves it was skipped.
UNRELATED = "raise RuntimeError('imported although -m lens selects nothing here')\n\ndef test_unrelated():\n    pass\n"

#: name -> (files to write, the user's LENS test that ``-m lens`` must select)
SPELLINGS: dict[str, tuple[dict[str, str], str]] = {
    "pytest.mark.lens": (
        {"test_user.py": "import pytest\n\n@pytest.mark.lens\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "from pytest import mark": (
        {"test_user.py": "from pytest import mark\n\n@mark.lens\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "import pytest as pt": (
        {"test_user.py": "import pytest as pt\n\n@pt.mark.lens\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "from pytest import mark as m": (
        {"test_user.py": "from pytest import mark as m\n\n@m.lens\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "a marked class": (
        {"test_user.py": "import pytest\n\n@pytest.mark.lens\nclass TestMine:\n    def test_mine(self):\n        pass\n"},
        "test_user.py::TestMine::test_mine",
    ),
    "pytestmark = mark": (
        {"test_user.py": "import pytest\n\npytestmark = pytest.mark.lens\n\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "pytestmark = [marks]": (
        {"test_user.py": "import pytest\n\npytestmark = [pytest.mark.lens, pytest.mark.slow]\n\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "pytest.param(marks=...)": (
        {
            "test_user.py": textwrap.dedent(
                """
                import pytest

                @pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.lens)])
                def test_mine(n):
                    pass
                """
            )
        },
        "test_user.py::test_mine[[]2[]]",
    ),
    "a mark looked up by name": (
        {"test_user.py": "import pytest\n\nMARK = 'le' + 'ns'\n\n@getattr(pytest.mark, MARK)\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine",
    ),
    "the lens_case fixture": (
        {"test_user.py": "def test_mine(lens_case, lens_run):\n    pass\n"},
        "test_user.py::test_mine[[]*[]]",
    ),
    "the lens_adapter fixture": (
        {"test_user.py": "def test_mine(lens_adapter):\n    pass\n"},
        "test_user.py::test_mine[[]*[]]",
    ),
    "usefixtures('lens_case')": (
        {"test_user.py": "import pytest\n\n@pytest.mark.usefixtures('lens_case')\ndef test_mine():\n    pass\n"},
        "test_user.py::test_mine[[]*[]]",
    ),
    "a conftest fixture built on lens_case": (
        {
            "conftest.py": "import pytest\n\n@pytest.fixture\ndef question(lens_case):\n    return lens_case\n",
            "tests/test_user.py": "def test_mine(question):\n    pass\n",
        },
        "tests/test_user.py::test_mine[[]*[]]",
    ),
    "a conftest that adds the mark": (
        {
            "conftest.py": textwrap.dedent(
                """
                import pytest

                def pytest_collection_modifyitems(items):
                    for item in items:
                        if item.path.name == "test_user.py":
                            item.add_marker(pytest.mark.lens)
                """
            ),
            "tests/deeper/test_user.py": "def test_mine():\n    pass\n",
        },
        "tests/deeper/test_user.py::test_mine",
    ),
    "a conftest that adds the mark by a computed name": (
        {
            # Marks named after the directory: neither file says "lens".
            "conftest.py": textwrap.dedent(
                """
                def pytest_collection_modifyitems(items):
                    for item in items:
                        item.add_marker(item.path.parent.name)
                """
            ),
            "lens/test_user.py": "def test_mine():\n    pass\n",
        },
        "lens/test_user.py::test_mine",
    ),
    "a project plugin loaded with -p": (
        {
            "myplugin.py": "def pytest_itemcollected(item):\n    if item.name == 'test_mine':\n        item.add_marker('le' + 'ns')\n",
            "test_user.py": "def test_mine():\n    pass\n",
        },
        "test_user.py::test_mine",
    ),
}


@pytest.fixture
def dataset(pytester: pytest.Pytester) -> str:
    return f"{options.DATASET}={write_dataset(pytester.path / 'small.json', small_dataset())}"


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_every_spelling_of_a_lens_test_is_collected_under_m_lens(pytester: pytest.Pytester, dataset: str, spelling: str) -> None:
    files, nodeid = SPELLINGS[spelling]
    for name, source in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    pytester.syspathinsert()  # for "-p myplugin"
    plugin = ("-p", "myplugin") if "myplugin.py" in files else ()
    result = pytester.runpytest("-m", "lens", "--lens-adapter=bm25", dataset, "--collect-only", "-q", *plugin, *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines([nodeid])


def test_an_unrelated_module_is_still_not_imported(pytester: pytest.Pytester, dataset: str) -> None:
    pytester.makepyfile(
        # An ordinary project: fixtures and options in a conftest (one of them about a "lens" data directory, as this
        # repository's own conftest has), marks of its own, a module that never says LENS.
        conftest="import pytest\n\ndef pytest_addoption(parser):\n    parser.addoption('--slow', action='store_true')\n\n"
        "@pytest.fixture\ndef db():\n    return {}\n\n"
        "@pytest.fixture\ndef lens_scope(tmp_path):\n    return tmp_path / 'datasets' / 'lens'\n",
        test_unrelated=UNRELATED,
        test_marked="import pytest\n\npytestmark = pytest.mark.slow\n\nraise RuntimeError('imported')\n",
        test_conformance="import pytest\n\n@pytest.mark.lens_conformance('x:Y')\ndef test_c(lens_conformance):\n    pass\n\n"
        "raise RuntimeError('imported')\n",
    )
    result = pytester.runpytest("-m", "lens", "--lens-adapter=bm25", dataset, "--collect-only", "-q", *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.no_fnmatch_line("*RuntimeError*")
    result.stdout.fnmatch_lines(["lens::*", "3 tests collected*"])  # the built-in questions only, nothing deselected
