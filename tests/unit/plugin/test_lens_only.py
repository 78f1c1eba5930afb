from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_lens.plugin.lens_only import may_hold_lens_tests, selects_only_lens


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
        ("def test_plain(): assert 'lens' in 'lens_cases'", False),
        ("import pytest\n@pytest.mark.lens_conformance('x:Y')\ndef test_c(lens_conformance): pass", False),
        ("def test_broken(:", True),  # pytest reports the syntax error, as it would have
    ],
)
def test_a_module_may_hold_lens_tests_when_its_source_says_so(tmp_path: Path, source: str, holds: bool) -> None:
    path = tmp_path / "test_module.py"
    path.write_text(textwrap.dedent(source))
    assert may_hold_lens_tests(path) is holds
