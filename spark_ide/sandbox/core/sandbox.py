"""Starting runs: checks, a uid, a fresh directory, then bubblewrap (or, only if allowed, no jail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from spark_ide.sandbox.core.files import BadRun, checked_parts, materialise
from spark_ide.sandbox.core.jail import (
    JAIL_TMP,
    WORK_DIR,
    Probe,
    bwrap_argv,
    child_env,
    identity_files,
    prlimit_argv,
    probe,
)
from spark_ide.sandbox.core.limits import Limits, SandboxConfigError
from spark_ide.sandbox.core.results import RunResult
from spark_ide.sandbox.core.run import Launch, OutputSink, Run
from spark_ide.sandbox.core.uids import UidLease, UidPool

DEFAULT_PYTHON = "/usr/bin/python3"
PYTEST_ARGS = ("-m", "pytest", "-p", "no:cacheprovider")
MAX_ARGS = 64  # words after the file (or after pytest), as the run tool's command allows
MAX_ARGS_CHARS = 8_000


class SandboxUnavailable(RuntimeError):
    """Runs are refused: bubblewrap (or the runtime) cannot run here, and unsandboxed runs are not allowed."""


@dataclass(frozen=True, slots=True)
class _Command:
    """How a run's program is started: its command line, environment and directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: str


_probes: dict[tuple[str, str, bool], Probe] = {}  # successful probes, per (bwrap, python, as root)
_probes_lock = threading.Lock()


