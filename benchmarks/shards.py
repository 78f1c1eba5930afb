"""Sharded runs: N shards side by side on this machine, the fan-in, and what merging costs as rows grow (prints tables).

    python benchmarks/shards.py                          # both parts
    python benchmarks/shards.py --shards 1 2 4 --repeat 3 --skip-merge-cost
    python benchmarks/shards.py --skip-sides --rows 100 1000 10000 100000
    python benchmarks/shards.py --skip-sides --skip-merge-cost --real DIR [DIR...] --real-repeat 1 2 5 17

Part 1 runs one V2-sized run (the shared LENS V2 scope directory ``../shared/datasets/lens-v2`` and the six
bundled scopes, bm25 and the random control, ``--lens-repeat=3``) as 1, 2 and 4 shards, each shard its own
``python -m pytest`` process, all shards of one split started together; then ``lens merge`` joins them. It prints
each split's shard wall times (shortest and longest: the run's wall time is the longest), the fan-in's, and whether
the merged artifact equals the single run's (timing fields aside). On a machine with fewer cores than shards the
shards share the cores: the table shows the split's balance and the fan-in's cost more than a CI matrix's speed-up.

Part 2 measures the fan-in alone on synthetic rows: a generated dataset (scopes of 50 questions), two adapters
(``null`` and ``random``), results with seeded random metrics, recorded into 4 shard artifacts; then
``merge_shards`` (set the run up again, check and record every row, recompute summaries, CIs, paired tests and
gates, write the artifact), from 10^2 to 10^5 rows.

Part 3 measures ``lens merge`` on real rows, each with its transcript: every DIR holds the shard artifacts
(``shardI.json`` and ``shardI.rows.jsonl``) of one real ``--lens-shard=I/N`` run (say LoCoMo, imported with
``lens import locomo``, with ``bm25``, ``random`` and ``null``, offline, 16k). Each is merged as it is, and, for each
``--real-repeat K`` above 1, as the ``--lens-repeat=K`` run of the same command: the shards are recorded again by
pytest-lens's own session (so their split, settings and records are the ones such a run writes), each real row written
once per repetition (the offline agent is deterministic: its repetitions differ only in timings). The merge runs as
its own ``lens merge`` process; the table gives its wall and CPU time, its peak memory (the process's maximum
resident set) and the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json

REPO = Path(__file__).resolve().parents[1]
V2 = Path("shared") / "datasets" / "lens-v2"
V2_DIR = next((base / V2 for base in REPO.parents if (base / V2).exists()), REPO.parent / V2)
TIMING_FIELDS = ("duration_s", "duration_ms", "created")


def comparable(artifact: dict[str, Any]) -> dict[str, Any]:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMING_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    found: dict[str, Any] = strip(artifact)
    for key in ("file", "sha256"):  # the rows file's name follows the document's; its digest covers timings
        found.get("rows", {}).pop(key, None)
    for key in ("merged_from", "shard"):
        found["run"].pop(key, None)
    return found


def side_by_side(shards: list[int], repeat: int, adapters: list[str]) -> None:
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    datasets = [f"--lens-dataset={V2_DIR}", *(f"--lens-dataset={path}" for path in bundled_dataset_paths())]
    args = [
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-q",
        *(f"--lens-adapter={a}" for a in adapters),
        *datasets,
        f"--lens-repeat={repeat}",
    ]
    print(f"Part 1: {', '.join(adapters)} on {V2_DIR.name}/ and the 6 bundled scopes, --lens-repeat={repeat}")
    print(f"{'shards':>6} {'groups/shard':>13} {'questions/shard':>16} {'shard wall s (min-max)':>23} {'fan-in s':>9} {'equal':>6}")
    reference: dict[str, Any] | None = None
    for total in shards:
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp)
            started = time.perf_counter()
            processes = []
            for index in range(1, total + 1):
                extra = [f"--lens-shard={index}/{total}"] if total > 1 else []
                command = [sys.executable, "-m", "pytest", *args, *extra, f"--lens-json=shard{index}.json"]
                processes.append((subprocess.Popen(command, cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), started))
            walls = []
            for process, began in processes:
                process.wait()
                walls.append(time.perf_counter() - began)
            artifacts = [read_artifact_json(where / f"shard{index}.json") for index in range(1, total + 1)]
            if total == 1:
                merged, fan_in = artifacts[0], 0.0
                reference = merged
            else:
                began = time.perf_counter()
                names = [f"shard{index}.json" for index in range(1, total + 1)]
                command = [sys.executable, "-m", "pytest_lens.cli.main", "merge", *names, "--out", "run.json"]
                subprocess.run(command, cwd=where, capture_output=True, check=False)
                fan_in = time.perf_counter() - began
                merged = read_artifact_json(where / "run.json")
            groups = [len(a["run"]["shard"]["units"]) for a in artifacts] if total > 1 else []
            sizes = [len(a["results"]) for a in artifacts]
            equal = "yes" if reference is not None and comparable(merged) == comparable(reference) else "NO"
            shown_groups = f"{min(groups)}-{max(groups)}" if groups else "all"
            shown_sizes, shown_walls = f"{min(sizes)}-{max(sizes)}", f"{min(walls):.1f}-{max(walls):.1f}"
            print(f"{total:>6} {shown_groups:>13} {shown_sizes:>16} {shown_walls:>23} {fan_in:>9.1f} {equal:>6}")


QUESTIONS_PER_SCOPE = 50
METRICS = ("evidence_grounding", "budget_compliance", "evidence_coverage", "citation_coverage", "fact_recall",
           "first_search_ndcg@10", "first_search_recall@10", "first_search_mrr", "session_recall", "evidence_precision")  # fmt: skip


def synthetic_dataset(path: Path, scopes: int) -> None:
    episodes, questions = [], []
    document: dict[str, Any] = {"version": "0.1.0", "scopes": [], "questions": questions}
    for s in range(scopes):
        scope = f"syn{s:04d}"
        episodes = [
            {
                "episode_id": f"{scope}_{e:03d}",
                "scope_id": scope,
                "timestamp": f"2025-03-{e + 1:02d}T08:00:00",
                "text": f"report {e} of {scope}: value {e * 7}",
            }
            for e in range(10)
        ]
        document["scopes"].append({"scope_id": scope, "episodes": episodes})
        for q in range(QUESTIONS_PER_SCOPE):
            questions.append(
                {
                    "question_id": f"{scope}_q{q:03d}",
                    "scope_id": scope,
                    "checkpoint_after": 5 + q % 5,
                    "question_type": "longitudinal",
                    "prompt": f"What value did report {q % 5} of {scope} give?",
                    "ground_truth": {
                        "canonical_answer": f"value {q % 5 * 7}",
                        "required_evidence_refs": [f"{scope}_{q % 5:03d}"],
                        "key_facts": [],
                    },
                }
            )
    path.write_text(json.dumps(document))


def merge_cost(rows_list: list[int]) -> None:
    from pytest_lens.records.results import QuestionResult
    from pytest_lens.records.settings import AdapterSpec, LensSettings
    from pytest_lens.runs.fanin import merge_shards
    from pytest_lens.runs.session import LensSession
    from pytest_lens.runs.storage import load_run

    print("\nPart 2: the fan-in on synthetic rows (4 shards; null and random; scopes of 50 questions; after one untimed warm-up)")
    rows_list = [100, *rows_list]
    print(f"{'rows':>8} {'scopes':>7} {'write 4 shards s':>17} {'read s':>7} {'merge s':>8} {'merge us/row':>13}")
    warm_up = True
    for rows in rows_list:
        scopes = max(1, rows // (2 * QUESTIONS_PER_SCOPE))
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp)
            synthetic_dataset(where / "syn.json", scopes)
            base = {
                "adapters": (AdapterSpec("null", "null"), AdapterSpec("random", "random")),
                "datasets": (where / "syn.json",),
                "rootdir": where,
                "invocation_dir": where,
            }
            rng = random.Random(42)
            began = time.perf_counter()
            for index in (1, 2, 3, 4):
                session = LensSession.open(LensSettings(**base, shard=(index, 4)))  # type: ignore[arg-type]
                cases = [case for case in session.cases if session.keeps(case)]
                session.expect(cases)
                for case in cases:
                    metrics = {name: round(rng.random(), 6) for name in METRICS}
                    question = case.question
                    session.record(
                        QuestionResult(
                            adapter=case.adapter, scope_id=case.scope.scope_id, checkpoint=case.checkpoint,
                            question_id=question.question_id,
                            question_type=question.question_type, category="synthesis", budget=case.budget.name, agent="offline",
                            prompt=question.prompt, metrics=metrics, composite=round(sum(metrics.values()) / len(metrics), 6),
                        )
                    )  # fmt: skip
                session.write_artifact(where / f"shard{index}.json")
            written = time.perf_counter() - began
            began = time.perf_counter()
            shards = [(f"shard{index}.json", load_run(where / f"shard{index}.json")) for index in (1, 2, 3, 4)]
            read = time.perf_counter() - began
            began = time.perf_counter()
            merged = merge_shards(shards, rootdir=where, out=where / "run.json")
            took = time.perf_counter() - began
            count = len(merged.session.ledger.results)
            if warm_up:
                warm_up = False
                continue
            print(f"{count:>8} {scopes:>7} {written:>17.2f} {read:>7.2f} {took:>8.2f} {took / count * 1e6:>13.0f}")


def repeated_shards(source: Path, repeat: int, where: Path) -> int:
    """The shards of the real run in ``source`` written again under ``where`` as its ``--lens-repeat=repeat`` run; rows written."""
    from dataclasses import replace

    from pytest_lens.runs.fanin import settings_from_record
    from pytest_lens.runs.session import LensSession
    from pytest_lens.runs.storage import load_run

    documents = sorted(source.glob("shard*.json"))
    first = load_run(documents[0])
    record = first.run.shard or {}
    settings = settings_from_record({**record["settings"], "repeat": repeat}, rootdir=where, invocation_dir=where)
    real = {result.key: result for document in documents for result in load_run(document).results}
    written = 0
    for index in range(1, int(record["total"]) + 1):
        session = LensSession.open(replace(settings, shard=(index, int(record["total"])), json_path=where / f"shard{index}.json"))
        cases = [case for case in session.cases if session.keeps(case)]
        session.expect(cases)
        for case in cases:
            found = real[(case.adapter, case.scope.scope_id, case.budget.name, case.question.question_id)]
            session.record(found.model_copy(update={"repetition": case.repetition}))
        session.write_artifact(where / f"shard{index}.json", statistics=False)
        session.close()
        written += len(cases)
    return written


def timed_merge(where: Path) -> tuple[float, float, float]:
    """``lens merge`` of the shards in ``where`` as its own process: wall seconds, CPU seconds, peak resident MB."""
    names = sorted(path.name for path in where.glob("shard*.json"))
    command = [sys.executable, "-m", "pytest_lens.cli.main", "merge", *names, "--out", "run.json"]
    began = time.perf_counter()
    process = subprocess.Popen(command, cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"lens merge failed in {where}: {process.stderr.read().decode()[-2000:] if process.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def merge_real(sources: list[Path], repeats: list[int]) -> None:
    """Part 3: ``lens merge`` of real rows, as recorded and as ``--lens-repeat=K`` runs of the same command."""
    print("\nPart 3: lens merge of real rows (each with its transcript), as its own process")
    heads = ("rows", "source", "repeat", "shards MB", "merge s", "cpu s", "ms/row", "peak MB", "load")
    widths = (8, 12, 6, 9, 8, 7, 7, 8, 15)
    print(" ".join(f"{head:>{width}}" for head, width in zip(heads, widths, strict=True)))
    for source in sources:
        for repeat in repeats:
            with tempfile.TemporaryDirectory() as tmp:
                where = Path(tmp) if repeat > 1 else source
                rows = (
                    repeated_shards(source, repeat, where)
                    if repeat > 1
                    else sum(sum(1 for _ in path.open("rb")) for path in source.glob("shard*.rows.jsonl"))
                )
                size = sum(path.stat().st_size for path in where.glob("shard*")) / 1e6
                wall, cpu, peak = timed_merge(where)
                load = " ".join(f"{value:.1f}" for value in os.getloadavg())
                per_row = f"{wall / rows * 1e3:.2f}"
                cells = (rows, source.name, repeat, f"{size:.0f}", f"{wall:.1f}", f"{cpu:.1f}", per_row, f"{peak:.0f}", load)
                print(" ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths, strict=True)))
                for made in ("run.json", "run.rows.jsonl"):
                    (where / made).unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--adapters", default="bm25,random")
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--skip-sides", action="store_true", help="skip part 1 (shards side by side)")
    parser.add_argument("--skip-merge-cost", action="store_true", help="skip part 2 (the fan-in on synthetic rows)")
    parser.add_argument("--real", type=Path, nargs="*", default=[], metavar="DIR", help="part 3: directories of a real run's shards")
    parser.add_argument("--real-repeat", type=int, nargs="+", default=[1], metavar="K", help="part 3: also as --lens-repeat=K runs")
    args = parser.parse_args()
    if not args.skip_sides:
        side_by_side(sorted(set([1, *args.shards])), args.repeat, args.adapters.split(","))
    if not args.skip_merge_cost:
        merge_cost(args.rows)
    if args.real:
        merge_real(args.real, args.real_repeat)


if __name__ == "__main__":
    main()
