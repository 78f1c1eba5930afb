"""A server's slots shared by processes: lock files held by real processes, never more holders than places."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import pytest_lens
from pytest_lens.llm.limiter import ConnectionLimiter
from pytest_lens.llm.shared_slots import SharedSlots, server_key

SRC = str(Path(pytest_lens.__file__).parents[1])

#: Each process takes a place ``rounds`` times, holds it ``hold_s`` and writes down when it held it; its next
#: request waits (``first_try_now=False``) as one queued behind the last in its own process does.
HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytest_lens.llm.shared_slots import SharedSlots

    directory, key, count, rounds, hold_s, out = sys.argv[1:]
    slots = SharedSlots(Path(directory), key, int(count), poll_s=0.005)
    Path(out + ".ready").touch()
    while not Path(directory, "go").exists():
        time.sleep(0.005)
    spans = []
    for round in range(int(rounds)):
        fd = slots.acquire(first_try_now=round == 0)  # the next request waited in its process, as the limiter says
        start = time.time()
        time.sleep(float(hold_s))
        spans.append((start, time.time()))
        slots.release(fd)
    Path(out).write_text(json.dumps(spans))
    """
)


def run_holders(directory: Path, processes: int, count: int, rounds: int = 8, hold_s: float = 0.03) -> list[list[tuple[float, float]]]:
    """Start ``processes`` holders on ``count`` places together; each one's spans of holding a place."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    outs = [directory / f"spans-{index}.json" for index in range(processes)]
    started = [
        subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), "k", str(count), str(rounds), str(hold_s), str(out)], env=env)
        for out in outs
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{out}.ready").exists() for out in outs) and time.monotonic() < deadline:
        time.sleep(0.01)
    (directory / "go").touch()  # all start together, so they compete from the first round
    for process in started:
        assert process.wait(timeout=120) == 0
    return [[(a, b) for a, b in json.loads(out.read_text())] for out in outs]


def peak_overlap(spans: list[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])  # an end sorts before a start at the same time
    peak = held = 0
    for _, step in events:
        held += step
        peak = max(peak, held)
    return peak


def test_two_processes_on_one_place_never_hold_it_together(tmp_path: Path) -> None:
    first, second = run_holders(tmp_path, processes=2, count=1)
    assert len(first) == len(second) == 8
    assert peak_overlap(first + second) == 1
    # Both got their turns while the other still wanted the place: neither ran all its rounds first.
    assert min(b for _, b in first) < max(a for a, _ in second) and min(b for _, b in second) < max(a for a, _ in first)


def test_two_places_are_held_by_two_processes_at_once(tmp_path: Path) -> None:
    spans = [span for spans in run_holders(tmp_path, processes=3, count=2) for span in spans]
    assert peak_overlap(spans) == 2  # a count, not a mutex: two at once, never three


def test_a_holder_that_dies_frees_its_place(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    script = (
        "import os, sys; from pathlib import Path; from pytest_lens.llm.shared_slots import SharedSlots; "
        "SharedSlots(Path(sys.argv[1]), 'k', 1).acquire(); print('held', flush=True); sys.stdin.readline(); os._exit(3)"
    )
    command = [sys.executable, "-c", script, str(tmp_path)]
    holder = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    slots = SharedSlots(tmp_path, "k", 1, poll_s=0.01)
    assert slots.try_acquire() is None  # the other process holds it
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(timeout=30) == 3  # it exits without giving the place back
    fd = slots.try_acquire()
    assert fd is not None
    slots.release(fd)


def test_threads_of_one_process_exclude_each_other_too(tmp_path: Path) -> None:
    slots = SharedSlots(tmp_path, "k", 1, poll_s=0.001)
    fd = slots.try_acquire()
    assert fd is not None
    assert slots.try_acquire() is None  # flock belongs to the open file: the same process is refused a second place
    slots.release(fd)
    fd = slots.try_acquire()
    assert fd is not None
    slots.release(fd)


def test_the_limiter_counts_a_wait_for_a_shared_place_as_queueing(tmp_path: Path) -> None:
    shared = SharedSlots(tmp_path, "k", 1, poll_s=0.005)
    limiter = ConnectionLimiter(4)
    limiter.fit(1)
    limiter.share(shared)
    other = shared.try_acquire()  # another process's request holds the server's one slot
    assert other is not None
    waited: list[float] = []

    def request() -> None:
        with limiter.slot() as wait:
            waited.append(wait)

    thread = threading.Thread(target=request)
    thread.start()
    time.sleep(0.2)
    assert (limiter.waiting, limiter.in_flight) == (1, 0)  # queued for the shared slot, not in flight
    shared.release(other)
    thread.join(timeout=10)
    assert waited and waited[0] >= 0.2
    assert (limiter.waiting, limiter.in_flight, limiter.peak) == (0, 0, 1)
    assert shared.try_acquire() is not None  # and it gave the place back


def test_an_interrupted_wait_gives_the_local_place_back(tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    shared = SharedSlots(tmp_path, "k", 1)
    limiter = ConnectionLimiter(2)
    limiter.fit(1)
    limiter.share(shared)
    other = shared.try_acquire()

    def interrupted(_: float) -> None:
        raise Stop

    shared.acquire = lambda **_: SharedSlots.acquire(shared, sleep=interrupted)  # type: ignore[method-assign]
    with pytest.raises(Stop), limiter.slot():
        pass
    assert (limiter.in_flight, limiter.waiting) == (0, 0)
    assert other is not None
    shared.release(other)


def test_the_files_are_named_by_a_hash_of_the_server_url(tmp_path: Path) -> None:
    url = "http://user:sk-secret@127.0.0.1:8080"
    slots = SharedSlots.for_server(tmp_path, url, 2)
    assert slots is not None and slots.count == 2
    with slots.hold():
        names = sorted(path.name for path in tmp_path.iterdir())
    assert names and all(name.startswith(server_key(url)) for name in names)
    assert not any("secret" in name or "8080" in name for name in names)
    assert SharedSlots.for_server(tmp_path / "elsewhere", url, 2) is None  # not on this host: nothing shared
    assert SharedSlots.for_server(None, url, 2) is None
