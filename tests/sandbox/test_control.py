"""stdin and Stop, asked from another thread while the run is pumped."""

from __future__ import annotations

import threading

import pytest

from spark_ide.sandbox.core import RunInputError, RunStatus, Sandbox
from tests.sandbox.conftest import assert_gone, run_processes, source, wait_for


def test_input_gets_what_is_written_to_stdin(sandbox: Sandbox) -> None:
    seen: list[str] = []
    run = sandbox.start(source("name = input('name? ')", "print('hello', name)", "print(input())"), path="main.py",
                        on_output=lambda stream, text: seen.append(text))

    def user() -> None:
        wait_for(lambda: "name? " in "".join(seen))
        run.write_stdin("Ada\n")
        run.write_stdin("second line\n")

    typing = threading.Thread(target=user)
    typing.start()
    result = run.wait()
    typing.join()
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "name? hello Ada\nsecond line\n"


def test_closing_stdin_ends_the_input(sandbox: Sandbox) -> None:
    result = sandbox.run(source("import sys", "print(repr(sys.stdin.read()))"), path="main.py", stdin="a\nb")
    assert result.stdout == "'a\\nb'\n"


def test_a_program_that_never_reads_does_not_block_the_writer(sandbox: Sandbox) -> None:
    run = sandbox.start(source("import time", "time.sleep(30)"), path="main.py")
    waiting = threading.Thread(target=run.wait)
    waiting.start()
    try:
        with pytest.raises(RunInputError, match="not reading its input"):
            for _ in range(1000):
                run.write_stdin("x" * 1024)  # returns at once: queued, not written while the pipe is full
    finally:
        run.stop()
        waiting.join()


def test_stop_kills_the_whole_group(sandbox: Sandbox) -> None:
    seen: list[str] = []
    program = source(
        "import subprocess, time",
        "children = [subprocess.Popen(['/usr/bin/sleep', '60']) for _ in range(3)]",
        "print('started', flush=True)",
        "time.sleep(60)",
    )
    run = sandbox.start(program, path="main.py", on_output=lambda stream, text: seen.append(text))
    running: list[int] = []

    def stop_once_started() -> None:
        wait_for(lambda: "started" in "".join(seen))
        running.extend(run_processes(run.uid))  # what assert_gone looks for, seen while it runs
        run.stop()

    stopper = threading.Thread(target=stop_once_started)
    stopper.start()
    result = run.wait()
    stopper.join()
    # Killed by the Stop (the sleeps would have run into the 5 s wall limit: "timeout").
    assert result.status is RunStatus.KILLED and result.exit_code is None
    assert result.message == "stopped by a participant"
    assert len(running) >= 4, running  # the program and its three children at least
    assert_gone(result)


def test_input_after_the_end_is_refused(sandbox: Sandbox) -> None:
    run = sandbox.start(source("print(1)"), path="main.py")
    run.wait()
    with pytest.raises(RunInputError, match="input is closed"):
        run.write_stdin("late\n")
    run.stop()  # harmless once it is over
