"""Record, then replay, a full LLM-agent + LLM-judge run of a bundled scope against the local test server.

For each endpoint latency, each repetition records into a fresh cache and then replays the
same command. It checks that every question's answer, metrics, composite and judge details
are identical, counts the HTTP requests the server received in each run (the replay must
send none), and prints the wall times (medians over the repetitions) and their ratio.

    python benchmarks/llm_record_replay.py [--repeat 3] [--latency-ms 0 200]

The latency is added by the server to every request, to stand in for a remote endpoint.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.records.rows import read_artifact_json


def bundled_scope() -> Path:
    paths = bundled_dataset_paths()
    return next((p for p in paths if p.name == "cold_chain_demo.json"), paths[0])


def run(workdir: Path, server: OpenAITestServer, mode: str, artifact: str, dataset: Path) -> tuple[float, str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--lens-adapter=bm25",
        f"--lens-dataset={dataset}",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        "--lens-judge=llm",
        f"--lens-llm-base-url={server.base_url}",
        f"--lens-llm-cache-mode={mode}",
        f"--lens-llm-cache={workdir / 'cache.sqlite'}",
        f"--lens-json={workdir / artifact}",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, done.stdout


def per_question(path: Path) -> dict[str, Any]:
    artifact = read_artifact_json(path)
    return {r["question_id"]: (r["answer"], r["metrics"], r["composite"], r["scorer_details"]) for r in artifact["results"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 200.0])
    parser.add_argument("--dataset", type=Path, default=None, help="LENS JSON file (default: the bundled cold_chain_demo scope)")
    args = parser.parse_args()
    dataset = (args.dataset or bundled_scope()).resolve()

    rows = []
    summary_lines: list[str] = []
    for latency in args.latency_ms:
        records, replays, requests, identical = [], [], [], True
        with OpenAITestServer(latency_s=latency / 1000) as server:
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="lens-bench-") as tmp:
                    workdir = Path(tmp)
                    server.reset()
                    record_s, _ = run(workdir, server, "record", "record.json", dataset)
                    sent = server.count()
                    server.reset()
                    replay_s, stdout = run(workdir, server, "replay", "replay.json", dataset)
                    requests.append((sent, server.count()))
                    records.append(record_s)
                    replays.append(replay_s)
                    identical &= per_question(workdir / "record.json") == per_question(workdir / "replay.json")
                    summary_lines = [line for line in stdout.splitlines() if line.startswith(("llm requests", "bm25 ", "adapter "))]
        record_median, replay_median = statistics.median(records), statistics.median(replays)
        rows.append(
            (
                f"{latency:g}",
                f"{record_median:.2f}",
                f"{replay_median:.2f}",
                f"{record_median / replay_median:.2f}x",
                "/".join(str(sent) for sent, _ in requests),
                "/".join(str(replayed) for _, replayed in requests),
                "yes" if identical else "NO",
            )
        )
    headers = ("latency ms", "record s", "replay s", "ratio", "HTTP record", "HTTP replay", "identical scores")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print(f"dataset: {dataset.name}; {args.repeat} repetitions per latency; wall times are medians of whole pytest processes")
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    print("\nlast replay's summary lines:")
    print("\n".join(f"  {line}" for line in summary_lines))


if __name__ == "__main__":
    main()
