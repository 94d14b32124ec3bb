"""Every way the project starts Daphne passes the same socket flags as ``make run``
(``spark_run``): the ping that closes a socket too far behind, and the patience a reconnect
storm's queued connects need (Daphne's own limit, 5 s, rejects them with a 403)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from spark_ide.ops.daphne_flags import SLOW_SOCKETS, STORM_PATIENCE
from tests.deploy.deployfiles import DAPHNE_UNIT, ROOT, UNITS, compose_services, read_unit


def _holds(command: list[str], flags: tuple[str, ...]) -> bool:
    return any(tuple(command[at : at + len(flags)]) == flags for at in range(len(command)))


def _systemd() -> list[str]:
    (exec_start,) = read_unit(UNITS / DAPHNE_UNIT)["Service"]["ExecStart"]
    return shlex.split(exec_start)


def _compose() -> list[str]:
    return [str(part) for part in compose_services()["daphne-1"]["command"]]


def _dockerfile() -> list[str]:
    text = (ROOT / "deploy/Dockerfile").read_text()
    commands = [json.loads(cmd) for cmd in re.findall(r"^CMD (\[.*\])$", text, re.MULTILINE)]
    (daphne,) = [command for command in commands if command[0] == "daphne"]
    return [str(part) for part in daphne]


@pytest.mark.parametrize("command", [_systemd, _compose, _dockerfile], ids=["systemd", "compose", "dockerfile"])
def test_each_deployment_passes_the_socket_flags_make_run_does(command: object) -> None:
    assert callable(command)
    args = command()
    assert args[0] == "daphne" or args[0].endswith("/daphne")
    assert _holds(args, SLOW_SOCKETS), args
    assert _holds(args, STORM_PATIENCE), args
