"""One running program: output pumped to a callback as it comes, stdin fed, limits and Stop enforced.

One thread — the one that calls `Run.wait` — owns the process: it reads, writes, signals
and reaps. Other threads only ask (`write_stdin`, `close_stdin`, `stop`): the request is
queued under a lock and the pump is woken through a pipe, so no signal can ever reach a
pid that was already reaped and reused.

Killing a run: SIGKILL to the jail's init (through a pidfd, so exactly that process), which
makes the kernel kill every process of the run's pid namespace, and SIGKILL to the process
group of the bubblewrap parent. The run counts as gone when the jail's init has exited (the
kernel lets it exit only after the namespace is empty) and, as root, when no process of the
run's uid is left.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from spark_ide.sandbox.core.limits import KB, Limits
from spark_ide.sandbox.core.results import STREAMS, RunResult, RunStatus, exit_message, kill_message
from spark_ide.sandbox.core.uids import kill_all_of

OutputSink = Callable[[str, str], None]
"""Called with (stream, text) — ``stdout`` or ``stderr`` — in the order the output was read."""

READ_BYTES = 64 * KB
FLUSH_BYTES = 8 * KB  # a batch of output is sent at this size, at a change of stream, or after the interval
KILL_GRACE_S = 3.0  # how long a killed jail may take to be empty
DRAIN_S = 0.5  # after the program exited, how long its output pipes may stay open (a leftover child)
STDIN_MAX_PENDING = 64 * KB


class RunInputError(RuntimeError):
    """The program's input is closed, or it is not reading and too much is waiting."""


@dataclass
class Launch:
    """A started process and what its run needs to know and undo (built by `Sandbox.start`)."""

    process: subprocess.Popen[bytes]
    limits: Limits
    uid: int
    sweep_uid: bool  # root: the uid is this run's alone, so every process of it is swept at the end
    sandboxed: bool
    info_fd: int | None  # bubblewrap's --info-fd: the jail's init pid
    cleanup: Callable[[], None]  # removes the run's directory, gives the uid back
    started: float  # time.monotonic() just before the process was started