class Sandbox:
    """Runs a workspace's file (``python path [args]``) or its tests (``pytest [args]``) within `Limits`.

    As root every run gets a uid of its own from ``uid_pool``; otherwise runs are the
    caller's, inside bubblewrap's user namespace. Where bubblewrap cannot run, `start`
    raises `SandboxUnavailable`, unless ``allow_unsandboxed``: then the program runs with
    the rlimits and the uid only, and its result says so (``sandboxed=False``).
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        python: str = DEFAULT_PYTHON,
        bwrap: str = "bwrap",
        uid_pool: UidPool | None = None,
        allow_unsandboxed: bool = False,
        flush_interval: float = 0.05,
    ) -> None:
        if not os.path.isabs(python) or not python.startswith("/usr/"):
            raise SandboxConfigError(f"the student runtime must be a path under /usr (the jail's system): {python!r}")
        self.limits = limits or Limits()
        self.python = python
        self.bwrap = bwrap
        self.uid_pool = uid_pool or UidPool()
        self.allow_unsandboxed = allow_unsandboxed
        self.flush_interval = flush_interval

    def run(
        self, files: Mapping[str, str], *, path: str | None = None, tests: bool = False,
        args: Sequence[str] = (), on_output: OutputSink | None = None, stdin: str | None = None,
    ) -> RunResult:
        """Start, give it ``stdin`` (then end of input) if any, and wait for the end."""
        run = self.start(files, path=path, tests=tests, args=args, on_output=on_output)
        if stdin is not None:
            run.write_stdin(stdin)
            run.close_stdin()
        return run.wait()

    def start(
        self, files: Mapping[str, str], *, path: str | None = None, tests: bool = False,
        args: Sequence[str] = (), on_output: OutputSink | None = None,
    ) -> Run:
        """Start a run; the caller must `Run.wait` it (that pumps its output and cleans up).
        ``args`` follow the file (the program's arguments) or ``pytest`` (its paths and
        options, relative to the workspace, which is the working directory)."""
        program = self._program(files, path=path, tests=tests, args=checked_args(args))
        as_root = os.geteuid() == 0
        lease: UidLease | None = self.uid_pool.acquire() if as_root else None
        uid = lease.uid if lease is not None else os.getuid()
        owner = uid if as_root else None  # the run's own uid, owning its files (None: the caller's)
        run_dir: Path | None = None
        info_r: int | None = None
        info_w: int | None = None

        def cleanup() -> None:
            if run_dir is not None:
                shutil.rmtree(run_dir, ignore_errors=True)
            if lease is not None:
                lease.release()

        try:
            sandboxed = self._jail_works(owner, tests=tests)
            run_dir = Path(tempfile.mkdtemp(prefix="spark-run-"))
            seed = self._seed(run_dir, files, owner=owner)
            if sandboxed:
                identity_files(run_dir, uid=uid)
                info_r, info_w = os.pipe2(os.O_CLOEXEC)
                command = self._jailed(run_dir, program, info_fd=info_w)
            else:
                command = self._unjailed(run_dir, seed, program, owner=owner)
            started = time.monotonic()
            process = self._spawn(command, owner=owner, info_fd=info_w)
        except BaseException:
            cleanup()
            if info_r is not None:
                os.close(info_r)
            raise
        finally:
            if info_w is not None:
                os.close(info_w)
        launch = Launch(
            process=process, limits=self.limits, uid=uid, sweep_uid=as_root, sandboxed=sandboxed,
            info_fd=info_r, cleanup=cleanup, started=started,
        )
        try:
            return Run(launch, on_output=on_output, flush_interval=self.flush_interval)
        except BaseException:
            process.kill()  # the jail's init dies with it (--die-with-parent)
            process.wait()
            cleanup()
            raise

    def _seed(self, run_dir: Path, files: Mapping[str, str], *, owner: int | None) -> Path:
        """The workspace's files written under ``run_dir`` (``seed``: what the run starts from),
        owned by ``owner`` if given."""
        seed = run_dir / "seed"
        seed.mkdir()
        seed.chmod(0o755)
        if owner is not None:
            for folder in (run_dir, seed):
                os.chown(folder, owner, owner)
        materialise(files, seed, limits=self.limits, owner=owner)
        return seed

    def _jailed(self, run_dir: Path, program: Callable[[str], list[str]], *, info_fd: int) -> _Command:
        """The program inside bubblewrap, which reports on ``info_fd`` (the jail's pids)."""
        argv = bwrap_argv(
            bwrap=self.bwrap, run_dir=run_dir, limits=self.limits, info_fd=info_fd,
            program=[self.python, *program(WORK_DIR)],
        )
        return _Command(argv=argv, env=child_env(home=JAIL_TMP, tmp=JAIL_TMP), cwd="/")

    def _unjailed(
        self, run_dir: Path, seed: Path, program: Callable[[str], list[str]], *, owner: int | None,
    ) -> _Command:
        """The program with the rlimits only (bubblewrap cannot run here, and that is allowed)."""
        tmp = run_dir / "tmp"
        tmp.mkdir(mode=0o700)
        if owner is not None:
            os.chown(tmp, owner, owner)
        prlimit = shutil.which("prlimit", path="/usr/bin:/bin") or "prlimit"
        argv = [prlimit, *prlimit_argv(self.limits)[1:], self.python, *program(str(seed))]
        return _Command(argv=argv, env=child_env(home=str(tmp), tmp=str(tmp)), cwd=str(seed))

    @staticmethod
    def _spawn(command: _Command, *, owner: int | None, info_fd: int | None) -> subprocess.Popen[bytes]:
        """Start ``command`` in a session of its own, as ``owner`` with no other group if given."""
        return subprocess.Popen(  # noqa: S603 - a command line we built, no shell
            command.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=command.env,
            cwd=command.cwd, start_new_session=True, pass_fds=() if info_fd is None else (info_fd,),
            user=owner, group=owner, extra_groups=[] if owner is not None else None,
        )

    @staticmethod
    def _program(
        files: Mapping[str, str], *, path: str | None, tests: bool, args: tuple[str, ...] = (),
    ) -> Callable[[str], list[str]]:
        """The program's arguments after the interpreter, given where the workspace is."""
        if path is not None:
            checked_parts(path)
            if path not in files:
                raise BadRun(f"there is no file {path[:200]!r} in the workspace")
        if tests:
            return lambda base: [*PYTEST_ARGS, *([f"{base}/{path}"] if path is not None else []), *args]
        if path is None:
            raise BadRun("say which file to run (a path), or run the tests")
        return lambda base: [f"{base}/{path}", *args]

    def _jail_works(self, uid: int | None, *, tests: bool) -> bool:
        """True when runs go into bubblewrap; False when it cannot run and that is allowed."""
        found = shutil.which(self.bwrap)
        problem = ""
        result: Probe | None = None
        if found is None:
            problem = f"bubblewrap ({self.bwrap}) is not installed"
        else:
            key = (found, self.python, uid is not None)
            with _probes_lock:
                result = _probes.get(key)
            if result is None:
                result = probe(bwrap=found, python=self.python, uid=uid)
                if result.works:
                    with _probes_lock:
                        _probes[key] = result
                else:
                    problem = f"bubblewrap cannot run here: {result.detail}"
        if problem:
            if self.allow_unsandboxed:
                return False
            raise SandboxUnavailable(
                f"code runs are refused: {problem}. Install it (make sandbox-runtime) or, accepting a weaker "
                "isolation (limits and uid only), set SPARK_SANDBOX_ALLOW_UNSANDBOXED=true."
            )
        if tests and result is not None and not result.has_pytest:
            raise SandboxUnavailable(f"pytest is not installed for the student runtime {self.python} "
                                     "(make sandbox-runtime)")
        return True


def checked_args(args: Sequence[str]) -> tuple[str, ...]:
    """A run's arguments as given, or `BadRun`: words of text, no NUL, not too many."""
    if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
        raise BadRun("a run's arguments must be a list of strings")
    if len(args) > MAX_ARGS or sum(len(arg) for arg in args) > MAX_ARGS_CHARS:
        raise BadRun(f"too many arguments: at most {MAX_ARGS} words of {MAX_ARGS_CHARS} characters in all")
    if any("\x00" in arg for arg in args):
        raise BadRun("an argument contains a NUL character")
    return tuple(args)
