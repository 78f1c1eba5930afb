"""Registering the option table with pytest, and reading it into :class:`LensSettings`.

The options themselves (flags, ini keys, parsers, help) are rows of :mod:`pytest_lens.records.options`;
their constants are re-exported here for tests and docs. Nothing heavy is imported here: the plugin loads
this module on every pytest run.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.llm.settings import LLMSettings
from pytest_lens.records.options import *  # noqa: F403  (the flag constants, re-exported)
from pytest_lens.records.options import (
    ADAPTER,
    ADAPTER_OPTION,
    BASELINE,
    COMPARE_FAIL,
    CONTROLS,
    HTML,
    MARGIN,
    MUTANTS,
    OPTIONS,
    RERUN,
    RESUME,
    SAVE,
    SCORING,
    SHARD,
    WEIGHTS,
    Option,
    option,
)
from pytest_lens.records.options import __all__ as _table_names
from pytest_lens.records.settings import AdapterSpec, LensSettings, parse_adapter_spec, parse_option_value

__all__ = [*_table_names, "add_options", "given_fields", "lens_requested", "read_options", "read_settings", "register", "selection_of"]

GROUP = ("lens", "LENS memory benchmark (pytest-lens)")


def register(parser: pytest.Parser, rows: Iterable[Option]) -> None:
    """Register each row as a ``--lens-*`` option in the ``lens`` group and its ini key.

    The pytest defaults are "not given" (``None``, or ``[]`` for a repeatable option), so that
    :func:`read_options` can tell a value given nowhere and leave the settings' own default.
    """
    rows = tuple(rows)  # options first, then ini keys: pytest --help lists each kind in the order registered
    group = parser.getgroup(*GROUP)
    for row in rows:
        extra: dict[str, Any] = {"metavar": row.metavar} if row.metavar else {}
        if row.choices:
            extra["choices"] = row.choices
        group.addoption(row.flag, action=row.action, default=[] if row.repeatable else None, help=row.help, **extra)
    for row in rows:
        if row.ini is not None:
            parser.addini(row.ini, type=row.ini_kind, default=[] if row.repeatable else None, help=row.ini_help)


def add_options(parser: pytest.Parser) -> None:
    """Register the ``--lens-*`` options and ``lens_*`` ini keys."""
    register(parser, OPTIONS)


def lens_requested(config: pytest.Config) -> bool:
    """pytest-lens does anything only when an adapter is configured."""
    row = option(ADAPTER)
    return bool(config.getoption(row.flag) or config.getini(str(row.ini)))


def _where(config: pytest.Config, row: Option, from_ini: bool) -> str:
    """The option at fault: its flag, and its ini key and file when the value came from there."""
    if not from_ini:
        return row.flag
    return f"{row.flag} (ini {row.ini}{f' in {config.inipath}' if config.inipath else ''})"


def _parse(config: pytest.Config, row: Option, text: Any, from_ini: bool) -> Any:
    try:
        return row.parse(str(text))  # a "paths" ini entry is a Path already: it round-trips
    except ValueError as exc:
        raise pytest.UsageError(f"{_where(config, row, from_ini)}: {exc}") from None


def read_options(config: pytest.Config, rows: Iterable[Option]) -> dict[str, Any]:
    """Each row given on the command line or in the ini file, parsed (a tuple for a repeatable one), by flag.

    The command line wins over the ini key; an empty ini value counts as not given, an empty command-line value
    is an error (it is a value left out, not a choice). Rows given nowhere
    are left out. :class:`pytest.UsageError` names the option, and the ini key and file, at fault.
    """
    values: dict[str, Any] = {}
    for row in rows:
        given = config.getoption(row.flag)
        from_ini: Any = None if row.ini is None else config.getini(row.ini)
        if row.repeatable:
            entries = [(entry, True) for entry in from_ini or ()] if row.extend or not given else []
            entries += [(entry, False) for entry in given]
            if entries:
                values[row.flag] = tuple(_parse(config, row, entry, ini) for entry, ini in entries)
        elif row.switch:
            value = from_ini if given is None else given
            if value is not None:
                values[row.flag] = bool(value)
        elif given == "":  # ``--lens-shard=`` with its value left out (an unset variable in a CI script, say)
            raise pytest.UsageError(f"{row.flag}= was given no value: give one, or leave the option out for its default")
        elif given is not None:
            values[row.flag] = _parse(config, row, given, False)
        elif from_ini not in (None, ""):
            values[row.flag] = _parse(config, row, from_ini, True)
    return values


def given_fields(values: dict[str, Any], rows: Iterable[Option]) -> dict[str, Any]:
    """The values :func:`read_options` found, by the settings field each row fills (rows without one left out)."""
    return {row.field: values[row.flag] for row in rows if row.field is not None and row.flag in values}


def read_settings(config: pytest.Config) -> LensSettings:
    """Read every option once; :class:`pytest.UsageError` names the option at fault."""
    values = read_options(config, OPTIONS)
    fields = given_fields(values, OPTIONS)
    llm = {name.removeprefix("llm."): value for name, value in fields.items() if name.startswith("llm.")}
    settings = {name: value for name, value in fields.items() if not name.startswith("llm.")}
    settings["adapters"] = _adapter_specs(list(values.get(ADAPTER, ())), list(values.get(ADAPTER_OPTION, ())))
    settings["weights"] = _weights(values)
    if "suites" in settings:
        settings["suites"] = tuple(dict.fromkeys(settings["suites"]))
    if "accept_unlike" in settings:  # each entry a comma list
        settings["accept_unlike"] = tuple(dict.fromkeys(name for entry in settings["accept_unlike"] for name in entry))
    if config.getoption("--lens-conformance", False):  # the conformance suite replaces the built-in LENS questions
        settings["builtin_tests"] = False
    if MARGIN in values and not values.get(COMPARE_FAIL):
        raise pytest.UsageError(f"{MARGIN} is the margin of {COMPARE_FAIL}'s non-inferiority gate: add {COMPARE_FAIL} and {BASELINE}")
    if COMPARE_FAIL in values and values[COMPARE_FAIL] and BASELINE not in values:
        raise pytest.UsageError(f"{COMPARE_FAIL} needs a baseline: add {BASELINE}=NAME|PATH (a run saved with {SAVE}=NAME)")
    if SHARD in values and SAVE in values:
        raise pytest.UsageError(f"{SAVE} saves a whole run, not one shard's part: save the merged run (lens merge ... --save NAME)")
    if RERUN in values and RESUME not in values:
        raise pytest.UsageError(f"{RERUN} reruns questions kept by a resumable run: add {RESUME}=DIR (the directory it wrote)")
    if HTML in values:
        _check_html()
    settings.update(_control_settings(values))
    return LensSettings(
        **settings,
        llm=LLMSettings(**llm),
        rootdir=Path(config.rootpath),
        invocation_dir=Path(config.invocation_params.dir),
        selection=selection_of(config),
    )


def selection_of(config: pytest.Config) -> tuple[str, ...]:
    """The arguments of pytest that narrow which tests run, as given (``-k``, ``-m``, ``--deselect``, ``--lf``, ``--sw``, paths).

    A shard records them: ``lens merge`` joins shards that left questions out only when all ran under the same ones.
    """
    found: list[str] = []
    for flag, name in (("-k", "keyword"), ("-m", "markexpr")):
        if value := config.getoption(name, ""):
            found += [flag, str(value)]
    for value in config.getoption("deselect", None) or ():
        found += ["--deselect", str(value)]
    for flag, name in (("--lf", "lf"), ("--sw", "stepwise")):
        if config.getoption(name, False):
            found.append(flag)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        found += [str(arg) for arg in config.args]
    return tuple(found)


def _weights(values: dict[str, Any]) -> dict[str, float]:
    """``--lens-weights`` on top of the ``--lens-scoring`` preset."""
    from pytest_lens.records.options import DEFAULTS
    from pytest_lens.scoring.composite import parse_weights, preset_weights

    try:
        return parse_weights(list(values.get(WEIGHTS, ())), preset_weights(values.get(SCORING, DEFAULTS.scoring)))
    except ValueError as exc:
        raise pytest.UsageError(f"{WEIGHTS}: {exc}") from None


def _check_html() -> None:
    """``--lens-html`` (or ``lens_html``): a usage error up front when the report's libraries are missing."""
    from pytest_lens.extras import missing_extra

    missing = missing_extra("html", HTML)
    if missing is not None:
        raise pytest.UsageError(missing)


