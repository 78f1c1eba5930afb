"""Real runs for the statistics' promises: A/A pairs gated by ``lens compare --fail``, and a pool of per-question scores.

    python benchmarks/aa_runs.py aa --sets 40 --first-seed 500 --out DIR     # A/A pairs on fresh generated scopes
    python benchmarks/aa_runs.py report --out DIR                            # the rates so far, with Wilson 95% CIs
    python benchmarks/aa_runs.py pool --sets 40 --first-seed 1000 --out DIR  # DIR/pool.json for the simulations

``aa``: per set, ``lens generate --domain all --seed S`` writes six fresh scopes (the bundled scopes' size); two runs
(``pytest -m lens``, offline agent) each answer them with three statistically identical adapters ``a``, ``b``, ``c``:
BM25 whose searches are replaced by random stored episodes with probability ``--p`` (``degraded_at_random``), each
label with a seed of its own in each run. Every adapter of run X against the same label in run Y is an A/A pair: the
artifacts are cut to that adapter and ``lens compare Y X --fail`` (the CLI's own code, called in-process) decides,
with ``--bootstrap auto`` (6 scopes: clustered) and ``--bootstrap plain``. Each run's own table of adapter pairs
(three pairs, Holm) says whether any pair of identical adapters came out significant. One line per set goes to
``DIR/aa.jsonl``, so a long measurement can be stopped and resumed.

``pool``: the same generated scopes answered once by ``clean`` (BM25), ``top`` (its best result dropped on every
search) and ``rnd`` (every search replaced by random stored episodes); ``clustered_coverage.py --pool`` and
``mde_check.py`` draw benchmarks from it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_lens.records.results import ListRows, QuestionResult, RunArtifact
from pytest_lens.runs.storage import load_run, write_run
from pytest_process import pytest_command
from rates import wilson

HERE = Path(__file__).resolve().parent
WRAPPER = "degraded_at_random:RandomlyDegradedBM25"
LABELS = ("a", "b", "c")


def generate(seed: int, out: Path) -> Path:
    """Six scopes of ``lens generate --domain all --seed SEED`` in ``out/SEED`` (kept when already there)."""
    target = out / "scopes" / str(seed)
    if not target.is_dir() or len(list(target.glob("*.json"))) < 6:
        command = ["generate", "--domain", "all", "--seed", str(seed), "--out", str(target)]
        subprocess.run([sys.executable, "-m", "pytest_lens.cli.main", *command], check=True, capture_output=True)
    return target


def run(datasets: list[Path], adapters: list[str], artifact: Path, workdir: Path) -> RunArtifact:
    """One ``pytest -m lens`` run; its artifact (the run document and its rows file)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    command = pytest_command("-m", "lens", *adapters, *(f"--lens-dataset={d}" for d in datasets), f"--lens-json={artifact}")
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    if not artifact.exists():
        raise SystemExit(f"run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return load_run(artifact)


def degraded(p: float, seeds: dict[str, int]) -> list[str]:
    options = []
    for label, seed in seeds.items():
        options += [
            f"--lens-adapter={label}={WRAPPER}",
            f"--lens-adapter-option={label}.p={p}",
            f"--lens-adapter-option={label}.seed={seed}",
        ]
    return options


def cut(artifact: RunArtifact, label: str, path: Path) -> Path:
    """The artifact with only ``label``'s questions (a comparison of one adapter: no Holm across others)."""
    results = [r for r in artifact.results if r.adapter == label]
    summary = {key: value for key, value in artifact.summary.items() if key == label}
    write_run(path, artifact.model_copy(update={"results": ListRows(results), "summary": summary}))
    return path


def compare(baseline: Path, current: Path, *options: str) -> tuple[int, str]:
    """``lens compare BASELINE CURRENT --fail OPTIONS`` in this process: exit status and output."""
    from pytest_lens.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["compare", str(baseline), str(current), "--fail", *options])
    return status, out.getvalue()


