"""Fixed costs of one offline LENS run, phase by phase, with and without bytecode caching.

Runs ``pytest --lens-adapter=bm25 --lens-dataset=SCOPE --lens-budget=16k --lens-json=...`` (by
default LENS scope 01 with distractors) in a fresh process in an empty directory, ``--repeat``
times per mode, and prints the median seconds of each phase:

- start-up: the interpreter, pytest, and every installed plugin, up to ``pytest_configure``;
- LENS set-up: the session's imports, adapter loading, dataset load and validation (shown on its
  own row too), cases;
- other configure and collection (everything else up to the first test);
- question work: first test start to last test end (ingestion, retrieval, answering, scoring);
- summary: per-adapter summaries, gates, verdict and the terminal tables;
- statistics: the bootstrap intervals (and their imports);
- artifact writing: the ``--lens-json`` document;
- rest of the session end: other plugins' end-of-session hooks (hypothesis's imports hypothesis
  there when it is installed), pytest's own; then the interpreter's exit.

Modes: ``no-bytecode`` runs with ``PYTHONDONTWRITEBYTECODE=1``, as this machine does (what pip
compiled at install time is read, nothing else is written: every module of an editable install,
and every module pytest rewrites, is compiled again in every run); ``bytecode`` lets Python
and pytest write their caches (under a private ``PYTHONPYCACHEPREFIX``, warmed by one untimed
run first). The phases are read from a probe plugin (``benchmarks/overhead_probe.py``) on the
system-wide monotonic clock; total is the wall time of the process, measured from outside.

    python benchmarks/overhead.py                      # both modes, 5 runs each
    python benchmarks/overhead.py --mode bytecode --repeat 9
    python benchmarks/overhead.py --python /tmp/plain-venv/bin/python   # another install (a plain one, say)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _default_scope() -> Path:
    """LENS scope 01 in ``../shared`` next to the checkout (or an ancestor, for worktrees); ``LENS_SHARED_DIR`` overrides."""
    override = os.environ.get("LENS_SHARED_DIR")
    candidates = [Path(override)] if override else [parent / "shared" for parent in HERE.parents]
    for shared in candidates:
        if (shared / "datasets").is_dir():
            return shared / "datasets" / "lens" / "scope_01_with_distractors.json"
    return HERE.parent.parent / "shared" / "datasets" / "lens" / "scope_01_with_distractors.json"


PHASES = [
    ("start-up (to pytest_configure)", "startup"),
    ("LENS set-up", "setup"),
    ("  of which dataset load + validation", "datasets"),
    ("other configure + collection", "collection"),
    ("= to first test", "to_first_test"),
    ("question work", "questions"),
    ("summary (tables, gates, verdict)", "summary"),
    ("statistics (bootstrap CIs)", "statistics"),
    ("artifact writing (--lens-json)", "artifact"),
    ("rest of session end", "session_end"),
    ("interpreter exit", "exit"),
    ("total (wall)", "total"),
    ("cpu (user + sys)", "cpu"),
]


def _now() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def run_once(python: str, scope: Path, env: dict[str, str]) -> dict[str, float]:
    """One measured run: seconds per phase."""
    with tempfile.TemporaryDirectory() as workdir:
        probe_out = Path(workdir) / "probe.json"
        cmd = [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "overhead_probe",
            "--lens-adapter=bm25",
            f"--lens-dataset={scope}",
            "--lens-budget=16k",
            "--lens-json=run.json",
        ]
        run_env = {
            **env,
            "LENS_OVERHEAD_PROBE_OUT": str(probe_out),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = _now()
        proc = subprocess.run(cmd, cwd=workdir, env=run_env, capture_output=True, text=True, check=False)
        ended = _now()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0 or not probe_out.exists():
            raise SystemExit(f"the run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        probe = json.loads(probe_out.read_text(encoding="utf-8"))
    marks, spent = probe["marks"], probe["spent"]

    def net(*names: str) -> float:
        return sum(spent.get(name, [0.0, 0.0])[1] for name in names)

    setup = (marks["configure_lens"] - marks["configure"]) + spent["open"][0]
    summary = net("summaries", "suite_summaries", "verdict", "report")
    stats = net("statistics")
    artifact = net("artifact", "write_artifact", "save_run")
    phases = {
        "startup": marks["configure"] - started,
        "setup": setup,
        "datasets": spent["load_datasets"][0],
        "collection": marks["collected"] - marks["configure"] - setup,
        "to_first_test": marks["first_test"] - started,
        "questions": marks["last_test"] - marks["first_test"],
        "summary": summary,
        "statistics": stats,
        "artifact": artifact,
        "session_end": marks["unconfigure"] - marks["last_test"] - summary - stats - artifact,
        "exit": ended - marks["unconfigure"],
        "total": ended - started,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }
    phases["heavy_modules"] = probe["heavy"]  # type: ignore[assignment]
    return phases


def measure(python: str, scope: Path, mode: str, repeat: int) -> tuple[dict[str, float], list[str]]:
    """Median seconds per phase over ``repeat`` runs in ``mode``, and the heavy modules the last run imported."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    with tempfile.TemporaryDirectory() as prefix:
        if mode == "bytecode":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = prefix
            run_once(python, scope, env)  # warm the caches; not counted
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        runs = [run_once(python, scope, env) for _ in range(repeat)]
    medians = {key: statistics.median(run[key] for run in runs) for _, key in PHASES}
    return medians, list(runs[-1]["heavy_modules"])  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the install to measure (default: this one)")
    parser.add_argument("--scope", type=Path, default=_default_scope(), help="the LENS dataset file to run")
    parser.add_argument("--mode", choices=["both", "no-bytecode", "bytecode"], default="both")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    modes = ["no-bytecode", "bytecode"] if args.mode == "both" else [args.mode]
    results = {mode: measure(args.python, args.scope.resolve(), mode, args.repeat) for mode in modes}
    print(f"bm25 on {args.scope.name}, budget 16k, --lens-json; medians of {args.repeat} runs per mode, seconds; python {args.python}")
    print(f"{'phase':38}" + "".join(f"{mode:>14}" for mode in modes))
    for label, key in PHASES:
        print(f"{label:38}" + "".join(f"{results[mode][0][key]:14.3f}" for mode in modes))
    for mode in modes:
        print(f"heavy modules imported ({mode}): {', '.join(results[mode][1]) or 'none'}")


if __name__ == "__main__":
    main()
