"""A server's slots shared by the processes of one run: a counting semaphore of lock files.

Under pytest-xdist every worker probes the server (:mod:`pytest_lens.llm.capacity`) and keeps no more
than its slots in flight (:class:`~pytest_lens.llm.limiter.ConnectionLimiter`); without more, two workers
would keep twice the slots in flight and the extra requests would queue at the server, where waiting counts
against their timeouts. :class:`SharedSlots` is what they share: ``count`` lock files in a directory the run's
workers all see, one per slot; holding an exclusive ``flock`` on one is holding that slot.

- ``flock`` locks belong to an open file, so two threads of one process exclude each other as two
  processes do; the kernel drops a lock when its holder's file closes, so a worker that dies (a crash,
  ``os._exit``, a signal) frees its slot at once, and no stale lock can outlive a run.
- Attempts never block in the kernel: a waiter tries every file, then sleeps ``poll_s`` and tries
  again, so a waiting thread stays interruptible and a waiter in one process is as likely to get the
  next free slot as one in another (see :meth:`SharedSlots.acquire`).
- The files are named by a hash of the server's root URL, never the URL itself (it may carry a key).

Stdlib only. Where ``fcntl`` does not exist (Windows) :func:`SharedSlots.for_server` returns ``None`` and
each process keeps its own limit, as without xdist.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["POLL_S", "SharedSlots", "server_key"]

#: Seconds between attempts of a waiter (a request to a model takes seconds: this adds a few hundredths at most).
POLL_S = 0.05


def server_key(root_url: str) -> str:
    """The name the lock files of the server at ``root_url`` share: a hash of the URL, which may hold a key."""
    return hashlib.sha256(root_url.encode("utf-8")).hexdigest()[:16]


class SharedSlots:
    """``count`` places shared by every process that opens the same ``directory`` and ``key``. Thread-safe."""

    def __init__(self, directory: Path, key: str, count: int, *, poll_s: float = POLL_S) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("shared slots need fcntl.flock, which this platform does not have")
        if count < 1:
            raise ValueError(f"shared slots need at least 1 place, got {count}")
        self.directory = directory
        self.key = key
        self.count = count
        self.poll_s = poll_s
        self._paths = [directory / f"{key}.slot{index}.lock" for index in range(count)]
        self._random = random.Random()
        self._random_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SharedSlots({str(self.directory)!r}, {self.key!r}, count={self.count})"

    @classmethod
    def for_server(cls, directory: Path | None, root_url: str, count: int) -> SharedSlots | None:
        """The slots of the server at ``root_url`` shared through ``directory``; ``None`` when they cannot be.

        ``None`` without a directory, when it does not exist here (a worker on another host: xdist's ``--tx ssh=``),
        or without ``fcntl``: the caller then keeps its own limit only.
        """
        if directory is None or fcntl is None or count < 1 or not directory.is_dir():
            return None
        return cls(directory, server_key(root_url), count)

    def try_acquire(self) -> int | None:
        """Take a free place now: the open file descriptor that holds it, ``None`` when all are taken."""
        with self._random_lock:
            start = self._random.randrange(self.count)
        for offset in range(self.count):
            path = self._paths[(start + offset) % self.count]
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return fd
        return None

    def acquire(self, *, first_try_now: bool = True, sleep: Callable[[float], None] = time.sleep) -> int:
        """Wait for a free place and take it; the file descriptor that holds it (give it to :meth:`release`).

        ``first_try_now=False`` makes the first attempt after a random part of ``poll_s``, as a waiter's next
        attempt would come: a request that already queued in its own process does not jump ahead of requests
        waiting in other processes whenever its process frees a place (a thread waiting in-process is woken the
        moment the place is freed, a waiter elsewhere only at its next poll).
        """
        if not first_try_now:
            with self._random_lock:
                delay = self._random.uniform(0, self.poll_s)
            sleep(delay)
        while True:
            fd = self.try_acquire()
            if fd is not None:
                return fd
            sleep(self.poll_s)

    @staticmethod
    def release(fd: int) -> None:
        """Give the place held by ``fd`` back (closing the file drops the lock)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold one place for the block."""
        fd = self.acquire()
        try:
            yield
        finally:
            self.release(fd)
