"""Code runs of the live rooms (``live.runs``) in the sandbox: the Celery task
``spark_ide.sandbox.run_code`` streams each run to a channel-layer group of its own, which
this process's relay channel joins; stdin and Stop go through ``sandbox.control``.

Eager Celery (the embedded default) runs the task in a thread of its own, never on the event
loop: a run may last its whole wall limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from spark_ide.live.events import RunFinished, run_message_from
from spark_ide.live.store import RunMessage
from spark_ide.sandbox.control import run_control
from spark_ide.sandbox.tasks import run_code

log = logging.getLogger(__name__)


def run_group(run: str) -> str:
    return f"spark.run.{run}"


class _Relay:
    """One channel per event loop that every run started here sends to (through its group)."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.handlers: dict[str, Callable[[RunMessage], None]] = {}
        self.task: asyncio.Task[None] | None = None


class CeleryRunner:
    """``live.store.Runner`` over Celery, the channel layer and the run control."""

    def __init__(self) -> None:
        self._relays: dict[asyncio.AbstractEventLoop, _Relay] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._control_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-control")

    async def start(
        self, run: str, files: Mapping[str, str], *, path: str, tests: bool, on_message: Callable[[RunMessage], None],
        args: Sequence[str] = (),
    ) -> None:
        layer = get_channel_layer()
        assert layer is not None, "CHANNEL_LAYERS is not configured"
        relay = await self._relay(layer)
        relay.handlers[run] = on_message
        await layer.group_add(run_group(run), relay.channel)
        kwargs = {"run": run, "group": run_group(run), "files": dict(files), "path": path or None, "tests": tests,
                  "args": list(args)}
        if settings.CELERY_TASK_ALWAYS_EAGER:
            work = sync_to_async(run_code.apply, thread_sensitive=False)(kwargs=kwargs)
        else:  # publishing to the broker is network I/O: off the loop too
            work = sync_to_async(run_code.apply_async, thread_sensitive=False)(kwargs=kwargs, serializer="json")
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def send_input(self, run: str, text: str) -> None:
        self._control(run, "stdin", text)

    def stop(self, run: str) -> None:
        self._control(run, "stop", "")

    def _control(self, run: str, op: Any, text: str) -> None:
        """Off the loop (a Redis round trip, or a lock), one after another in one thread, so a
        run's lines and its Stop keep the order they were typed in."""
        task = asyncio.get_running_loop().run_in_executor(self._control_thread, run_control().send, run, op, text)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _relay(self, layer: Any) -> _Relay:
        loop = asyncio.get_running_loop()
        relay = self._relays.get(loop)
        if relay is None or relay.task is None or relay.task.done():
            for stale in [known for known in self._relays if known.is_closed()]:
                del self._relays[stale]
            relay = self._relays[loop] = _Relay(await layer.new_channel())
            relay.task = asyncio.ensure_future(self._receive(layer, relay))
        return relay

    async def _receive(self, layer: Any, relay: _Relay) -> None:
        while True:
            message = await layer.receive(relay.channel)
            handler = relay.handlers.get(str(message.get("run", "")))
            if handler is None:
                continue
            try:
                event = run_message_from(message)
            except ValueError:
                log.exception("run %s: a message the room cannot read", message.get("run"))
                continue
            if isinstance(event, RunFinished):
                del relay.handlers[event.run]
            try:
                handler(event)
            except Exception:
                log.exception("run %s: its room could not take a message", event.run)
            if isinstance(event, RunFinished):
                # After the room has it: with Redis the discard is a round trip the run loop
                # (a run's end -> the model's next request) need not wait for.
                with contextlib.suppress(Exception):
                    await layer.group_discard(run_group(event.run), relay.channel)
