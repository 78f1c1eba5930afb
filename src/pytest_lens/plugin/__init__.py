"""The pytest layer: the only layer that imports pytest or xdist.

This package is the plugin pytest loads (the ``pytest11`` entry point ``lens``, or ``-p pytest_lens.plugin``):
it carries the hooks and fixtures of :mod:`pytest_lens.plugin.hooks`. Beside them: options, xdist support,
warm-ups, collector tuning, the ``-m lens`` collection shortcut, JUnit properties and the conformance plugin.
"""

from pytest_lens.plugin.hooks import (
    lens_adapter,
    lens_case,
    lens_run,
    lens_runtime,
    lens_session,
    pytest_addhooks,
    pytest_addoption,
    pytest_configure,
    pytest_plugins,
)

__all__ = [
    "lens_adapter",
    "lens_case",
    "lens_run",
    "lens_runtime",
    "lens_session",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_configure",
    "pytest_plugins",
]
