"""The Spark IDE servers running from this checkout, found without Django's settings.

``manage.py spark_run`` records its server while it runs (`recorded`): its address, its
process, its data directory and whether its database came from ``DATABASE_URL``, in a file
of its own, in a directory only the user can read (``$XDG_RUNTIME_DIR/spark-ide``, else
``<tmp>/spark-ide-<uid>``), named after the checkout and the process.

The commands that act on the running server's data (``ATTACHED_COMMANDS``: a sign-in link, an
API token, a teacher) are given its data directory before Django loads its settings
(``attach``, called by ``manage.py``): they work from the checkout without ``SPARK_DATA_DIR``
given again, and never make a fresh data directory (``./var``) that no server uses. Without
a running server they use the default one if it holds a database, or say plainly what to set.

No Django here: this runs before the settings exist.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import stat
import tempfile
from collections.abc import Iterator, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
ATTACHED_COMMANDS = frozenset({"spark_login_url", "spark_token", "spark_teacher"})
DATABASE_FILE = "spark.sqlite3"  # in the data directory (settings.DATABASES' default)


@dataclass(frozen=True)
class RunningServer:
    url: str
    pid: int
    data_dir: str  # absolute
    database_url: bool  # its database is the one DATABASE_URL names, not the data directory's


def default_data_dir(checkout: Path = CHECKOUT) -> Path:
    """Where the data lives without SPARK_DATA_DIR (as settings.DATA_DIR has it)."""
    return checkout / "var"


def records_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "spark-ide"
    return Path(tempfile.gettempdir()) / f"spark-ide-{os.getuid()}"


def _private(directory: Path) -> bool:
    """The directory is the user's own and nobody else may write into it (so no one else
    can point these commands at a data directory of their choosing)."""
    try:
        info = directory.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _prefix(checkout: Path) -> str:
    return hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but alive
    return True


@contextlib.contextmanager
def recorded(server: RunningServer, checkout: Path = CHECKOUT) -> Iterator[None]:
    """Record ``server`` as running from ``checkout`` for as long as the block runs (nothing
    is recorded when the records' directory is not the user's own)."""
    directory = records_dir()
    with contextlib.suppress(OSError):  # there already, or cannot be: checked below
        directory.mkdir(mode=0o700, parents=True)
    path = directory / f"{_prefix(checkout)}-{server.pid}.json"
    if not _private(directory):
        yield
        return
    path.write_text(json.dumps(asdict(server)))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def running(checkout: Path = CHECKOUT) -> list[RunningServer]:
    """The servers recorded for ``checkout`` whose process still runs, newest first; a
    record left by a process that is gone is removed."""
    directory = records_dir()
    if not _private(directory):
        return []
    found: list[tuple[float, RunningServer]] = []
    for path in directory.glob(f"{_prefix(checkout)}-*.json"):
        try:
            data = json.loads(path.read_text())
            server = RunningServer(
                url=str(data["url"]), pid=int(data["pid"]), data_dir=str(data["data_dir"]),
                database_url=bool(data["database_url"]),
            )
            when = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(server.pid):
            found.append((when, server))
        else:
            path.unlink(missing_ok=True)
    return [server for _, server in sorted(found, key=lambda pair: pair[0], reverse=True)]


def has_database(data_dir: Path) -> bool:
    """Whether ``data_dir`` holds a set-up database (read only: nothing is created)."""
    path = data_dir / DATABASE_FILE
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'auth_user'").fetchone()
    except sqlite3.Error:
        return False
    return found is not None


def describe(servers: list[RunningServer]) -> str:
    return "; ".join(
        f"{server.url} (data in {server.data_dir}{', database from DATABASE_URL' if server.database_url else ''})"
        for server in servers
    )


def attach(environ: MutableMapping[str, str], checkout: Path = CHECKOUT) -> str | None:
    """Give a command the data directory of the server running from ``checkout``
    (``SPARK_DATA_DIR`` in ``environ``), unless it was given one. Returns what to tell the
    person instead when that cannot be done (None: go on)."""
    if environ.get("SPARK_DATA_DIR"):
        return None  # given: it is the one
    servers = running(checkout)
    places = {server.data_dir for server in servers}
    if len(places) > 1:
        return (
            f"Several Spark IDE servers run from {checkout}: {describe(servers)}. Set SPARK_DATA_DIR to the data "
            "directory of the one you mean."
        )
    if servers:
        server = servers[0]
        if server.database_url and not environ.get("DATABASE_URL"):
            return (
                f"The Spark IDE server at {server.url} keeps its data in the database DATABASE_URL names. Set "
                "DATABASE_URL as that server has it."
            )
        environ["SPARK_DATA_DIR"] = server.data_dir
        return None
    if environ.get("DATABASE_URL") or has_database(default_data_dir(checkout)):
        return None
    return (
        f"No Spark IDE server is running from {checkout} (`make run` starts one), and "
        f"{default_data_dir(checkout)} holds no database. Set SPARK_DATA_DIR to the data directory of the "
        "server you mean (and DATABASE_URL if it uses one)."
    )


def attach_command(argv: list[str], environ: MutableMapping[str, str], checkout: Path = CHECKOUT) -> str | None:
    """``attach`` for ``manage.py <command>`` when the command acts on the server's data."""
    if len(argv) < 2 or argv[1] not in ATTACHED_COMMANDS or any(arg in ("-h", "--help") for arg in argv[2:]):
        return None
    return attach(environ, checkout)
