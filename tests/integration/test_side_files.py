"""Side files a run reads and writes (shards, durations, resume units, the watchdog's journal), when they are hostile.

Read: a device, a named pipe or a file edited since it was kept is one clear line (or a unit run again), never a
``MemoryError``, a hang or a result trusted as read. Written: a resume directory that is a file, a unit path that
cannot be replaced, a file-size limit (a full disk, as far as the process can tell: every write past it fails with
``EFBIG``) cost the run a warning, never the run, and leave no partial file.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json
from tests.integration.test_resume import kept_files
from tests.integration.test_shards import comparable
from tests.support import COLD_CHAIN_DEMO

RUN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "--lens-adapter=bm25", f"--lens-dataset={COLD_CHAIN_DEMO}")


#: Address space each process may take: a regression that reads ``/dev/zero`` whole fails here, not the machine.
MEMORY = 3 << 30


def limited(file_size: int | None = None) -> Callable[[], None]:
    """What a child process runs before it starts: :data:`MEMORY`, and ``file_size`` (``RLIMIT_FSIZE``) if given."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return limit


def run(command: list[str], cwd: Path, *, file_size: int | None = None, **extra: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, timeout=300, preexec_fn=limited(file_size), **extra
    )


def run_pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "pytest", *RUN, *args], cwd)


def no_partial(directory: Path) -> list[Path]:
    return [path for path in directory.rglob("*") if path.name.endswith(".partial")]


# -- read ----------------------------------------------------------------------------------------------


def test_lens_merge_refuses_a_device_and_a_named_pipe_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "shard.json"
    os.mkfifo(fifo)  # opened for reading, it would wait forever for a writer
    lens = str(Path(sys.executable).with_name("lens"))
    for shard, kind in (("/dev/zero", "a device"), (str(fifo), "a named pipe")):
        done = run([lens, "merge", shard, "--out", str(tmp_path / "run.json")], tmp_path)
        assert (done.returncode, done.stderr) == (2, f"lens merge: cannot read the run artifact: {shard} is {kind}, not a file\n")


def test_shard_durations_from_a_device_is_one_line(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "--lens-shard=1/2", "--lens-shard-durations=/dev/zero")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "ERROR: --lens-shard-durations: cannot read the run artifact: /dev/zero is a device, not a file" in done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr


def test_a_kept_unit_edited_or_linked_to_a_device_is_run_again(tmp_path: Path) -> None:
    reference = run_pytest(tmp_path, "--lens-json=reference.json")
    assert reference.returncode == 0, reference.stdout
    kept = tmp_path / "kept"
    first = run_pytest(tmp_path, f"--lens-resume={kept}", "--lens-json=run.json")
    assert "0 of 1 stream groups reused, 1 to run" in first.stdout
    (unit,) = kept_files(kept)
    kept_unit = json.loads(unit.read_text())
    for result in kept_unit["results"]:  # every score rewritten to 1.0: on main, 8 results at 1.0 came back
        result["metrics"] = dict.fromkeys(result["metrics"], 1.0)
        result["composite"] = 1.0
    unit.write_text(json.dumps(kept_unit))
    edited = run_pytest(tmp_path, f"--lens-resume={kept}", "--lens-json=run.json")
    assert "0 of 1 stream groups reused, 1 to run (1 altered since kept (their digest does not match): bm25:cold_chain_demo:16k)" in (
        edited.stdout
    ), edited.stdout[-3000:]
    rerun = read_artifact_json(tmp_path / "run.json")
    assert rerun["run"]["resumed"]["units_altered"] == ["bm25:cold_chain_demo:16k"]
    assert comparable(rerun) == comparable(read_artifact_json(tmp_path / "reference.json"))
    # The unit was kept again, whole and matching: the next run reuses it.
    assert "1 of 1 stream groups reused, 0 to run" in run_pytest(tmp_path, f"--lens-resume={kept}").stdout

    unit.unlink()
    unit.symlink_to("/dev/zero")
    linked = run_pytest(tmp_path, f"--lens-resume={kept}")
    assert "0 of 1 stream groups reused, 1 to run (1 changed: bm25:cold_chain_demo:16k)" in linked.stdout, linked.stdout[-3000:]
    assert linked.returncode == 0 and "INTERNALERROR" not in linked.stdout + linked.stderr


# -- write ---------------------------------------------------------------------------------------------


def test_a_resume_directory_that_is_a_file_or_cannot_take_a_unit_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "R").write_text("not a directory")
    done = run_pytest(tmp_path, "--lens-resume=R", "--lens-json=run.json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "pytest-lens: --lens-resume cannot keep stream group bm25:cold_chain_demo:16k in " in done.stdout
    assert "the run goes on, but what it finishes will not be reused by a later run" in done.stdout
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert json.loads((tmp_path / "run.json").read_text())["run"]["resumed"]["units_not_kept"]
    # A unit's path taken by a directory: the renamed file cannot replace it, and its temporary file is removed.
    kept = tmp_path / "kept"
    run_pytest(tmp_path, f"--lens-resume={kept}")
    (unit,) = kept_files(kept)
    unit.unlink()
    unit.mkdir()
    (unit / "occupied").touch()
    done = run_pytest(tmp_path, f"--lens-resume={kept}")
    assert done.returncode == 0 and "--lens-resume cannot keep stream group" in done.stdout, done.stdout[-3000:]
    assert no_partial(kept) == []


def test_a_full_disk_costs_resumability_and_the_watchdog_journal_never_the_run(tmp_path: Path) -> None:
    # Every file of the run is limited to 12 KiB: the kept unit (8 results, about 45 KiB) and the watchdog's journal
    # (every result) cannot be written whole. On main: INTERNALERROR (OSError: File too large) from the journal.
    # The null memory stores nothing (bm25's SQLite index would fail too, as an adapter fault): it fails its hard
    # gate, so the run's own verdict is FAIL, exit 1, as without the limit.
    temp = tmp_path / "tmp"
    temp.mkdir()
    kept = tmp_path / "kept"
    null = (*RUN[:-2], "--lens-adapter=null", RUN[-1])
    command = [sys.executable, "-m", "pytest", *null, f"--lens-resume={kept}"]
    done = run(command, tmp_path, file_size=12 << 10, env={**os.environ, "TMPDIR": str(temp)})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    assert "INTERNALERROR" not in out
    assert "pytest-lens: the watchdog's journal in " in out and "File too large" in out
    assert "--lens-resume cannot keep stream group null:cold_chain_demo:16k" in out
    assert "8 gated, 1 LENS gate failed" in out and "LENS verdict: FAIL - null: hard gate evidence_grounding" in out
    assert no_partial(kept) == [] and kept_files(kept) == []
