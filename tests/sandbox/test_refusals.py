"""Bad requests and a missing or broken bubblewrap get clear errors; nothing runs unsandboxed unless allowed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from spark_ide.sandbox.core import BadRun, Limits, RunStatus, Sandbox, SandboxConfigError, SandboxUnavailable
from spark_ide.sandbox.core.files import materialise
from tests.sandbox.conftest import AS_ROOT, SMALL, assert_gone, source

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("files", "path", "message"), [
    ({"main.py": ""}, "other.py", "no file 'other.py' in the workspace"),
    ({"main.py": ""}, "../main.py", "must be relative"),
    ({"main.py": ""}, "/etc/passwd", "must be relative"),
    ({"../evil.py": "", "main.py": ""}, "main.py", "bad path '../evil.py'"),
    ({"/tmp/evil.py": "", "main.py": ""}, "main.py", "bad path '/tmp/evil.py'"),
    ({"a\x00b": "", "main.py": ""}, "main.py", "contains NUL"),
    ({"pkg": "", "pkg/mod.py": "", "main.py": ""}, "main.py", "pkg is both a file and a folder"),
    ({"main.py": "x" * (2 * 1024 * 1024)}, "main.py", "larger than the sandbox's file limit"),
    ({"main.py": "\ud800"}, "main.py", "not valid Unicode"),
])
def test_a_bad_request_is_refused_before_anything_runs(
    sandbox: Sandbox, files: dict[str, str], path: str, message: str,
) -> None:
    with pytest.raises(BadRun, match=message.replace("(", r"\(").replace(")", r"\)")):
        sandbox.run(files, path=path)


def test_neither_a_file_nor_tests_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(BadRun, match="say which file to run"):
        sandbox.run({"main.py": ""})


def test_materialise_keeps_folders_and_never_follows_what_is_there(tmp_path: Path) -> None:
    assert materialise({"a/b/c.py": "x = 1\n", "a/d.txt": "é"}, tmp_path, limits=Limits()) == 8
    assert (tmp_path / "a" / "b" / "c.py").read_text() == "x = 1\n"
    planted = tmp_path / "planted"
    planted.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("untouched")
    os.symlink(target, planted / "main.py")
    with pytest.raises(FileExistsError):
        materialise({"main.py": "x"}, planted, limits=Limits())
    assert target.read_text() == "untouched"


@pytest.mark.parametrize(("changes", "message"), [
    ({"cpu_seconds": 0}, "cpu_seconds must be at least 1"),
    ({"processes": 2}, "processes must be at least 4"),
    ({"memory_bytes": "lots"}, "memory_bytes must be a number"),
    ({"wall_seconds": True}, "wall_seconds must be a number"),
])
def test_limits_out_of_range_are_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SandboxConfigError, match=message):
        Limits(**changes)  # type: ignore[arg-type]


def test_a_runtime_outside_usr_is_refused() -> None:
    with pytest.raises(SandboxConfigError, match="under /usr"):
        Sandbox(python="/root/.pyenv/versions/3.11.7/bin/python3")


def test_without_bubblewrap_runs_are_refused(tmp_path: Path) -> None:
    sandbox = Sandbox(limits=SMALL, bwrap=str(tmp_path / "no-bwrap"))
    with pytest.raises(SandboxUnavailable, match=r"code runs are refused: bubblewrap \(.*no-bwrap\) is not installed"):
        sandbox.run(source("print(1)"), path="main.py")


def test_a_bubblewrap_that_cannot_make_namespaces_is_refused_with_its_message() -> None:
    folder = Path(tempfile.mkdtemp(prefix="spark-test-bwrap-"))  # the run's uid must reach it: not under pytest's 0700
    try:
        folder.chmod(0o755)
        broken = folder / "bwrap"
        broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
        broken.chmod(0o755)
        sandbox = Sandbox(limits=SMALL, bwrap=str(broken))
        with pytest.raises(SandboxUnavailable, match="bubblewrap cannot run here: bwrap: No permissions to create new"):
            sandbox.run(source("print(1)"), path="main.py")
    finally:
        shutil.rmtree(folder)


def test_unsandboxed_runs_only_when_allowed_and_say_so(tmp_path: Path) -> None:
    sandbox = Sandbox(limits=SMALL, bwrap=str(tmp_path / "no-bwrap"), allow_unsandboxed=True)
    result = sandbox.run(source("import os, resource", "print(os.getuid(), resource.getrlimit(resource.RLIMIT_NPROC))"),
                         path="main.py")
    assert result.status is RunStatus.OK and not result.sandboxed, result.stderr
    assert result.message == "exited with code 0 (ran without the sandbox: limits and uid only)"
    assert result.stdout == f"{result.uid} (16, 16)\n"
    if AS_ROOT:
        assert result.uid != 0
    assert_gone(result)


def test_unsandboxed_timeout_kills_the_group(tmp_path: Path) -> None:
    sandbox = Sandbox(limits=Limits(wall_seconds=1), bwrap=str(tmp_path / "no-bwrap"), allow_unsandboxed=True)
    program = source("import subprocess, time", "subprocess.Popen(['/usr/bin/sleep', '60'])", "time.sleep(60)")
    result = sandbox.run(program, path="main.py")
    assert result.status is RunStatus.TIMEOUT
    assert_gone(result)


@pytest.mark.skipif(not AS_ROOT, reason="needs root to become another user for the test")
def test_without_root_runs_use_bubblewraps_user_namespace(tmp_path: Path) -> None:
    """The laptop case: the server is an ordinary user. Debian's python3 runs the core as nobody."""
    require_bwrap = shutil.which("bwrap")
    assert require_bwrap, "bubblewrap is not installed"
    script = (
        "from spark_ide.sandbox.core import Sandbox, Limits\n"
        "sandbox = Sandbox(limits=Limits(wall_seconds=5, processes=8))\n"
        "program = 'import os\\nn = 0\\nfor _ in range(20):\\n    try:\\n        pid = os.fork()\\n'"
        " '    except OSError:\\n        n += 1\\n        continue\\n    if pid == 0:\\n        os._exit(0)\\n"
        "    os.wait()\\nprint(os.getuid(), n)\\n'\n"
        "result = sandbox.run({'main.py': program}, path='main.py')\n"
        "print(result.status.value, result.sandboxed, result.uid, repr(result.stdout))\n"
    )
    tmp_path.chmod(0o755)
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script],
        cwd=tmp_path, capture_output=True, text=True, timeout=30,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok True 65534 '65534 0\\n'\n"


def test_the_uid_lock_dir_must_be_private(tmp_path: Path) -> None:
    from spark_ide.sandbox.core import UidPool

    loose = tmp_path / "locks"
    loose.mkdir()
    loose.chmod(0o777)
    with pytest.raises(SandboxConfigError, match="writable by it alone"):
        UidPool(lock_dir=loose).acquire()
    assert stat.S_IMODE(loose.stat().st_mode) == 0o777


@pytest.mark.parametrize(("args", "message"), [
    (["a\x00b"], "an argument contains a NUL character"),
    (["x"] * 65, "too many arguments: at most 64 words"),
    (["x" * 8_001], "of 8000 characters in all"),
    ("-x", "must be a list of strings"),
    ([1], "must be a list of strings"),
])
def test_bad_arguments_are_refused_before_anything_runs(sandbox: Sandbox, args: object, message: str) -> None:
    with pytest.raises(BadRun, match=message):
        sandbox.run({"main.py": ""}, path="main.py", args=args)  # type: ignore[arg-type]
