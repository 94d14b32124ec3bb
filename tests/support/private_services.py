"""PostgreSQL and Redis servers of a test's own, on free loopback ports, that the test may
stop and start again (fault injection) without touching the machine's shared servers.

PostgreSQL comes from Debian's binaries (``/usr/lib/postgresql/<version>/bin``): ``initdb``
makes a cluster in a temp dir (trust authentication, no fsync: it is thrown away), ``pg_ctl``
starts and stops it. PostgreSQL refuses to run as root, so as root both run as the
``postgres`` account (``runuser``) on a directory it owns. Redis is ``redis-server`` with
no persistence, so a restart loses every key, as a real crash of a cache-only Redis does.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_port(port: int, *, up: bool, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                is_up = True
        except OSError:
            is_up = False
        if is_up == up:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"port {port} still {'down' if up else 'up'} after {timeout}s")
        time.sleep(0.02)


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's binaries directory, if any has initdb and pg_ctl."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0))
    for directory in reversed(found):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


def postgres_missing() -> str | None:
    """Why a private PostgreSQL cannot be run here (None when it can)."""
    if postgres_bin() is None:
        return "PostgreSQL's initdb/pg_ctl are not installed (/usr/lib/postgresql/*/bin)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' account to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root without runuser to drop to the 'postgres' account"
    return None


def redis_missing() -> str | None:
    return None if shutil.which("redis-server") else "redis-server is not installed"


class PrivatePostgres:
    """A throwaway PostgreSQL cluster on a free loopback port (user ``postgres``, trust)."""

    def __init__(self) -> None:
        bindir = postgres_bin()
        assert bindir is not None, postgres_missing()
        self.bindir = bindir
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="spark-private-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        command = [*self._as, str(self.bindir / tool), *args]
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stderr.decode(errors='replace')[-1500:]}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "30", "start")
        _wait_port(self.port, up=True, timeout=10)

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")
        _wait_port(self.port, up=False, timeout=10)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "10", "stop", timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    """A redis-server without persistence on a free loopback port; ``restart`` keeps the port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="spark-private-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args: Sequence[str] = (
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log"),
        )
        self.process = subprocess.Popen(args, start_new_session=True)
        _wait_port(self.port, up=True, timeout=10)

    def stop(self) -> None:
        """Gone at once (SIGKILL), its keys with it: a crash, not a polite shutdown."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None
        _wait_port(self.port, up=False, timeout=10)

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
