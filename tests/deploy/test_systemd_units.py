"""The systemd units of deploy/systemd/ (one host: spark-ide.target with two Daphne processes,
the migrations, a Celery worker, the model server): checked by ``systemd-analyze verify`` and
read here, every command by the program's own parser (tests/deploy/commands.py)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require
from tests.deploy.deployfiles import (
    DAPHNE_UNIT,
    ROOT,
    TARGET,
    UNITS,
    check_command,
    read_unit,
    unit_files,
    wanted,
)

INSTALLED = "/opt/spark-ide"  # where the units expect the checkout and its .venv


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """With the checkout in place of /opt/spark-ide, so every ExecStart must exist in .venv."""
    analyze = shutil.which("systemd-analyze")
    require(analyze is not None, "systemd-analyze is not installed")
    for path in unit_files():
        (tmp_path / path.name).write_text(path.read_text().replace(INSTALLED, str(ROOT)))
    names = [str(tmp_path / path.name) for path in unit_files()]
    done = subprocess.run([str(analyze), "verify", *names], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", unit_files(), ids=lambda path: path.name)
def test_every_command_is_one_the_project_has(path: Path) -> None:
    service = read_unit(path).get("Service", {})
    for key in ("ExecStartPre", "ExecStart"):
        for line in service.get(key, []):
            argv = shlex.split(line.replace("%i", "1"))
            if argv[0] == "/bin/rm":
                continue  # the stale socket's removal
            assert argv[0].startswith(f"{INSTALLED}/.venv/bin/"), f"{path.name} runs {argv[0]} outside the venv"
            installed = ROOT / argv[0].removeprefix(f"{INSTALLED}/")
            assert installed.exists(), f"{path.name}: the venv has no {installed.name}"
            check_command(argv)


def test_the_target_starts_two_daphne_processes_a_worker_and_the_model_server() -> None:
    target = read_unit(UNITS / TARGET)
    assert set(wanted(target)) == {
        "spark-ide-migrate.service", "spark-ide-daphne@1.service", "spark-ide-daphne@2.service",
        "spark-ide-celery.service", "spark-ide-modelserver.service",
    }
    assert target["Install"]["WantedBy"] == ["multi-user.target"]
    for path in UNITS.glob("*.service"):
        assert read_unit(path)["Unit"]["PartOf"] == [TARGET], f"{path.name} is not restarted with the target"


def test_daphne_starts_after_the_migrations_and_one_socket_per_instance() -> None:
    daphne = read_unit(UNITS / DAPHNE_UNIT)
    assert "spark-ide-migrate.service" in daphne["Unit"]["Requires"]
    assert "spark-ide-migrate.service" in daphne["Unit"]["After"][0].split()
    (exec_start,) = daphne["Service"]["ExecStart"]
    assert "--unix-socket /run/spark-ide/daphne-%i.sock" in exec_start
    migrate = read_unit(UNITS / "spark-ide-migrate.service")["Service"]
    assert migrate["Type"] == ["oneshot"] and migrate["RemainAfterExit"] == ["yes"]
    assert [shlex.split(line)[2] for line in migrate["ExecStart"]] == ["migrate", "collectstatic"]


def test_units_sharing_the_runtime_directory_keep_it_when_one_stops() -> None:
    for path in UNITS.glob("*.service"):
        service = read_unit(path)["Service"]
        if "RuntimeDirectory" in service:
            assert service.get("RuntimeDirectoryPreserve") == ["yes"], path.name