def aa_set(seed: int, p: float, out: Path) -> dict:  # type: ignore[type-arg]
    """One set of six fresh scopes: three A/A pairs per mode, and each run's pair table."""
    scopes = generate(seed, out)
    work = out / "work" / str(seed)
    work.mkdir(parents=True, exist_ok=True)
    first = run([scopes], degraded(p, {label: 3 * seed + i for i, label in enumerate(LABELS)}), work / "x.json", work)
    second = run([scopes], degraded(p, {label: 10**6 + 3 * seed + i for i, label in enumerate(LABELS)}), work / "y.json", work)
    line: dict = {"seed": seed, "p": p, "pairs": {}, "tables": []}  # type: ignore[type-arg]
    for label in LABELS:
        before, after = cut(first, label, work / f"x_{label}.json"), cut(second, label, work / f"y_{label}.json")
        for mode in ("auto", "plain"):
            status, text = compare(before, after, "--bootstrap", mode)
            row = next((r for r in text.splitlines() if r.startswith(f"{label} ")), "")
            line["pairs"][f"{label}/{mode}"] = {"failed": status == 1, "improvement": row.rstrip().endswith("improvement")}
    for artifact in (first, second):
        pairs = artifact.statistics.pairs if artifact.statistics is not None else []
        line["tables"].append(any(pair.composite.p_adjusted < 0.05 for pair in pairs))
    return line


def report(out: Path) -> None:
    lines = [json.loads(text) for text in (out / "aa.jsonl").read_text(encoding="utf-8").splitlines() if text.strip()]
    print(f"A/A pairs through lens compare --fail, 6 fresh generated scopes per set, {len(lines)} sets")
    for mode in ("auto", "plain"):
        outcomes = [pair for line in lines for key, pair in line["pairs"].items() if key.endswith(f"/{mode}")]
        failed = sum(pair["failed"] for pair in outcomes)
        either = sum(pair["failed"] or pair["improvement"] for pair in outcomes)
        name = "clustered (auto, 6 scopes)" if mode == "auto" else "plain"
        print(f"  {name:<28} false regression {wilson(failed, len(outcomes))}; either direction {wilson(either, len(outcomes))}")
    tables = [hit for line in lines for hit in line["tables"]]
    print(f"  {'pair table, 3 identical':<28} some pair significant (Holm) {wilson(sum(tables), len(tables))}")


def pool(sets: int, first_seed: int, out: Path) -> None:
    """``clean``, ``top`` and ``rnd`` BM25 on ``sets`` x 6 fresh scopes, one run per 10 sets, joined in DIR/pool.json."""
    results: list[QuestionResult] = []
    artifact: RunArtifact | None = None
    adapters = [
        "--lens-adapter=clean=bm25",
        *(f"--lens-adapter={label}={WRAPPER}" for label in ("top", "rnd")),
        "--lens-adapter-option=top.p=1", "--lens-adapter-option=top.mode=top",
        "--lens-adapter-option=rnd.p=1", "--lens-adapter-option=rnd.mode=random",
    ]  # fmt: skip
    for start in range(first_seed, first_seed + sets, 10):
        chunk = out / "pool" / f"{start}.json"
        if chunk.exists():
            artifact = load_run(chunk)
        else:
            scopes = [generate(seed, out) for seed in range(start, min(start + 10, first_seed + sets))]
            chunk.parent.mkdir(parents=True, exist_ok=True)
            artifact = run(scopes, adapters, chunk, chunk.parent)
        results += list(artifact.results)
        print(f"  pool: seeds {start}..{start + 9}: {len(results)} results", file=sys.stderr, flush=True)
    assert artifact is not None
    write_run(out / "pool.json", artifact.model_copy(update={"results": ListRows(results)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("aa", "report", "pool"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sets", type=int, default=40)
    parser.add_argument("--first-seed", type=int, default=500)
    parser.add_argument("--p", type=float, default=0.3, help="share of searches replaced by random episodes (aa)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.what == "pool":
        pool(args.sets, args.first_seed, args.out)
        return 0
    if args.what == "aa":
        done = set()
        log = args.out / "aa.jsonl"
        if log.exists():
            done = {json.loads(text)["seed"] for text in log.read_text(encoding="utf-8").splitlines() if text.strip()}
        for seed in range(args.first_seed, args.first_seed + args.sets):
            if seed in done:
                continue
            line = aa_set(seed, args.p, args.out)
            with log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            print(f"  set {seed}: {line}", file=sys.stderr, flush=True)
    report(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
