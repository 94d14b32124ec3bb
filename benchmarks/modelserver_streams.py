"""The model server's own CPU per token with many paced streams at once.

``python -m spark_ide.modelserver --engine scripted`` runs in a process of its own (so its
CPU clock, ``/proc/<pid>/stat``, counts nothing else); N sockets (raw WebSocket clients in
this process, cheap: they count frames and look for the terminal event, no JSON) each ask
for one answer of ``tokens`` tokens at ``rate`` tokens/s, all at once. The figure: the server's
CPU time over the answers, per token. Beside it the deltas sent (one token each while the
engine keeps its schedule; a stream that fell behind carries several per delta, which costs
less per token) and the slowest stream's rate against the target.

``root`` is the tree whose model server runs (another checkout, to compare two versions in
the same minutes).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.pairing.client import client_frame
from benchmarks.report import summary
from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engines.scripted import split_tokens

ROOT = Path(__file__).resolve().parents[1]
PACED_RATE = 1000.0
STREAM_TOKENS = 2000
_TERMINAL = tuple(
    json.dumps({"type": kind})[:-1].encode() for kind in (protocol.COMPLETED, protocol.INCOMPLETE, protocol.FAILED)
)
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU time of process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def run_seconds(pid: int) -> float:
    """CPU time of process ``pid``'s main thread in nanoseconds' precision (the model server
    serves from one thread): ``/proc/<pid>/schedstat``."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


@dataclass
class _Stream(asyncio.Protocol):
    """One client socket: the upgrade, then server frames counted (unmasked, unfragmented)."""

    handshaken: asyncio.Future[None]
    buffer: bytearray = field(default_factory=bytearray)
    frames: int = 0
    # While set: each frame's arrival and its first bytes (its type, a response's id).
    recording: list[tuple[float, bytes]] | None = None
    done: asyncio.Future[float] | None = None
    transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if not self.handshaken.done():
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            if not buffer.startswith(b"HTTP/1.1 101"):
                self.handshaken.set_exception(ConnectionError(bytes(buffer[:end]).decode(errors="replace")))
                return
            del buffer[: end + 4]
            self.handshaken.set_result(None)
        start = 0
        while len(buffer) - start >= 2:
            size = buffer[start + 1] & 0x7F
            head = 2
            if size == 126:
                head = 4
                if len(buffer) - start < head:
                    break
                size = int.from_bytes(buffer[start + 2 : start + 4], "big")
            elif size == 127:
                head = 10
                if len(buffer) - start < head:
                    break
                size = int.from_bytes(buffer[start + 2 : start + 10], "big")
            if len(buffer) - start < head + size:
                break
            if buffer[start] & 0x0F == 0x9 and self.transport is not None:  # ping: pong
                self.transport.write(client_frame(0xA, bytes(buffer[start + head : start + head + size])))
            payload = bytes(buffer[start + head : start + head + min(size, 140)])
            start += head + size
            self.frames += 1
            if self.recording is not None:
                self.recording.append((time.perf_counter(), payload))
            if self.done is not None and not self.done.done() and payload.startswith(_TERMINAL):
                self.done.set_result(time.perf_counter())
        del buffer[:start]

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(ConnectionError("the model server closed the socket"))

    def send(self, message: dict[str, Any]) -> None:
        assert self.transport is not None
        self.transport.write(client_frame(0x1, json.dumps(message).encode()))

    async def ask(self, text: str) -> float:
        """Send a response.create for ``text``; the time its terminal event arrived."""
        self.done = asyncio.get_running_loop().create_future()
        self.send({"type": protocol.CREATE, "model": "smollm2", "input": text})
        return await self.done


async def _open(port: int) -> _Stream:
    loop = asyncio.get_running_loop()
    stream = _Stream(loop.create_future())
    await loop.create_connection(lambda: stream, "127.0.0.1", port)
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    assert stream.transport is not None
    stream.transport.write(
        f"GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    await stream.handshaken
    return stream


def answer_text(tokens: int, salt: int) -> str:
    """``tokens`` tokens of prose and code (the rooms benchmark's kind of answer)."""
    from benchmarks.pairing.run import mixed

    return mixed(tokens, salt=salt)


async def _wait_listening(process: subprocess.Popen[bytes], log: Path) -> int:
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited: {log.read_text(errors='replace')[-2000:]}")
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("listening on ws://"):
                return int(line.rsplit(":", 1)[1].split("/", 1)[0])
        await asyncio.sleep(0.05)
    raise RuntimeError("the model server did not start listening")


@asynccontextmanager
async def _server(scripts: dict[str, str], rate: float, root: Path) -> AsyncIterator[tuple[int, int]]:
    """The scripted model server of ``root`` in a process of its own: its pid and port."""
    with tempfile.TemporaryDirectory(prefix="spark-streams-") as tmp:
        script_file, log = Path(tmp) / "scripts.json", Path(tmp) / "modelserver.log"
        script_file.write_text(json.dumps(scripts), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "spark_ide.modelserver", "--engine", "scripted", "--port", "0",
                 "--script-file", str(script_file), "--tokens-per-s", str(rate), "--ttft-ms", "0",
                 "--log-level", "WARNING"],
                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
            )
        try:
            yield process.pid, await _wait_listening(process, log)
        finally:
            process.terminate()
            process.wait(10)


