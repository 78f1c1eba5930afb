"""How the benchmarks start a pytest-lens run in a process of its own: only the plugins a LENS run needs, quietly.

Imported by the scripts next to it (``python benchmarks/NAME.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import sys

#: The plugins a measured run leaves out: the cache, hypothesis, xdist and anyio load and hook in for nothing here.
UNNEEDED_PLUGINS = ("no:cacheprovider", "no:hypothesispytest", "no:xdist", "no:anyio")


def pytest_command(*arguments: str) -> list[str]:
    """``python -m pytest -q`` with :data:`UNNEEDED_PLUGINS` left out, then ``arguments``."""
    command = [sys.executable, "-m", "pytest"]
    for plugin in UNNEEDED_PLUGINS:
        command += ["-p", plugin]
    return [*command, "-q", *arguments]
