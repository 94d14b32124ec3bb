"""Each limit holds, is reported clearly, and leaves the machine healthy (a normal run right after)."""

from __future__ import annotations

import dataclasses

from spark_ide.sandbox.core import Limits, RunStatus, Sandbox
from tests.sandbox.conftest import assert_gone, source

FORK_BOMB = source(
    "import os",
    "while True:",
    "    try:",
    "        os.fork()",
    "    except OSError:",
    "        pass",
)


def still_healthy(sandbox: Sandbox) -> None:
    after = sandbox.run(source("import os", "print('fine', os.fork() > 0 or os._exit(0))"), path="main.py")
    assert after.status is RunStatus.OK and after.stdout == "fine True\n"


def limited(sandbox: Sandbox, *, wall_seconds: float, cpu_seconds: int | None = None) -> Sandbox:
    cpu = sandbox.limits.cpu_seconds if cpu_seconds is None else cpu_seconds
    return Sandbox(limits=dataclasses.replace(sandbox.limits, wall_seconds=wall_seconds, cpu_seconds=cpu))


def test_an_infinite_loop_is_stopped_by_the_wall_clock(sandbox: Sandbox) -> None:
    result = limited(sandbox, wall_seconds=1.5).run(source("while True:", "    pass"), path="main.py")
    assert result.status is RunStatus.TIMEOUT and result.exit_code is None
    assert result.message == "stopped: still running after the time limit of 1.5 s"
    assert result.duration_ms >= 1500  # not before the limit (the 5 s CPU limit would say so if it came after)
    assert_gone(result)


def test_the_cpu_limit_ends_a_busy_program(sandbox: Sandbox) -> None:
    result = limited(sandbox, cpu_seconds=1, wall_seconds=10).run(source("while True:", "    pass"), path="main.py")
    assert result.status is RunStatus.TIMEOUT and result.exit_code == 152  # 128 + SIGXCPU
    assert result.message == "stopped: the CPU time limit of 1 s was reached"
    assert_gone(result)


def test_a_fork_bomb_is_held_at_the_process_limit_then_cleared(sandbox: Sandbox) -> None:
    result = limited(sandbox, wall_seconds=2).run(FORK_BOMB, path="main.py")
    assert result.status is RunStatus.TIMEOUT
    assert result.message == "stopped: still running after the time limit of 2 s"
    assert_gone(result)
    still_healthy(sandbox)


def test_a_plain_fork_bomb_fails_with_the_process_limit_named(sandbox: Sandbox) -> None:
    result = sandbox.run(source("import os", "while True:", "    os.fork()"), path="main.py")
    assert result.status is RunStatus.FAILED
    assert "Resource temporarily unavailable" in result.stderr
    assert "at most 16 processes" in result.message
    assert_gone(result)
    still_healthy(sandbox)


def test_a_memory_bomb_gets_a_memory_error(sandbox: Sandbox) -> None:
    result = sandbox.run(source("chunks = []", "while True:", "    chunks.append(b'x' * 10_000_000)"), path="main.py")
    assert result.status is RunStatus.FAILED and result.exit_code == 1
    assert "MemoryError" in result.stderr
    assert "ran out of memory (limit: 256 MB per process)" in result.message
    assert_gone(result)
    still_healthy(sandbox)


def test_a_disk_fill_ends_at_the_tmpfs_size(sandbox: Sandbox) -> None:
    program = source(
        "n = 0",
        "while True:",
        "    with open(f'fill{n}', 'wb') as out:",
        "        out.write(b'x' * 1_000_000)",
        "    n += 1",
    )
    result = sandbox.run(program, path="main.py")
    assert result.status is RunStatus.FAILED
    assert "No space left on device" in result.stderr
    assert "filled its disk (limit: 8 MB)" in result.message
    still_healthy(sandbox)


def test_a_file_over_the_size_limit_cannot_be_written(sandbox: Sandbox) -> None:
    result = sandbox.run(source("open('big', 'wb').write(b'x' * 2_000_000)"), path="main.py")
    assert result.status is RunStatus.FAILED and "File too large" in result.stderr
    assert "over the size limit (1048576 bytes)" in result.message


def test_the_limits_are_applied_inside(sandbox: Sandbox) -> None:
    program = source(
        "import resource as r",
        "print([r.getrlimit(k) for k in (r.RLIMIT_CPU, r.RLIMIT_AS, r.RLIMIT_NPROC, r.RLIMIT_FSIZE, r.RLIMIT_NOFILE)])",
    )
    result = sandbox.run(program, path="main.py")
    limits: Limits = sandbox.limits
    expected = [
        (limits.cpu_seconds, limits.cpu_seconds + 1), (limits.memory_bytes,) * 2, (limits.processes,) * 2,
        (limits.file_bytes,) * 2, (limits.open_files,) * 2,
    ]
    assert result.stdout == f"{expected}\n"
