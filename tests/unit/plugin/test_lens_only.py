from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_lens.plugin.lens_only import LensFileFilter, may_add_marks, may_hold_lens_tests, selects_only_lens


@pytest.mark.parametrize(
    ("expression", "only"),
    [
        ("lens", True),
        (" lens ", True),
        ("(lens)", True),
        ("lens and not slow", True),
        ("lens or slow", False),
        ("not lens", False),
        ("lens_conformance", False),
        ("slow and lens", False),  # correct but not recognised: everything is collected, as before
        ("", False),
        (None, False),
    ],
)
def test_only_expressions_that_need_the_lens_mark_narrow_collection(expression: str | None, only: bool) -> None:
    assert selects_only_lens(expression) is only


@pytest.mark.parametrize(
    ("source", "holds"),
    [
        ("def test_memory(lens_case, lens_run): pass", True),
        ("async def test_memory(*, lens_case): pass", True),
        ("import pytest\n@pytest.mark.lens\ndef test_x(): pass", True),
        ("import pytest\npytestmark = [pytest.mark.lens]", True),
        ("import pytest\n@pytest.mark.usefixtures('lens_case')\ndef test_x(): pass", True),
        ("from pytest import mark\n@mark.lens\ndef test_x(): pass", True),
        ("from pytest import mark as m\n@m.lens\ndef test_x(): pass", True),
        ("import pytest as pt\n@pt.mark.lens\ndef test_x(): pass", True),
        ("import pytest\n@pytest.mark .lens\ndef test_x(): pass", True),
        ("import pytest\npytestmark = pytest.mark.lens", True),
        ("import pytest\n@pytest.mark.parametrize('n', [pytest.param(1, marks=pytest.mark.lens)])\ndef test_x(n): pass", True),
        ("from marks import LENS\n@LENS\ndef test_x(): pass", True),
        ("def test_x(lens_adapter): pass", True),
        ("import pytest\n@getattr(pytest.mark, NAME)\ndef test_x(): pass", True),  # a computed mark name
        ("def pytest_generate_tests(metafunc):\n    metafunc.definition.add_marker(NAME)", True),
        ("pytest_plugins = ['myplugin']", True),  # a plugin can mark anything
        ("def test_x(request): request.node.add_marker('lens')", True),
        ("def test_plain(): assert 'lenses' in 'lens_cases'", False),
        ("# run with: pytest -m lens\ndef test_plain(): pass", False),  # prose: comments and messages
        ('"""Not the pytest-lens plugin."""\ndef test_plain(): raise RuntimeError("not -m lens")', False),
        ('"""unterminated\ndef test_plain(): pass  # lens', True),  # cannot tell code from prose
        ("import pytest\n@pytest.mark.lens_conformance('x:Y')\ndef test_c(lens_conformance): pass", False),
        ("import pytest\npytestmark = pytest.mark.slow\n@pytest.mark.parametrize('n', [1])\ndef test_x(n): pass", False),
        ("def test_broken(:", False),  # holds no LENS test: pytest would not have collected one
        ("DATA = Path('datasets') / 'lens'\ndef test_plain(): assert suite == \"lens\"", False),  # a string is no mark
        ("import pytest\nLENS = pytest.mark.lens\n@LENS\ndef test_x(): pass", True),
    ],
)
def test_a_module_may_hold_lens_tests_when_its_source_says_so(tmp_path: Path, source: str, holds: bool) -> None:
    path = tmp_path / "test_module.py"
    path.write_text(textwrap.dedent(source))
    assert may_hold_lens_tests(path) is holds


@pytest.mark.parametrize(
    ("source", "marks"),
    [
        ("import pytest\n@pytest.fixture\ndef db(): return {}\ndef pytest_addoption(parser): pass", False),
        ("def pytest_configure(config):\n    config.addinivalue_line('markers', 'slow: slow')", False),
        ("import pytest\n@pytest.fixture\ndef question(lens_case): return lens_case", True),
        ("def pytest_collection_modifyitems(items):\n    for item in items: item.add_marker(item.path.parent.name)", True),
        ("def pytest_itemcollected(item): pass", True),
        ("pytest_plugins = ['myplugin']", True),
        ("def pytest_configure(config):\n    config.pluginmanager.register(Marker())", True),
    ],
)
def test_a_conftest_may_add_marks_when_its_source_says_so(tmp_path: Path, source: str, marks: bool) -> None:
    path = tmp_path / "conftest.py"
    path.write_text(source)
    assert may_add_marks(path) is marks


def test_a_conftest_that_may_add_marks_keeps_every_module_below_it(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "c").mkdir()
    for module in ("a/b/test_x.py", "c/test_y.py"):
        (tmp_path / module).write_text("def test_plain(): pass")
    (tmp_path / "a" / "conftest.py").write_text("def pytest_collection_modifyitems(items): pass")
    files = LensFileFilter(confcutdir=tmp_path)
    assert not files.may_skip(tmp_path / "a" / "b" / "test_x.py")
    assert files.may_skip(tmp_path / "c" / "test_y.py")
    # pytest loads no conftest above its confcutdir, nor any under --noconftest.
    assert LensFileFilter(confcutdir=tmp_path / "a" / "b").may_skip(tmp_path / "a" / "b" / "test_x.py")
    assert LensFileFilter(confcutdir=None).may_skip(tmp_path / "a" / "b" / "test_x.py")


def test_a_project_plugin_that_may_add_marks_keeps_every_module(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_plain(): pass")
    (tmp_path / "quiet.py").write_text("def pytest_addoption(parser): pass")
    (tmp_path / "marker.py").write_text("def pytest_itemcollected(item): item.add_marker(NAME)")
    assert LensFileFilter(tmp_path, [tmp_path / "quiet.py"]).may_skip(tmp_path / "test_x.py")
    assert not LensFileFilter(tmp_path, [tmp_path / "quiet.py", tmp_path / "marker.py"]).may_skip(tmp_path / "test_x.py")
