"""Fault injection on a full LLM-agent + LLM-judge run of a bundled scope (local test server, cache off).

Each scenario reruns the same command against a server that injects one kind of fault into
a deterministic 20% of the requests, and is compared with a clean run: are the per-question
scores identical, how many judge failures were recorded, and what the LENS verdict says.

    python benchmarks/llm_faults.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.records.rows import read_artifact_json

SCENARIOS: dict[str, list[Fault]] = {
    "clean": [],
    "20% transient HTTP 500 (every kind)": [Fault("status", rate=0.2, status=500)],
    "20% transient HTTP 429 (every kind)": [Fault("status", rate=0.2, status=429)],
    "20% transient timeouts (agent)": [Fault("slow", rate=0.2, delay_s=3.0, only="agent")],
    "20% malformed tool-call JSON (agent, once)": [Fault("malformed_tool_arguments", rate=0.2, only="agent")],
    "20% permanent HTTP 500 (judge)": [Fault("status", rate=0.2, status=500, permanent=True, only="judge")],
}


def run(workdir: Path, server: OpenAITestServer) -> tuple[int, str, dict[str, Any]]:
    paths = bundled_dataset_paths()
    data = next((p for p in paths if p.name == "cold_chain_demo.json"), paths[0])
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--lens-adapter=bm25",
        f"--lens-dataset={data}",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        "--lens-judge=llm",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-cache-mode=off",
        "--lens-llm-timeout=1",
        f"--lens-json={workdir / 'out.json'}",
    ]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, read_artifact_json(workdir / "out.json")


def main() -> None:
    clean_scores: dict[str, Any] | None = None
    rows = []
    notes = []
    for name, faults in SCENARIOS.items():
        with OpenAITestServer(faults=faults) as server, tempfile.TemporaryDirectory(prefix="lens-faults-") as tmp:
            code, stdout, artifact = run(Path(tmp), server)
            injected = sum(1 for r in server.requests if r.fault is not None)
        scores = {r["question_id"]: (r["answer"], r["metrics"], r["composite"]) for r in artifact["results"]}
        if clean_scores is None:
            clean_scores = scores
        judge_failed = artifact["summary"]["bm25"]["scoring_failures"]
        verdict = next(line for line in stdout.splitlines() if line.startswith("LENS verdict"))
        llm_line = next(line for line in stdout.splitlines() if line.startswith("llm requests"))
        rows.append(
            (
                name,
                str(injected),
                llm_line.split("retries ")[1].split(",")[0],
                f"{judge_failed}/{artifact['summary']['bm25']['n_questions']}",
                "yes" if scores == clean_scores else "no",
                str(code),
            )
        )
        notes.append(f"{name}:\n  {llm_line}\n  {verdict}")
    headers = ("scenario", "faults injected", "retries", "judge-failed questions", "scores = clean", "exit")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print()
    print("\n".join(notes))


if __name__ == "__main__":
    main()
