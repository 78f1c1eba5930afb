"""What the interface tests need: the libraries (extras), the real MCP memory server (from npm) and PostgreSQL.

Outside CI a missing one skips its tests, saying how to install it; under ``CI=true`` it fails them: CI installs
all of them itself (.ci/run), so a missing one is a broken CI, never a quiet skip.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

#: The npm package and the version .ci/run installs.
MEMORY_SERVER = "@modelcontextprotocol/server-memory"
#: Where .ci/run installs it (``npm install --prefix``), relative to the repository root.
CI_PREFIX = Path(__file__).resolve().parents[2] / ".ci" / "npm"


def on_ci() -> bool:
    """Whether ``CI`` is set to a true value."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def missing(message: str) -> NoReturn:
    """Skip the test (the module, at import time) saying what is missing; fail it under ``CI=true``."""
    if on_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def require(module: str, install: str) -> None:
    """Import ``module`` or skip (fail under ``CI=true``) saying what to install."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        missing(f"{module} is not installed ({exc}): pip install {install}")


def memory_server_command() -> str:
    """The command line that starts the real memory server.

    ``LENS_MCP_MEMORY_SERVER`` (a command line) wins; else ``mcp-server-memory`` under ``LENS_NPM_PREFIX`` or
    ``.ci/npm`` (where .ci/run installs it). Without one the test skips, saying how to install it; under
    ``CI=true`` it fails instead: CI installs the server itself, so a missing one is a broken CI, not a skip.
    """
    given = os.environ.get("LENS_MCP_MEMORY_SERVER", "").strip()
    if given:
        return given
    for prefix in (os.environ.get("LENS_NPM_PREFIX", ""), str(CI_PREFIX)):
        if prefix:
            binary = Path(prefix) / "node_modules" / ".bin" / "mcp-server-memory"
            if binary.exists():
                node = shutil.which("node") or "node"
                return shlex.join([node, str(binary.resolve())])
    missing(
        f"the MCP memory server is not installed: npm install --prefix {CI_PREFIX} {MEMORY_SERVER} "
        "(or set LENS_NPM_PREFIX to an npm prefix holding it, or LENS_MCP_MEMORY_SERVER to its command line)"
    )
