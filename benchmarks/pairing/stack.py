"""The pairing benchmark's stack: real processes on loopback, and a tap that times frames.

``Stack`` starts, in a temp dir, the model server (scripted engine), a ``FrameTap`` in this
process in front of it, the IDE under Daphne (its own SQLite, migrated, one API user) whose
model base URL is the tap, and the bare relay (``relay``) whose upstream is the tap
too, so both relays pay the same extra hop. Every subprocess runs in its own process group
and is ended with it, however the benchmark ends.

``Stack(..., daphnes=N, database_url=..., redis_url=...)`` runs N Daphne processes sharing
PostgreSQL and Redis, as a production deployment does (``ide_urls``; rooms are shared by the
processes through Redis, ``spark_ide.live.owner``).

``Stack(..., upstream={...})`` points the IDE at a model server the caller runs (the
``SPARK_PROVIDER``/``OPENAI_*`` settings given); no model server, tap or relay is started.
``Stack(..., worker={...})`` starts a Celery worker too (the code runs, over ``redis_url``),
with those settings added to the IDE's (the sandbox's limits, say).
``Stack(..., settings={...})``: the IDE's settings over the stack's own (its edit dialect,
``SPARK_EDIT_STYLE=edits`` unless given, say). ``Stack(..., application=...)``: Daphne serves
that ASGI application instead of ``spark_ide.asgi:application`` (one that wraps it, as the
run-loop benchmark's ``benchmarks.runloop_asgi``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx

from benchmarks.loopproxy import frame_length
from spark_ide import responses_protocol as protocol
from spark_ide.ops.daphne_flags import STORM_PATIENCE

ROOT = Path(__file__).resolve().parents[2]
_HEADER_END = b"\r\n\r\n"
_TEXT_OPCODE = 0x1
_MAKE_USER = (
    "from django.contrib.auth import get_user_model;"
    "from spark_ide.accounts.services import api_token_create;"
    "print(api_token_create(user=get_user_model().objects.create_user('bench')))"
)


PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def fresh_postgres_database(name: str) -> str:
    """A new, empty PostgreSQL database ``name`` on the local server (dropped first if it
    was there); its URL, for ``Stack(database_url=...)``."""
    import psycopg  # only runs with PostgreSQL there

    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    return f"postgres://postgres@127.0.0.1:5432/{name}"


class StackError(Exception):
    """A part of the stack did not start; the message carries the end of its log."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _payload(frame: bytes) -> bytes:
    """A frame's payload, unmasked when it is a client frame."""
    size = frame[1] & 0x7F
    offset = {126: 4, 127: 10}.get(size, 2)
    if not frame[1] & 0x80:
        return frame[offset:]
    mask, data = frame[offset : offset + 4], frame[offset + 4 :]
    return bytes(byte ^ mask[i % 4] for i, byte in enumerate(data))


Tapped = tuple[float, bool, bytes]  # (monotonic time, from the server?, the whole frame)


class _Link:
    """One relayed connection: both ends, and the last text frame the client (the IDE) sent
    on it, kept masked as it passed (unmasked only when a cut looks for a link)."""

    __slots__ = ("client", "last_request", "upstream")

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client, self.upstream = client, upstream
        self.last_request = b""


