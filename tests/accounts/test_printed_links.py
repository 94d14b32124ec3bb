"""`spark_login_url` prints a link to the server `spark_run` runs, else to SITE_URL."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from spark_ide.accounts.services import guest_create
from spark_ide.accounts.site import running_at, site_url
from spark_ide.running import records_dir, running

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    settings.SITE_URL = "http://configured.test:8000"
    runtime = tmp_path / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # the servers' records: this test's own
    return tmp_path / "data"


def login_url(*args: str) -> str:
    out = StringIO()
    call_command("spark_login_url", *args, stdout=out)
    return out.getvalue().strip()


def test_without_a_running_server_the_link_uses_site_url(data_dir: Path) -> None:
    assert login_url("bob").startswith("http://configured.test:8000/?token=")


def test_while_spark_run_runs_the_link_points_at_it(data_dir: Path, client: Client) -> None:
    with running_at("http://127.0.0.1:8311"):
        url = login_url("bob")
        assert url.startswith("http://127.0.0.1:8311/?token=")
        assert login_url("bob", "--base", "http://other.test/").startswith("http://other.test/?token=")
    assert running() == []  # forgotten when the server stops
    assert site_url() == "http://configured.test:8000"
    client.get(url.removeprefix("http://127.0.0.1:8311"))
    assert client.get("/").status_code == 200  # and it signs in


@pytest.mark.parametrize("record", ["dead", "garbage"])
def test_a_record_left_by_a_dead_server_is_ignored(data_dir: Path, record: str) -> None:
    with running_at("http://127.0.0.1:9999"):
        (path,) = records_dir().glob("*.json")
        saved = json.loads(path.read_text())
    if record == "dead":
        finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True, check=True)
        path.write_text(json.dumps({**saved, "pid": int(finished.stdout)}))
    else:
        path.write_text("{not json")
    assert login_url().startswith("http://configured.test:8000/?token=")


def test_a_server_on_other_data_is_not_the_one_links_point_at(data_dir: Path, settings: Any) -> None:
    with running_at("http://127.0.0.1:8311"):
        settings.DATA_DIR = data_dir.parent / "other"
        assert login_url("bob").startswith("http://configured.test:8000/?token=")


def test_no_sign_in_link_opens_a_guest_account(data_dir: Path) -> None:
    guest = guest_create("Grace")
    with pytest.raises(CommandError, match="is a guest"):
        login_url(guest.username)
    with pytest.raises(CommandError, match="is a guest"):
        call_command("spark_token", guest.username, stdout=StringIO())