async def paced_streams(
    counts: list[int], tokens: int, rate: float, root: Path = ROOT, rounds: int = 1
) -> list[dict[str, Any]]:
    """For each N of ``counts`` (``rounds`` times each): N streams at once, the server's CPU."""
    scripts = {f"s{i}": answer_text(tokens, i) for i in range(max(counts))}
    sizes = [len(split_tokens(text)) for text in scripts.values()]
    streams: list[_Stream] = []
    async with _server(scripts, rate, root) as (pid, port):
        try:
            results = []
            for count in counts:
                for _ in range(rounds):
                    while len(streams) < count:
                        stream = await _open(port)
                        await stream.ask("[say]warm[/say][rate:1e6]")
                        streams.append(stream)
                    results.append(await _measure(pid, streams[:count], sizes[:count], rate))
            return results
        finally:
            for stream in streams:
                if stream.transport is not None:
                    stream.transport.close()


_DELTA = json.dumps({"type": protocol.OUTPUT_TEXT_DELTA})[:-1].encode()
_CREATED = json.dumps({"type": protocol.CREATED})[:-1].encode()
_COMPLETED = json.dumps({"type": protocol.COMPLETED})[:-1].encode()
_ID = re.compile(rb'"id": "(resp_[0-9a-f]+)"')


async def _until(stream: _Stream, found: Callable[[bytes], bool], since: int = 0) -> int:
    """The index of the first recorded frame from ``since`` that ``found`` accepts."""
    assert stream.recording is not None
    while True:
        for index in range(since, len(stream.recording)):
            if found(stream.recording[index][1]):
                return index
        since = len(stream.recording)
        await asyncio.sleep(0.0005)


async def steers(count: int, ttft_ms: float = 20.0, root: Path = ROOT) -> dict[str, Any]:
    """A steer as the IDE sends it to our server: a long answer at 1,000 tokens/s, 5-45 ms
    after its first delta a new ``response.create`` (a ``[say]`` at ``ttft_ms``) and then
    ``response.cancel`` for the running one (the new request waits behind it, as on OpenAI's
    socket). Per steer: the re-prompt sent -> the new answer's first delta, minus the TTFT
    asked for; and the server's CPU (its thread's run time) over that span."""
    async with _server({"long": answer_text(5_000, 0)}, PACED_RATE, root) as (pid, port):
        stream = await _open(port)
        await stream.ask("[say]warm[/say][rate:1e6]")
        gaps, cpus = [], []
        for index in range(count):
            stream.recording = []
            stream.send({"type": protocol.CREATE, "model": "smollm2", "input": "[script:long][ttft:0]"})
            created = await _until(stream, lambda frame: frame.startswith(_CREATED))
            match = _ID.search(stream.recording[created][1])
            assert match is not None
            await _until(stream, lambda frame: frame.startswith(_DELTA), created)
            await asyncio.sleep((5 + index * 7 % 40) / 1000)
            mark, cpu, sent = len(stream.recording), run_seconds(pid), time.perf_counter()
            stream.send({"type": protocol.CREATE, "model": "smollm2",
                         "input": f"[say]steered answer number {index}[/say][ttft:{ttft_ms:g}]"})
            stream.send({"type": protocol.CANCEL, "response_id": match.group(1).decode()})
            second = await _until(stream, lambda frame: frame.startswith(_CREATED), mark)
            first = await _until(stream, lambda frame: frame.startswith(_DELTA), second)
            cpus.append((run_seconds(pid) - cpu) * 1000)
            gaps.append((stream.recording[first][0] - sent) * 1000 - ttft_ms)
            await _until(stream, lambda frame: frame.startswith(_COMPLETED), first)  # the steered answer's end
        stream.recording = None
        assert stream.transport is not None
        stream.transport.close()
    return {"steers": count, "first_token_minus_ttft_ms": summary(gaps), "server_cpu_ms": summary(cpus)}


async def _measure(pid: int, streams: list[_Stream], sizes: list[int], rate: float) -> dict[str, Any]:
    for stream in streams:
        stream.frames = 0
    (user, system), ran, began = cpu_seconds(pid), run_seconds(pid), time.perf_counter()
    ends = await asyncio.gather(*(s.ask(f"[script:s{i}]") for i, s in enumerate(streams)))
    user_after, system_after = cpu_seconds(pid)
    user, system = user_after - user, system_after - system
    # The CPU time from schedstat (nanoseconds): /proc/<pid>/stat counts in clock ticks (10 ms),
    # which a short run (a test's 900 tokens) can see as nothing. The ticks give the system share.
    cpu = run_seconds(pid) - ran
    total = sum(sizes)
    slowest = max(ends) - began
    frames = sum(s.frames for s in streams)
    return {
        "streams": len(streams),
        "tokens": total,
        "cpu_us_per_token": round(cpu / total * 1e6, 2),
        "server_cpu_share": round(cpu / slowest, 3),
        "system_share_of_cpu": round(system / (user + system), 3) if user + system else 0.0,
        "cpu_us_per_frame": round(cpu / frames * 1e6, 2),
        "frames_per_token": round(frames / total, 3),
        "slowest_rate_share": round(max(sizes) / rate / slowest, 3),
    }


def main(argv: list[str]) -> None:
    """``python -m benchmarks.modelserver_streams ROOT N[,N...] [TOKENS] [ROUNDS]``: JSON lines;
    ``... ROOT steer [COUNT]``: the steer figures."""
    if argv[1] == "steer":
        print(json.dumps(asyncio.run(steers(int(argv[2]) if len(argv) > 2 else 30, root=Path(argv[0])))))
        return
    root, counts = Path(argv[0]), [int(n) for n in argv[1].split(",")]
    tokens = int(argv[2]) if len(argv) > 2 else STREAM_TOKENS
    rounds = int(argv[3]) if len(argv) > 3 else 1
    for result in asyncio.run(paced_streams(counts, tokens, PACED_RATE, root, rounds)):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