class FrameTap:
    """A loopback TCP relay to the model server that notes when each text frame passed.

    Bytes are forwarded as they arrive, before any bookkeeping. While ``recording`` is a
    list, each complete text frame (either way) is appended with the monotonic time of the
    read that completed it; ``tapped_events`` decodes them afterwards, off the hot path.

    ``cut(needle)`` drops, without a close frame (a TCP reset both ways), every connection
    whose last request holds ``needle``: the model server's connection lost mid-turn, as a
    fault the soak injects.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.recording: list[Tapped] | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._links: set[_Link] = set()
        self.cuts = 0  # connections cut so far

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self.port

    @contextlib.contextmanager
    def recorded(self) -> Iterator[list[Tapped]]:
        """The text frames that pass while the block runs, in the list it is given."""
        frames: list[Tapped] = []
        self.recording = frames
        try:
            yield frames
        finally:
            self.recording = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the tap is not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        for writer in self._writers:
            writer.transport.abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers.update((writer, up_writer))
        link = _Link(writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(self._relay(reader, up_writer, False, link), self._relay(up_reader, writer, True))
        except (ConnectionError, asyncio.CancelledError):
            pass  # a link ends when either side or the benchmark ends it: nothing to report
        finally:
            self._links.discard(link)
            for end in (writer, up_writer):
                end.transport.abort()
                self._writers.discard(end)

    def cut(self, needle: bytes) -> int:
        """Abort every connection whose last request holds ``needle``; how many were cut."""
        cut = 0
        for link in list(self._links):
            if link.last_request and needle in _payload(link.last_request):
                link.client.transport.abort()
                link.upstream.transport.abort()
                self._links.discard(link)
                cut += 1
        self.cuts += cut
        return cut

    async def _relay(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, from_server: bool, link: _Link | None = None
    ) -> None:
        buffer = bytearray()
        upgraded = False  # the HTTP upgrade (request or response) comes before any frame
        while chunk := await reader.read(65536):
            at = time.monotonic()
            writer.write(chunk)
            buffer += chunk
            if not upgraded and (end := buffer.find(_HEADER_END)) >= 0:
                del buffer[: end + len(_HEADER_END)]
                upgraded = True
            while upgraded and (size := frame_length(buffer)) is not None:
                if self.recording is not None and buffer[0] & 0x0F == _TEXT_OPCODE:
                    self.recording.append((at, from_server, bytes(buffer[:size])))
                if link is not None and buffer[0] & 0x0F == _TEXT_OPCODE:
                    link.last_request = bytes(buffer[:size])
                del buffer[:size]  # cheap: a bytearray drops its head without moving the rest
            await writer.drain()
        writer.transport.abort()


def tapped_events(frames: list[Tapped]) -> list[tuple[float, bool, dict[str, Any]]]:
    """The tapped frames as JSON events: ``(time, from the server?, event)``."""
    return [(at, from_server, json.loads(_payload(frame))) for at, from_server, frame in frames]


def tap_deltas(frames: list[Tapped]) -> list[tuple[float, str, str]]:
    """``(time, item_id, text)`` of each ``response.output_text.delta`` the server sent."""
    return [
        (at, str(event.get("item_id")), str(event["delta"]))
        for at, from_server, event in tapped_events(frames)
        if from_server and event.get("type") == protocol.OUTPUT_TEXT_DELTA
    ]


class Stack:
    """Everything the benchmark talks to; ``async with Stack(scripts) as stack``."""

    def __init__(
        self, scripts: dict[str, str], *, daphnes: int = 1, database_url: str = "", redis_url: str = "",
        relay: bool = True, daphne_args: tuple[str, ...] = (), upstream: dict[str, str] | None = None,
        worker: dict[str, str] | None = None, settings: dict[str, str] | None = None,
        application: str = "spark_ide.asgi:application",
    ) -> None:
        self.scripts = scripts
        self.daphnes = daphnes
        self.database_url = database_url
        self.redis_url = redis_url
        self.with_relay = relay
        self.daphne_args = daphne_args
        self.upstream = upstream
        self.worker = worker
        self.settings = settings or {}
        self.application = application
        self.ide_urls: list[str] = []
        self.daphne_processes: list[subprocess.Popen[bytes]] = []
        self.dir = Path(tempfile.mkdtemp(prefix="spark-bench-pairing-"))
        self.processes: list[subprocess.Popen[bytes]] = []
        self._ide_env: dict[str, str] = {}  # the IDE's environment, for its manage.py commands
        self.pids: dict[str, int] = {}  # "modelserver", "daphne", "relay": for their CPU clocks
        self._logs: list[IO[bytes]] = []
        self.tap: FrameTap | None = None
        self.ide_url = ""
        self.relay_url = ""
        self.token = ""

    async def __aenter__(self) -> Stack:
        try:
            await self._start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.tap is not None:
            await self.tap.stop()  # first: the model server then has no open socket to wait on
        for process in reversed(self.processes):
            # In a thread: this loop may serve the model the process is talking to (a test's
            # model server), and the process's clean exit waits for that socket's close.
            await asyncio.to_thread(_end, process)
        for log in self._logs:
            log.close()
        # A run that failed (or SPARK_BENCH_KEEP_LOGS=1): its processes' logs may say why.
        if (exc and exc[0] is not None) or os.environ.get("SPARK_BENCH_KEEP_LOGS") == "1":
            print(f"the stack's logs are kept in {self.dir}", file=sys.stderr, flush=True)
            return
        shutil.rmtree(self.dir, ignore_errors=True)

    async def _start(self) -> None:
        model = self.upstream if self.upstream is not None else await self._start_model_server()
        env = self._env(**{
            "SPARK_DATA_DIR": str(self.dir / "data"), "DJANGO_SETTINGS_MODULE": "spark_ide.settings",
            # The text dialect unless the model's settings or the caller's say otherwise.
            "SPARK_EDIT_STYLE": "edits", **model, "SPARK_MAX_OUTPUT_TOKENS": "1000000", "SPARK_LOG_LEVEL": "WARNING",
            # The load is one account's many pages (the fanout and rooms benchmarks open hundreds):
            # the per-user socket cap (20 by default) would refuse them. The soak uses many accounts.
            "SPARK_MAX_SOCKETS_PER_USER": os.environ.get("SPARK_MAX_SOCKETS_PER_USER", "100000"),
            **self.settings,
        })
        if self.database_url:
            env["DATABASE_URL"] = self.database_url
        if self.redis_url:
            env["REDIS_URL"] = self.redis_url
        self._ide_env = env
        await self._manage(env, "migrate", "--verbosity", "0")
        self.token = (await self._manage(env, "shell", "-c", _MAKE_USER)).splitlines()[-1].strip()
        if self.worker is not None:
            self._spawn("worker", [
                "-m", "celery", "-A", "spark_ide", "worker", "-c", "1", "--pool", "prefork", "--without-gossip",
                "--without-mingle", "--without-heartbeat", "-l", "warning",
            ], {**env, **self.worker})
        ports = [_free_port() for _ in range(self.daphnes)]
        for index, port in enumerate(ports):
            name = "daphne" if index == 0 else f"daphne-{index + 1}"
            self.daphne_processes.append(self._spawn(name, [
                "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), *STORM_PATIENCE, *self.daphne_args,
                self.application,
            ], env))
        if self.with_relay and self.tap is not None:
            tap_port = self.tap.port
            relay_port = _free_port()
            relay = self._spawn("relay", [
                "-m", "benchmarks.pairing.relay", "--port", str(relay_port),
                "--upstream", f"ws://127.0.0.1:{tap_port}/v1/responses",
            ], self._env())
            await self._wait_port("relay", relay, relay_port)
            self.relay_url = f"ws://127.0.0.1:{relay_port}/"
        for index, (port, process) in enumerate(zip(ports, self.daphne_processes, strict=True)):
            await self._wait_port("daphne" if index == 0 else f"daphne-{index + 1}", process, port)
            self.ide_urls.append(f"http://127.0.0.1:{port}")
        self.ide_url = self.ide_urls[0]

    async def _start_model_server(self) -> dict[str, str]:
        """The scripted model server behind the tap; the IDE's settings to reach it."""
        script_file = self.dir / "scripts.json"
        script_file.write_text(json.dumps(self.scripts), encoding="utf-8")
        model_port = _free_port()
        modelserver = self._spawn("modelserver", [
            "-m", "spark_ide.modelserver", "--engine", "scripted", "--port", str(model_port),
            "--script-file", str(script_file), "--tokens-per-s", "1000", "--ttft-ms", "0",
            "--log-level", "WARNING",
        ], self._env())
        await self._wait_port("modelserver", modelserver, model_port)
        self.tap = FrameTap(model_port)
        tap_port = await self.tap.start()
        return {"SPARK_PROVIDER": "local", "OPENAI_BASE_URL": f"http://127.0.0.1:{tap_port}/v1"}

    async def manage(self, *args: str) -> str:
        """A ``manage.py`` command against the IDE's database; its output."""
        return await self._manage(self._ide_env, *args)

    def _env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        env.update(extra)
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{name}.log").open("wb")
        self._logs.append(log)
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            [sys.executable, *args], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, ended as one
        )
        self.processes.append(process)
        self.pids[name] = process.pid
        return process

    async def _manage(self, env: dict[str, str], *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "manage.py", *args, cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
        finally:
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        if process.returncode != 0:
            raise StackError(f"manage.py {args[0]} failed: {err.decode(errors='replace')[-2000:]}")
        return out.decode()

    async def _wait_port(
        self, name: str, process: subprocess.Popen[bytes], port: int, timeout: float = 30.0
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            if process.poll() is not None or time.monotonic() > deadline:
                log = (self.dir / f"{name}.log").read_text(errors="replace")[-2000:]
                raise StackError(f"{name} did not start: {log}")
            await asyncio.sleep(0.05)

    async def login_url(self, username: str) -> str:
        """A one-time sign-in link for ``username``, from the IDE's own command."""
        out = await self._manage(self._ide_env, "spark_login_url", username, "--base", self.ide_url)
        return out.strip().splitlines()[-1]

    async def session(self, files: dict[str, str]) -> tuple[str, str]:
        """A new workspace with ``files`` and a session on it: (workspace id, ws URL)."""
        headers = {"Authorization": f"Token {self.token}"}
        async with httpx.AsyncClient(base_url=self.ide_url, headers=headers, timeout=30) as http:
            workspace = (await http.post("/api/workspaces", json={"name": "bench", "files": files}))
            workspace.raise_for_status()
            workspace_id = workspace.json()["id"]
            session = await http.post(f"/api/workspaces/{workspace_id}/sessions")
            session.raise_for_status()
            return str(workspace_id), str(session.json()["ws_url"])

    async def participants(self, session_ids: list[str], roles: dict[str, str]) -> dict[str, str]:
        """Users ``roles`` (name -> ``viewer``/``collaborator``), made with an API token each and
        given that role in every session of ``session_ids`` (one ``manage.py shell``); their tokens."""
        code = (
            "import json;"
            "from django.contrib.auth import get_user_model;"
            "from spark_ide.accounts.services import api_token_create;"
            "from spark_ide.pairing.models import Participant;"
            f"roles = json.loads({json.dumps(json.dumps(roles))});"
            f"sessions = json.loads({json.dumps(json.dumps(session_ids))});"
            "users = {name: get_user_model().objects.create_user(name) for name in roles};"
            "Participant.objects.bulk_create([Participant(session_id=s, user=users[n], role=r)"
            " for n, r in roles.items() for s in sessions]);"
            "print(json.dumps({name: api_token_create(user=user) for name, user in users.items()}))"
        )
        tokens: dict[str, str] = json.loads((await self._manage(self._ide_env, "shell", "-c", code)).splitlines()[-1])
        return tokens

    async def file_text(self, workspace_id: str, path: str, expected: str, timeout: float = 5.0) -> str:
        """The file's text over HTTP, polled until it is ``expected`` or ``timeout`` passes.

        The API serves the stored file rows, which follow the live document a moment later.
        """
        headers = {"Authorization": f"Token {self.token}"}
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(base_url=self.ide_url, headers=headers, timeout=30) as http:
            while True:
                answer = await http.get(f"/api/workspaces/{workspace_id}/files/{path}")
                if answer.text == expected or time.monotonic() > deadline:
                    return answer.text if answer.status_code == 200 else ""
                await asyncio.sleep(0.05)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Terminate the process group; kill it if it lingers."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
