"""Nothing outside the run: no network, no host files, no writes outside the work dir, no leftovers."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from spark_ide.sandbox.core import RunResult, RunStatus, Sandbox
from tests.conftest import port_open
from tests.sandbox.conftest import AS_ROOT, assert_gone, source
from tests.sandbox.test_limits import FORK_BOMB, limited

ROOT = Path(__file__).resolve().parents[2]

PROBE_PATHS = """
import json, sys
found = {}
for path in sys.argv[1:] if len(sys.argv) > 1 else PATHS:
    try:
        with open(path, 'rb') as handle:
            found[path] = 'READ %d bytes' % len(handle.read())
    except OSError as exc:
        found[path] = type(exc).__name__
print(json.dumps(found))
"""


def read_attempts(sandbox: Sandbox, paths: list[str]) -> dict[str, str]:
    result = sandbox.run({"main.py": f"PATHS = {paths!r}\n{PROBE_PATHS}"}, path="main.py")
    assert result.status is RunStatus.OK, result.stderr
    found: dict[str, str] = json.loads(result.stdout)
    return found


def test_the_network_is_unreachable(sandbox: Sandbox) -> None:
    program = source(
        "import socket",
        "print(sorted(name for _, name in socket.if_nameindex()))",
        "for host, port in [('1.1.1.1', 80), ('127.0.0.1', 6379), ('127.0.0.1', 5432)]:",
        "    try:",
        "        socket.create_connection((host, port), timeout=2)",
        "        print('CONNECTED', host, port)",
        "    except OSError as exc:",
        "        print(type(exc).__name__)",
        "try:",
        "    socket.getaddrinfo('example.org', 80)",
        "    print('RESOLVED')",
        "except OSError as exc:",
        "    print(type(exc).__name__)",
    )
    result = sandbox.run(program, path="main.py")
    assert result.status is RunStatus.OK, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "['lo']"  # the jail's own loopback, down; no other interface
    assert "CONNECTED" not in result.stdout and "RESOLVED" not in result.stdout
    assert lines[1] == "OSError"  # network unreachable
    if port_open("127.0.0.1", 6379):  # the host's Redis is there, and still out of reach
        assert lines[2] == "ConnectionRefusedError"


def test_host_secrets_and_the_project_cannot_be_read(sandbox: Sandbox) -> None:
    database = Path(settings.DATA_DIR) / "spark.sqlite3"
    paths = [
        "/etc/shadow", "/etc/hostname", "/root/.bashrc",
        str(ROOT / "manage.py"), str(ROOT / "spark_ide" / "settings.py"),
        str(database), str(Path(settings.DATA_DIR) / "secret_key"),
    ]
    found = read_attempts(sandbox, paths)
    assert all(outcome in {"FileNotFoundError", "PermissionError"} for outcome in found.values()), found
    assert Path("/etc/shadow").exists()  # the host has them; the jail does not


def test_no_secret_of_the_server_reaches_the_environment(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    program = source("import os", "print(sorted(os.environ))", "print(open('/proc/1/environ').read())")
    result = sandbox.run(program, path="main.py")
    assert result.status is RunStatus.OK, result.stderr
    assert "sk-must-not-leak" not in result.stdout and "OPENAI" not in result.stdout
    assert result.stdout.splitlines()[0] == str(sorted(
        ["HOME", "LANG", "LOGNAME", "PATH", "PWD", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "TMPDIR", "USER"]))


def test_only_the_runtime_is_visible(sandbox: Sandbox) -> None:
    result = sandbox.run(source("import os, json", "print(json.dumps([os.listdir('/'), os.listdir('/etc')]))"),
                         path="main.py")
    top, etc = json.loads(result.stdout)
    assert set(top) <= {
        "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr",
        "workspace", ".workspace-seed",
    }
    assert set(etc) <= {"alternatives", "group", "ld.so.cache", "localtime", "passwd"}


def test_nothing_outside_the_work_dir_can_be_written(sandbox: Sandbox) -> None:
    marker = f"spark-escape-{uuid.uuid4().hex}"
    targets = ["/" + marker, f"/usr/{marker}", f"/etc/{marker}", f"/dev/{marker}", f"/.workspace-seed/{marker}",
               str(ROOT / marker)]
    program = source(
        "import json",
        f"targets = {targets!r}",
        "found = {}",
        "for path in targets:",
        "    try:",
        "        open(path, 'w').write('x')",
        "        found[path] = 'WROTE'",
        "    except OSError as exc:",
        "        found[path] = type(exc).__name__",
        f"open('/tmp/{marker}', 'w').write('mine')",  # the jail's own /tmp: fine, and not the host's
        "print(json.dumps(found))",
    )
    result = sandbox.run(program, path="main.py")
    assert result.status is RunStatus.OK, result.stderr
    assert "WROTE" not in result.stdout
    assert not Path("/tmp", marker).exists() and not (ROOT / marker).exists()


def test_a_planted_symlink_leads_nowhere(sandbox: Sandbox) -> None:
    program = source(
        "import os",
        f"os.symlink({str(ROOT / 'manage.py')!r}, 'project')",
        "os.symlink('/etc/shadow', 'shadow')",
        "os.symlink('../../../../../../root', 'up')",
        "os.symlink('/proc/1/root/etc/shadow', 'via_proc')",
        "for name in ('project', 'shadow', 'up/.bashrc', 'via_proc'):",
        "    try:",
        "        print(name, len(open(name).read()))",
        "    except OSError as exc:",
        "        print(name, type(exc).__name__)",
    )
    result = sandbox.run(program, path="main.py")
    assert result.stdout.split() == [
        "project", "FileNotFoundError", "shadow", "FileNotFoundError", "up/.bashrc", "FileNotFoundError",
        "via_proc", "FileNotFoundError",
    ], result.stderr


def test_no_file_survives_into_the_next_run(sandbox: Sandbox) -> None:
    first = sandbox.run(source(
        "for path in ('/tmp/left', '/dev/shm/left', 'left.txt'):",
        "    open(path, 'w').write('secret')",
    ), path="main.py")
    assert first.status is RunStatus.OK, first.stderr
    listing = "print(sorted(os.listdir('/tmp')), os.listdir('/dev/shm'), sorted(os.listdir('.')))"
    second = sandbox.run(source("import os", listing), path="main.py")
    assert second.stdout == "[] [] ['main.py']\n"


@pytest.mark.skipif(not AS_ROOT, reason="a uid per run needs root; without it runs share the caller's uid")
def test_parallel_runs_get_their_own_uid_and_a_fork_bomb_does_not_starve_the_other(sandbox: Sandbox) -> None:
    results: dict[str, RunResult] = {}
    bomb_sandbox = limited(sandbox, wall_seconds=3)

    def bomb() -> None:
        results["bomb"] = bomb_sandbox.run(FORK_BOMB, path="main.py")

    thread = threading.Thread(target=bomb)
    thread.start()
    try:
        # a program that needs processes of its own, while the bomb holds all of its uid's
        worker = source(
            "import time, subprocess",
            "time.sleep(0.5)",
            "children = [subprocess.Popen(['/usr/bin/true']) for _ in range(8)]",
            "print(sum(child.wait() == 0 for child in children))",
        )
        results["worker"] = sandbox.run(worker, path="main.py")
    finally:
        thread.join()
    assert results["worker"].status is RunStatus.OK and results["worker"].stdout == "8\n", results["worker"].stderr
    assert results["bomb"].status is RunStatus.TIMEOUT
    assert results["worker"].uid != results["bomb"].uid
    for result in results.values():
        assert_gone(result)


def test_the_program_runs_as_an_unprivileged_user(sandbox: Sandbox) -> None:
    result = sandbox.run(source("import os, getpass", "print(os.getresuid(), os.getgroups(), getpass.getuser())"),
                         path="main.py")
    uid = result.uid
    assert result.stdout == f"({uid}, {uid}, {uid}) [] student\n"
    if AS_ROOT:
        assert 61000 <= uid < 62000
