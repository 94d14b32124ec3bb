"""A TCP proxy in front of a server, for tests that need the network between a browser and
the IDE to fail for real: ``drop()`` cuts every open connection (as a lost Wi-Fi would) and
``down(seconds)`` also refuses new ones for a while.

It runs its own event loop in a thread, so synchronous tests (Playwright's sync API) can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator

CHUNK = 65536


class TcpProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.target_port = target_port
        self.port = 0
        self.connections = 0  # accepted, over the proxy's life
        self._down_until = 0.0
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> TcpProxy:
        self._thread.start()
        self._started.wait(10)
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._accept, self.host, 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if time.monotonic() < self._down_until:
            writer.close()
            return
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    def _call(self, fn: Callable[[], None]) -> None:
        done = threading.Event()

        def run() -> None:
            try:
                fn()
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait(10)

    def drop(self) -> None:
        """Cut every open connection now; new ones are accepted."""

        def cut() -> None:
            for writer in list(self._writers):
                transport = writer.transport
                transport.abort()  # a reset, not a polite close: what a network loss looks like
            self._writers.clear()

        self._call(cut)

    def down(self, seconds: float) -> None:
        """Cut every open connection and refuse new ones for ``seconds``."""
        self._down_until = time.monotonic() + seconds
        self.drop()

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            tasks = [task for task in asyncio.all_tasks(self._loop) if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@contextlib.contextmanager
def proxied(target_port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(target_port).start()
    try:
        yield proxy
    finally:
        proxy.stop()
