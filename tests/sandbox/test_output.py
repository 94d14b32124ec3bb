"""Output: streamed as it comes, stdout and stderr apart and in order; exit codes; the output cap."""

from __future__ import annotations

import threading

from spark_ide.sandbox.core import RunStatus, Sandbox
from tests.sandbox.conftest import assert_gone, source, wait_for


def test_it_streams_stdout_and_stderr_apart_and_in_order(sandbox: Sandbox) -> None:
    seen: list[tuple[str, str]] = []
    program = source(
        "import sys, time",
        "print('out 1')",
        "input()",  # held until the test has seen 'out 1': it came while the program ran
        "print('err 1', file=sys.stderr)",
        "time.sleep(0.2)",
        "print('out 2')",
        "print('out 3')",
    )
    run = sandbox.start(program, path="main.py", on_output=lambda stream, text: seen.append((stream, text)))

    def go_on_once_streamed() -> None:
        wait_for(lambda: ("stdout", "out 1\n") in seen)
        run.write_stdin("\n")

    reader = threading.Thread(target=go_on_once_streamed)
    reader.start()
    result = run.wait()
    reader.join()
    assert result.status is RunStatus.OK and result.exit_code == 0 and result.message == "exited with code 0"
    assert seen == [("stdout", "out 1\n"), ("stderr", "err 1\n"), ("stdout", "out 2\nout 3\n")]
    assert result.stdout == "out 1\nout 2\nout 3\n" and result.stderr == "err 1\n"
    assert result.sandboxed and not result.truncated
    assert_gone(result)


def test_a_non_zero_exit_is_failed_with_its_code(sandbox: Sandbox) -> None:
    result = sandbox.run(source("import sys", "print('bye')", "sys.exit(3)"), path="main.py")
    assert (result.status, result.exit_code, result.message) == (RunStatus.FAILED, 3, "exited with code 3")
    assert result.stdout == "bye\n"


def test_a_syntax_error_is_failed_with_the_traceback(sandbox: Sandbox) -> None:
    result = sandbox.run({"main.py": "print('never'\n"}, path="main.py")
    assert result.status is RunStatus.FAILED and result.exit_code == 1
    assert "SyntaxError" in result.stderr and result.stdout == ""


def test_text_split_across_reads_stays_whole(sandbox: Sandbox) -> None:
    line = "héllo wörld ✓ " * 3000  # multi-byte characters over many pipe reads
    result = sandbox.run(source(f"print({line!r})"), path="main.py")
    assert result.status is RunStatus.OK and result.stdout == line + "\n"


def test_100_mb_of_output_is_cut_at_the_cap_and_the_run_stopped(sandbox: Sandbox) -> None:
    chunks: list[str] = []
    result = sandbox.run(
        source("import sys", "for _ in range(100):", "    sys.stdout.write('x' * 1024 * 1024)"),
        path="main.py", on_output=lambda stream, text: chunks.append(text),
    )
    assert result.status is RunStatus.OUTPUT_TRUNCATED and result.truncated and result.exit_code is None
    assert "output passed the limit of 65536 bytes" in result.message
    assert len(result.stdout) == 65536 and "".join(chunks) == result.stdout  # killed at the cap: no exit code
    assert_gone(result)
