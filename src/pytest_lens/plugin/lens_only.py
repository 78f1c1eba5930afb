"""Which test files a ``pytest -m lens`` run needs to import.

``-m lens`` keeps only items marked ``lens``: the built-in LENS questions, and test
functions of the user's that take ``lens_case`` or carry ``@pytest.mark.lens``. Every
other test module would be imported only to be deselected (in a project with a thousand
tests that is most of the start-up time, and an import error there would stop a LENS
run that needs none of it). When the mark expression can only select ``lens`` items,
the plugin skips test files whose source shows neither.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["may_hold_lens_tests", "selects_only_lens"]

# ``lens``, ``(lens)``, or ``lens and <anything>``: expressions no unmarked item can satisfy.
_ONLY_LENS = re.compile(r"\s*(?:lens|\(\s*lens\s*\))(?:\s+and\s+.+)?\s*", re.DOTALL)


def selects_only_lens(markexpr: str | None) -> bool:
    """Whether the ``-m`` expression rejects every item without the ``lens`` mark."""
    return bool(markexpr) and _ONLY_LENS.fullmatch(markexpr or "") is not None


def may_hold_lens_tests(path: Path) -> bool:
    """Whether the module at ``path`` may define ``lens``-marked tests (when in doubt: yes)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return True  # let pytest import it and report what is wrong
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            arg.arg == "lens_case" for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
        ):
            return True
        if _is_lens_mark(node) or (isinstance(node, ast.Constant) and node.value == "lens_case"):  # usefixtures("lens_case")
            return True
    return False


def _is_lens_mark(node: ast.AST) -> bool:
    """``<something>.mark.lens``."""
    return isinstance(node, ast.Attribute) and node.attr == "lens" and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
