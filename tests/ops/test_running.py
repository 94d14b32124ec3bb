"""`manage.py spark_login_url` (and the other commands on the server's data) find the running
server's data directory, or say plainly what to set: no traceback, no stray ./var (issue 27,
item 10)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from spark_ide.running import (
    RunningServer,
    attach,
    attach_command,
    default_data_dir,
    has_database,
    recorded,
    records_dir,
    running,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A records' directory of this test's own."""
    directory = tmp_path / "run"
    directory.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(directory))
    return directory


def server(data: Path, url: str = "http://127.0.0.1:8123", *, pid: int | None = None, **rest: bool) -> RunningServer:
    return RunningServer(url=url, pid=os.getpid() if pid is None else pid, data_dir=str(data),
                         database_url=rest.get("database_url", False))


def migrated(data: Path) -> Path:
    """A data directory with a set-up database, as `make run` leaves it."""
    data.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(data / "spark.sqlite3") as db:
        db.execute("CREATE TABLE auth_user (id INTEGER PRIMARY KEY)")
    return data


def test_the_running_servers_data_directory_is_given_to_the_command(tmp_path: Path, runtime: Path) -> None:
    checkout = tmp_path / "checkout"
    environ: dict[str, str] = {}
    with recorded(server(tmp_path / "data"), checkout):
        assert attach(environ, checkout) is None
        assert environ["SPARK_DATA_DIR"] == str(tmp_path / "data")
        assert attach_command(["manage.py", "spark_login_url", "bob"], environ := {}, checkout) is None
        assert environ["SPARK_DATA_DIR"] == str(tmp_path / "data")
        assert attach_command(["manage.py", "migrate"], environ := {}, checkout) is None
        assert environ == {}  # other commands are left alone
        given = {"SPARK_DATA_DIR": "/srv/spark"}
        assert attach(given, checkout) is None and given == {"SPARK_DATA_DIR": "/srv/spark"}  # given wins
    assert running(checkout) == []
    assert not default_data_dir(checkout).exists()


def test_without_a_server_or_a_database_it_says_what_to_set_and_creates_nothing(tmp_path: Path, runtime: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    problem = attach({}, checkout)
    assert problem is not None
    assert f"No Spark IDE server is running from {checkout}" in problem
    assert "Set SPARK_DATA_DIR" in problem
    assert list(checkout.iterdir()) == []  # no ./var
    (checkout / "var").mkdir()
    (checkout / "var" / "spark.sqlite3").touch()  # left by a command that crashed before
    assert not has_database(checkout / "var")
    assert attach({}, checkout) is not None
    migrated(checkout / "var")  # the default data of a server that stopped: links go to SITE_URL
    environ: dict[str, str] = {}
    assert attach(environ, checkout) is None and environ == {}
    assert attach({"DATABASE_URL": "postgres://db/spark"}, tmp_path / "elsewhere") is None


def test_a_server_on_database_url_or_several_servers_are_named(tmp_path: Path, runtime: Path) -> None:
    checkout = tmp_path / "checkout"
    with recorded(server(tmp_path / "data", database_url=True), checkout):
        problem = attach({}, checkout)
        assert problem is not None and "Set DATABASE_URL" in problem
        assert attach(environ := {"DATABASE_URL": "postgres://db/spark"}, checkout) is None
        assert environ["SPARK_DATA_DIR"] == str(tmp_path / "data")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with recorded(server(tmp_path / "a"), checkout), recorded(server(tmp_path / "b", pid=other.pid), checkout):
            problem = attach({}, checkout)
            assert problem is not None and "Several Spark IDE servers" in problem
            assert str(tmp_path / "a") in problem and str(tmp_path / "b") in problem
    finally:
        other.kill()
        other.wait()


def test_records_of_gone_processes_and_a_directory_others_may_write_are_ignored(
    tmp_path: Path, runtime: Path
) -> None:
    checkout = tmp_path / "checkout"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with recorded(server(tmp_path / "data", pid=int(gone.stdout)), checkout):
        assert running(checkout) == []
        assert list(records_dir().iterdir()) == []  # removed on the way
    with recorded(server(tmp_path / "data"), checkout):
        records_dir().chmod(0o777)
        try:
            assert running(checkout) == []
        finally:
            records_dir().chmod(0o700)


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def _clean_env(runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"SPARK_DATA_DIR", "DATABASE_URL", "REDIS_URL"}}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    env["SPARK_SITE_URL"] = "http://configured.test:8000"
    return env


@pytest.mark.timeout(120)
def test_spark_login_url_from_the_checkout_uses_the_running_servers_data(tmp_path: Path, runtime: Path) -> None:
    data = tmp_path / "data"
    env = _clean_env(runtime)
    # The tables a sign-in link needs (the accounts app and what it depends on), as a server's.
    assert _manage("migrate", "accounts", "--verbosity", "0", env={**env, "SPARK_DATA_DIR": str(data)}).returncode == 0
    var_before = default_data_dir().exists()
    with recorded(server(data, "http://127.0.0.1:8123")):  # as `make run` records its server
        done = _manage("spark_login_url", "grace", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("http://127.0.0.1:8123/?token=")
    with sqlite3.connect(data / "spark.sqlite3") as db:  # the link is the server's: its database knows it
        assert db.execute("SELECT count(*) FROM auth_user WHERE username = 'grace'").fetchone() == (1,)
    assert default_data_dir().exists() == var_before  # no ./var made on the way


@pytest.mark.timeout(120)
def test_a_data_directory_without_a_database_is_said_plainly_not_a_traceback(tmp_path: Path, runtime: Path) -> None:
    empty = tmp_path / "empty"
    other = tmp_path / "data"
    env = {**_clean_env(runtime), "SPARK_DATA_DIR": str(empty)}
    with recorded(server(other, "http://127.0.0.1:8123")):
        done = _manage("spark_login_url", env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"{empty} holds no Spark IDE database (no such table: auth_user)" in done.stderr
    assert f"A Spark IDE server runs from this checkout on other data: http://127.0.0.1:8123 (data in {other})" in (
        done.stderr
    )