def _control_settings(values: dict[str, Any]) -> dict[str, Any]:
    """``--lens-controls`` and ``--lens-mutants`` (checked against the known mutants)."""
    controls = bool(values.get(CONTROLS, False))
    names = [name for entry in values.get(MUTANTS, ()) for name in entry]
    if not names:
        return {"controls": controls, "mutants": None}
    if not controls:
        raise pytest.UsageError(f"{MUTANTS} chooses the mutants {CONTROLS} adds: add {CONTROLS}")
    if names == ["none"]:
        return {"controls": True, "mutants": ()}
    from pytest_lens.controls.plan import mutant_names

    try:
        return {"controls": True, "mutants": tuple(mutant_names(names))}
    except ValueError as exc:
        raise pytest.UsageError(f"{MUTANTS}: {exc}") from None


def _adapter_specs(texts: list[str], option_texts: list[str]) -> tuple[AdapterSpec, ...]:
    parsed: list[tuple[str, str]] = []
    for text in texts:
        label, target = parse_adapter_spec(text)
        if not target:
            raise pytest.UsageError(f"{ADAPTER}={text!r}: empty adapter")
        parsed.append((label or _default_label(target), target))
    labels = [label for label, _ in parsed]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise pytest.UsageError(
            f"{ADAPTER}: adapter label {duplicates[0]!r} is used twice; name them apart with LABEL=TARGET (e.g. a={duplicates[0]})"
        )
    options: dict[str, dict[str, Any]] = {label: {} for label in labels}
    for text in option_texts:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise pytest.UsageError(f"{ADAPTER_OPTION}={text!r}: expected [LABEL.]KEY=VALUE")
        scope_label, dot, name = key.rpartition(".")
        colon_label = key.partition(":")[0]
        if not dot and ":" in key and colon_label in options:
            raise pytest.UsageError(
                f"{ADAPTER_OPTION}={text!r}: an option of one adapter is LABEL.KEY=VALUE "
                f"({colon_label}.{key.partition(':')[2]}={raw.strip()})"
            )
        try:
            value = parse_option_value(raw)
        except ValueError as exc:
            raise pytest.UsageError(f"{ADAPTER_OPTION} {key}: {exc}") from None
        if dot and scope_label in options:
            options[scope_label][name] = value
        elif dot:
            raise pytest.UsageError(f"{ADAPTER_OPTION}={text!r}: no adapter labelled {scope_label!r} (labels: {', '.join(labels)})")
        else:
            for label in labels:
                options[label][key] = value
    return tuple(AdapterSpec(label, target, options[label]) for label, target in parsed)


def _default_label(target: str) -> str:
    """A registered name labels itself; ``pkg.mod:Class`` is labelled ``Class``; ``scheme:COMMAND LINE`` is ``scheme``.

    A command line (``mcp:npx server --api-key=X``) never becomes the label: labels are in every test id, line and
    file of the run, and its arguments may hold a secret.
    """
    scheme, colon, rest = target.partition(":")
    if colon and any(character.isspace() for character in rest.strip()):
        return scheme
    return target.rpartition(":")[2].rpartition(".")[2] if ":" in target else target