class Run:
    def __init__(self, launch: Launch, *, on_output: OutputSink | None = None, flush_interval: float = 0.05) -> None:
        self._launch = launch
        self._limits = launch.limits
        self._process = launch.process
        self._on_output = on_output
        self._flush_interval = flush_interval
        self._lock = threading.Lock()
        self._wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._wake_w: int | None = wake_w
        self._outer_pidfd = os.pidfd_open(self._process.pid)
        self._inner_pidfd: int | None = None
        self._info = b""
        # asked by other threads (under the lock)
        self._stdin_pending = bytearray()
        self._stdin_closing = False
        self._stdin_gone = False
        self._stop_requested = False
        # the pump's own
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")(errors="replace") for name in STREAMS}
        self._collected: dict[str, list[str]] = {name: [] for name in STREAMS}
        self._bytes = 0
        self._truncated = False
        self._batch_stream: str | None = None
        self._batch: list[str] = []
        self._batch_size = 0
        self._batch_since = 0.0
        self._kill_reason: RunStatus | None = None
        self._killed_at = 0.0
        self._exited_at: float | None = None
        self._result: RunResult | None = None
        assert self._process.stdin and self._process.stdout and self._process.stderr
        os.set_blocking(self._process.stdin.fileno(), False)

    @property
    def uid(self) -> int:
        return self._launch.uid

    @property
    def result(self) -> RunResult | None:
        return self._result

    # -- asked from any thread ---------------------------------------------------------------

    def write_stdin(self, text: str) -> None:
        """Queue ``text`` for the program's stdin (what the user typed)."""
        data = text.encode("utf-8", errors="replace")
        with self._lock:
            if self._stdin_closing or self._stdin_gone or self._result is not None:
                raise RunInputError("the program's input is closed")
            if len(self._stdin_pending) + len(data) > STDIN_MAX_PENDING:
                raise RunInputError(f"the program is not reading its input ({STDIN_MAX_PENDING} bytes are waiting)")
            self._stdin_pending += data
        self._wake()

    def close_stdin(self) -> None:
        """End of input (Ctrl+D): closed once everything queued has been written."""
        with self._lock:
            self._stdin_closing = True
        self._wake()

    def stop(self) -> None:
        """Kill the run (status ``killed``); returns at once, `wait` returns when it is gone."""
        with self._lock:
            self._stop_requested = True
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            if self._wake_w is not None:  # None: the run is over and its descriptors are closed
                with contextlib.suppress(BlockingIOError):  # the pipe is full: the pump is awake anyway
                    os.write(self._wake_w, b"!")

    # -- the pump (the thread that calls wait) -------------------------------------------------

    def wait(self) -> RunResult:
        """Pump the run until it has ended and everything of it is gone; return how it ended."""
        if self._result is None:
            try:
                self._pump()
            finally:
                self._reap()
            self._result = self._outcome()
        return self._result

    def _pump(self) -> None:
        process = self._process
        assert process.stdout and process.stderr and process.stdin
        selector = selectors.DefaultSelector()
        selector.register(process.stdout.fileno(), selectors.EVENT_READ, "stdout")
        selector.register(process.stderr.fileno(), selectors.EVENT_READ, "stderr")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        selector.register(self._outer_pidfd, selectors.EVENT_READ, "exit")
        if self._launch.info_fd is not None:
            selector.register(self._launch.info_fd, selectors.EVENT_READ, "info")
        streams = {"stdout": process.stdout, "stderr": process.stderr}
        deadline = self._launch.started + self._limits.wall_seconds
        try:
            while streams or self._exited_at is None:
                now = time.monotonic()
                if self._kill_reason is None and self._stop_requested:
                    self._kill(RunStatus.KILLED)
                elif self._kill_reason is None and now >= deadline:
                    self._kill(RunStatus.TIMEOUT)
                elif self._kill_reason is not None and now >= self._killed_at + KILL_GRACE_S:
                    break  # the jail did not close its pipes in time; reaping sweeps it
                if self._exited_at is not None and now >= self._exited_at + DRAIN_S:
                    break  # something the program left behind holds its pipes open
                self._service_stdin(selector)
                for key, _ in selector.select(self._timeout(now, deadline)):
                    if key.fd in selector.get_map():  # not closed by an earlier event of this round
                        self._on_ready(selector, key.fd, key.data, streams)
                if self._batch and time.monotonic() >= self._batch_since + self._flush_interval:
                    self._flush()
        finally:
            selector.close()
        for name in list(streams):
            self._end_stream(name)
        self._flush()

    def _timeout(self, now: float, deadline: float) -> float:
        until = [self._killed_at + KILL_GRACE_S if self._kill_reason is not None else deadline]
        if self._batch:
            until.append(self._batch_since + self._flush_interval)
        if self._exited_at is not None:
            until.append(self._exited_at + DRAIN_S)
        return max(0.0, min(until) - now)

    def _on_ready(self, selector: selectors.BaseSelector, fd: int, tag: str, streams: dict[str, IO[bytes]]) -> None:
        if tag == "wake":
            while True:
                try:
                    if not os.read(self._wake_r, 512):
                        break
                except BlockingIOError:
                    break
        elif tag == "exit":
            selector.unregister(fd)
            self._exited_at = time.monotonic()
        elif tag == "info":
            self._read_info(selector, fd)
        elif tag == "stdin":
            self._write_stdin_ready(selector)
        else:
            data = os.read(fd, READ_BYTES)
            if data and not self._truncated:
                self._take(tag, data)
            if not data or self._truncated:
                selector.unregister(fd)
                streams.pop(tag)
                self._end_stream(tag)
                if self._truncated:  # past the cap nothing more is read: both pipes are closed
                    for other in list(streams):
                        selector.unregister(getattr(self._process, other).fileno())
                        streams.pop(other)
                        self._end_stream(other)

    def _take(self, stream: str, data: bytes) -> None:
        room = self._limits.output_bytes - self._bytes
        if len(data) > room:
            data = data[:room]
            self._truncated = True
        self._bytes += len(data)
        self._add(stream, self._decoders[stream].decode(data))
        if self._truncated:
            self._kill(RunStatus.OUTPUT_TRUNCATED)

    def _end_stream(self, stream: str) -> None:
        self._add(stream, self._decoders[stream].decode(b"", final=True))
        getattr(self._process, stream).close()

    def _add(self, stream: str, text: str) -> None:
        if not text:
            return
        self._collected[stream].append(text)
        if self._batch_stream != stream:
            self._flush()
            self._batch_stream = stream
        if not self._batch:
            self._batch_since = time.monotonic()
        self._batch.append(text)
        self._batch_size += len(text)
        if self._batch_size >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._batch and self._batch_stream is not None:
            text = "".join(self._batch)
            self._batch.clear()
            self._batch_size = 0
            if self._on_output is not None:
                self._on_output(self._batch_stream, text)

    def _read_info(self, selector: selectors.BaseSelector, fd: int) -> None:
        chunk = os.read(fd, 4096)
        self._info += chunk
        try:
            pid = int(json.loads(self._info)["child-pid"])
        except (ValueError, KeyError, TypeError):
            if chunk and len(self._info) < 64 * KB:
                return  # more to come
            pid = None  # bubblewrap failed before forking; its message is on stderr
        selector.unregister(fd)
        os.close(fd)
        self._launch.info_fd = None
        if pid is None:
            return
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # already gone
        if self._parent_of(pid) == self._process.pid:  # still the jail's init, not a reused pid
            self._inner_pidfd = pidfd
            if self._kill_reason is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.close(pidfd)

    @staticmethod
    def _parent_of(pid: int) -> int | None:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("PPid:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def _service_stdin(self, selector: selectors.BaseSelector) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.closed:
            return
        with self._lock:
            pending = bool(self._stdin_pending)
            closing = self._stdin_closing
        registered = "stdin" in {key.data for key in selector.get_map().values()}
        if pending and not registered:
            selector.register(stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        elif not pending and registered:
            selector.unregister(stdin.fileno())
        if not pending and closing:
            stdin.close()

    def _write_stdin_ready(self, selector: selectors.BaseSelector) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        with self._lock:
            try:
                written = os.write(stdin.fileno(), bytes(self._stdin_pending[:READ_BYTES]))
                del self._stdin_pending[:written]
            except BlockingIOError:
                return
            except (BrokenPipeError, OSError):  # the program closed its input or ended
                self._stdin_pending.clear()
                self._stdin_gone = True
                selector.unregister(stdin.fileno())
                stdin.close()

    def _kill(self, reason: RunStatus) -> None:
        """SIGKILL the jail's init and the bubblewrap process group (first reason wins)."""
        if self._kill_reason is None:
            self._kill_reason = reason
            self._killed_at = time.monotonic()
        if self._inner_pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._inner_pidfd, signal.SIGKILL)
        if self._process.returncode is None:  # not reaped: the group id cannot have been reused
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def _reap(self) -> None:
        """Make sure nothing of the run is left, then free its directory and uid."""
        try:
            if self._process.poll() is None and self._exited_at is None:
                self._kill(self._kill_reason or RunStatus.KILLED)  # only when the pump failed
            try:
                self._process.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                self._kill(self._kill_reason or RunStatus.KILLED)
                self._process.wait()
            if self._exited_at is None:
                self._exited_at = time.monotonic()
            if self._inner_pidfd is not None:
                # readable once the jail's init has exited, which the kernel allows only when
                # every other process of its namespace is gone
                selector = selectors.DefaultSelector()
                selector.register(self._inner_pidfd, selectors.EVENT_READ)
                if not selector.select(KILL_GRACE_S):
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(self._inner_pidfd, signal.SIGKILL)
                selector.close()
            if self._launch.sweep_uid:
                kill_all_of(self._launch.uid)
        finally:
            with self._lock:
                self._stdin_gone = True
                if self._wake_w is not None:
                    os.close(self._wake_w)
                    self._wake_w = None
            for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
                if stream is not None:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()
            for fd in (self._wake_r, self._outer_pidfd, self._inner_pidfd, self._launch.info_fd):
                if fd is not None:
                    os.close(fd)
            self._launch.cleanup()

    def _outcome(self) -> RunResult:
        assert self._exited_at is not None
        code = self._process.returncode
        if code < 0:  # ended by a signal, unsandboxed: the shell's convention, as bubblewrap reports it
            code = 128 - code
        if self._kill_reason is not None:
            status, exit_code, message = self._kill_reason, None, kill_message(self._kill_reason, limits=self._limits)
        else:
            tail = "".join(self._collected["stderr"])[-2000:]
            status, message = exit_message(code, stderr_tail=tail, limits=self._limits)
            exit_code = code
        if not self._launch.sandboxed:
            message = f"{message} (ran without the sandbox: limits and uid only)"
        return RunResult(
            status=status,
            exit_code=exit_code,
            duration_ms=round((self._exited_at - self._launch.started) * 1000),
            truncated=self._truncated,
            message=message,
            sandboxed=self._launch.sandboxed,
            uid=self._launch.uid,
            stdout="".join(self._collected["stdout"]),
            stderr="".join(self._collected["stderr"]),
        )
