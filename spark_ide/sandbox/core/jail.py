"""The bubblewrap command line of a run, and the probe that tells whether bubblewrap works here.

Inside the jail the run sees: the system's ``/usr`` (and the ``/bin``, ``/lib*`` links or
folders beside it) read-only, a fresh ``/proc`` and ``/dev``, its workspace on a tmpfs at
`WORK_DIR`, a tmpfs ``/tmp``, and nothing else of the host: not the project, the database,
``/root``, ``/etc`` (but the dynamic loader's cache and a two-line passwd), nor other runs.
Namespaces: all of them (no network: the loopback is down and nothing else exists).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from spark_ide.sandbox.core.limits import MB, Limits

WORK_DIR = "/workspace"
JAIL_TMP = "/tmp"  # noqa: S108 - the jail's own tmpfs, nobody else's
SEED_DIR = "/.workspace-seed"  # the materialised files, read-only; copied into WORK_DIR at start
SHM_BYTES = 8 * MB
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime")
CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"


def child_env(*, home: str, tmp: str) -> dict[str, str]:
    """The whole environment of a run (nothing of the server's leaks in)."""
    return {
        "PATH": CHILD_PATH,
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "USER": "student",
        "LOGNAME": "student",
        "PYTHONUNBUFFERED": "1",  # output streams as it is printed, not at exit
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def prlimit_argv(limits: Limits) -> list[str]:
    """``prlimit`` setting every rlimit (soft = hard, except CPU: SIGXCPU first, then SIGKILL).

    Set inside the jail, after bubblewrap made the user namespace, so the process count is
    the run's own even when the server's user (no root) has many processes elsewhere.
    """
    return [
        "prlimit",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]


def system_binds() -> list[str]:
    """Read-only binds of what a Debian runtime needs: /usr, the merged-/usr links, the loader cache."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    for path in SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def bwrap_argv(*, bwrap: str, run_dir: Path, limits: Limits, program: list[str], info_fd: int) -> list[str]:
    """The full command: bubblewrap, then a shell that copies the seed in and execs prlimit + the program."""
    start = f"cp -R {SEED_DIR}/. {WORK_DIR}/ && exec {shlex.join(prlimit_argv(limits))} \"$@\""
    return [
        bwrap,
        "--unshare-all", "--unshare-user", "--disable-userns",
        "--die-with-parent", "--new-session", "--hostname", "sandbox",
        "--info-fd", str(info_fd),
        *system_binds(),
        "--ro-bind", str(run_dir / "passwd"), "/etc/passwd",
        "--ro-bind", str(run_dir / "group"), "/etc/group",
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",  # noqa: S108 - the jail's, capped
        "--remount-ro", "/dev",
        "--size", str(limits.disk_bytes), "--tmpfs", WORK_DIR,
        "--size", str(limits.disk_bytes), "--tmpfs", JAIL_TMP,
        "--ro-bind", str(run_dir / "seed"), SEED_DIR,
        "--remount-ro", "/",
        "--chdir", WORK_DIR,
        "--", "/bin/sh", "-c", start, "sh", *program,
    ]


def identity_files(run_dir: Path, *, uid: int) -> None:
    """A passwd and group naming the run's uid ``student`` (``getpass``, ``pwd`` and pytest ask)."""
    (run_dir / "passwd").write_text(f"root:x:0:0::/root:/bin/sh\nstudent:x:{uid}:{uid}::{WORK_DIR}:/bin/sh\n")
    (run_dir / "group").write_text(f"root:x:0:\nstudent:x:{uid}:\n")
    for name in ("passwd", "group"):
        (run_dir / name).chmod(0o644)


@dataclass(frozen=True)
class Probe:
    """What a trial jail told: whether bubblewrap works, and whether the runtime has pytest."""

    works: bool
    has_pytest: bool
    detail: str


PROBE_CODE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pytest') else 3)"


def probe(*, bwrap: str, python: str, uid: int | None) -> Probe:
    """Start the runtime in a minimal jail as ``uid`` (as root) or as the caller."""
    argv = [
        bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", *system_binds(),
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", JAIL_TMP, "--remount-ro", "/", "--", python, "-c", PROBE_CODE,
    ]
    try:
        done = subprocess.run(  # noqa: S603 - a fixed command line
            argv, capture_output=True, text=True, timeout=10, env=child_env(home=JAIL_TMP, tmp=JAIL_TMP),
            start_new_session=True, user=uid, group=uid, extra_groups=None if uid is None else [],
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, False, f"{bwrap} could not start: {exc}")
    if done.returncode in (0, 3):
        return Probe(True, done.returncode == 0, "")
    return Probe(False, False, (done.stderr or done.stdout).strip()[-500:] or f"exit code {done.returncode}")
