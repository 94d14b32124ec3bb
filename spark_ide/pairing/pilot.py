"""The Pilot: one asyncio task per live session that runs the model's turns.

It owns the upstream client (opened and warmed before the first prompt), the running turn,
the queue of prompts and the edit engines of recent turns. Consumers never await it: they
``submit`` a command and return; the Pilot handles commands one at a time, in order.

Steer, in the order DESIGN.md §2 fixes: stop forwarding the old turn, roll back its block in
flight, announce its end, then re-prompt on a warm connection (the upstream client cancels
the old generation by the provider's strategy, re-prompt first).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import os
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.conf import settings

from spark_ide.editing import BlockStatus, ProseEvent, TurnEditor
from spark_ide.upstream import (
    Completed,
    ErrorEvent,
    Failed,
    Incomplete,
    ModelClient,
    ProviderConfig,
    TextDelta,
    TurnRequest,
    UpstreamError,
    open_client,
)
from spark_ide.upstream.profiles import EFFORTS, Effort

from . import services
from spark_ide.live.prompting import PastTurn, PromptStyle, TurnInput, build_request, instructions_for, steering_note

if TYPE_CHECKING:
    from .hub import SessionHub

log = logging.getLogger(__name__)

KEEP_EDITORS = 50
DEFAULT_FENCE_PATH = "main.py"


@dataclass
class Command:
    kind: str  # prompt | steer | stop | revert | next
    user_id: int | None = None
    text: str = ""
    effort: str | None = None
    path: str = ""
    turn: str = ""
    received_at: float = field(default_factory=time.monotonic)


@dataclass
class TurnRun:
    id: str
    command: Command
    origin: Command  # the prompt that began the steering chain
    request: TurnRequest
    editor: TurnEditor
    before: dict[str, str]
    steering: list[str]  # the steering notes sent with this turn's request
    redirects: list[str]  # the steering texts of the chain, in order
    steered_from: str | None = None
    stream: Any = None
    task: asyncio.Task[None] | None = None
    live: bool = True
    tokens: int = 0
    first_token_at: float | None = None
    steer_ms: float | None = None


def _effort(value: str | None) -> Effort | None:
    return next((effort for effort in EFFORTS if effort == value), None)


def _chain_prompt(run: TurnRun) -> str:
    """What the user asked over a steering chain: the first prompt and each redirection."""
    return run.origin.text + "".join(f"\n(Redirected: {text})" for text in run.redirects)


def prompt_style() -> PromptStyle:
    whole = settings.SPARK_EDIT_STYLE == "whole-file"
    return PromptStyle(whole_file_only=whole, context_tokens=settings.SPARK_CONTEXT_TOKENS)


class Pilot:
    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub
        self.style = prompt_style()
        self._commands: asyncio.Queue[Command] = asyncio.Queue()
        self._queue: deque[Command] = deque()
        self._run: TurnRun | None = None
        self._editors: OrderedDict[str, TurnEditor] = OrderedDict()
        self._history: list[PastTurn] = []
        self._last_ledger = ""
        self._client: ModelClient | None = None
        self._connecting: asyncio.Task[ModelClient] | None = None
        self._db: asyncio.Queue[Any] = asyncio.Queue()
        self._db_task: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def busy(self) -> bool:
        return self._run is not None or bool(self._queue)

    @property
    def running_turn(self) -> str | None:
        return self._run.id if self._run is not None else None

    def submit(self, command: Command) -> None:
        self._commands.put_nowait(command)

    # -- the task ----------------------------------------------------------------------------

    async def run(self) -> None:
        self._db_task = asyncio.create_task(self._write_records())
        self._connecting = asyncio.create_task(self._open_client())  # warm before the first prompt
        while True:
            command = await self._commands.get()
            try:
                await self._handle(command)
            except Exception:
                log.exception("the Pilot failed on %s", command.kind)

    async def shutdown(self) -> None:
        if self._run is not None:
            await self._end_early(self._run, "cancelled", cancel_upstream=True)
        if self._client is not None:
            await self._client.close()
        elif self._connecting is not None:
            self._connecting.cancel()
        await self._drain_records()
        if self._db_task is not None:
            self._db_task.cancel()

    async def _handle(self, command: Command) -> None:
        if command.kind == "prompt":
            if self._run is not None:
                self._queue.append(command)
                self.hub.publish({"type": "turn.queued", "prompt": command.text, "position": len(self._queue)})
            else:
                await self._start(command)
        elif command.kind == "steer":
            if self._run is None:
                await self._start(command)
            else:
                await self._steer(self._run, command)
        elif command.kind == "stop":
            if self._run is not None:
                await self._end_early(self._run, "cancelled", cancel_upstream=True)
                await self._next()
        elif command.kind == "revert":
            self._revert(command.turn)
        elif command.kind == "next" and self._run is None:
            await self._next()

    async def _next(self) -> None:
        if self._run is None and self._queue:
            await self._start(self._queue.popleft())

    # -- the model connection ----------------------------------------------------------------

    async def _open_client(self) -> ModelClient:
        config = ProviderConfig.from_env(os.environ)
        client = await open_client(config, warmup_instructions=instructions_for(self.style))
        self._client = client
        return client

    async def _client_now(self) -> ModelClient:
        if self._client is not None:
            return self._client
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._open_client())
        return await self._connecting

    def _drop_client(self) -> None:
        """Give up on the client after a failure it cannot recover from: the next turn opens
        a new one. The old one is closed in the background, so none of its sockets linger."""
        client, self._client, self._connecting = self._client, None, None
        if client is not None:
            task = asyncio.create_task(client.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    # -- turns -------------------------------------------------------------------------------

    def _new_run(self, command: Command, *, steered_from: TurnRun | None) -> TurnRun:
        """A turn for ``command``; a steer keeps the original request and adds its direction."""
        texts = self.hub.texts()
        origin = steered_from.origin if steered_from is not None else command
        steering = list(steered_from.steering) if steered_from is not None else []
        if steered_from is not None:
            steering.append(
                steering_note(
                    partial_output=steered_from.stream.text if steered_from.stream is not None else "",
                    ledger=steered_from.editor.ledger.as_prompt(),
                    text=command.text,
                )
            )
        turn_input = TurnInput(
            text=origin.text, files=texts, active_path=origin.path, effort=_effort(origin.effort),
            history=tuple(self._history), last_ledger=self._last_ledger, steering=steering,
        )
        turn_id = uuid.uuid4().hex[:12]
        return TurnRun(
            id=turn_id,
            command=command,
            origin=origin,
            request=build_request(turn_input, self.style),
            editor=TurnEditor(self.hub.doc, turn_id, fence_path=self._fence_path(origin)),
            before=texts,
            steering=steering,
            redirects=[*steered_from.redirects, command.text] if steered_from is not None else [],
            steered_from=steered_from.id if steered_from is not None else None,
        )

    def _fence_path(self, origin: Command) -> str | None:
        """Where a small model's code fence goes: the file open in the editor, or main.py."""
        if not self.style.whole_file_only:
            return None
        return origin.path or DEFAULT_FENCE_PATH

    def _announce(self, run: TurnRun) -> None:
        self._run = run
        self._editors[run.id] = run.editor
        while len(self._editors) > KEEP_EDITORS:
            self._editors.popitem(last=False)
        command = run.command
        self.hub.publish({
            "type": "turn.started", "turn": run.id, "prompt": command.text,
            "steered_from": run.steered_from, "effort": command.effort or "medium",
        })
        self._record(
            services.turn_create, turn_id=run.id, session_id=self.hub.session_id, author_id=command.user_id,
            prompt=command.text, effort=command.effort or "medium", active_path=command.path,
            steered_from=run.steered_from,
        )

    async def _start(self, command: Command) -> None:
        run = self._new_run(command, steered_from=None)
        self._announce(run)
        try:
            client = await self._client_now()
            run.stream = await client.start(run.request)
        except (UpstreamError, OSError) as exc:
            self._finish(run, "failed", error=f"the model is unavailable: {exc}")
            self._drop_client()
            await self._next()
            return
        run.task = asyncio.create_task(self._consume(run))

    async def _steer(self, old: TurnRun, command: Command) -> None:
        received = command.received_at
        self._stop_forwarding(old)  # (a) nothing of the old turn reaches anyone from here on
        self._roll_back_and_finish(old, "steered")  # (b) its block in flight goes, then its end
        run = self._new_run(command, steered_from=old)
        self._announce(run)
        try:
            client = await self._client_now()
            # (c)+(d): the client re-prompts on a warm connection, then stops the old answer.
            run.stream = await client.steer(old.stream, run.request) if old.stream else await client.start(run.request)
        except (UpstreamError, OSError) as exc:
            self._finish(run, "failed", error=f"the model is unavailable: {exc}")
            self._drop_client()
            return
        run.steer_ms = (time.monotonic() - received) * 1000
        self.hub.publish({"type": "turn.steered", "turn": run.id, "steered_from": old.id, "steer_ms": run.steer_ms})
        run.task = asyncio.create_task(self._consume(run))

    def _stop_forwarding(self, run: TurnRun) -> None:
        run.live = False
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()

    def _roll_back_and_finish(self, run: TurnRun, status: str, *, error: str = "") -> None:
        """Roll back the block in flight (completed blocks stay), then announce the end."""
        self._publish_statuses(run.editor.cancel())
        self._finish(run, status, error=error)

    async def _end_early(self, run: TurnRun, status: str, *, cancel_upstream: bool) -> None:
        self._stop_forwarding(run)
        self._roll_back_and_finish(run, status)
        if cancel_upstream and run.stream is not None:
            with contextlib.suppress(UpstreamError, OSError):
                await run.stream.cancel()

    async def _consume(self, run: TurnRun) -> None:
        try:
            async for event in run.stream:
                if not run.live:
                    return
                if isinstance(event, TextDelta):
                    self._on_text(run, event.text)
                    continue
                if isinstance(event, Completed | Incomplete):
                    self._publish_statuses(run.editor.finish())
                    if isinstance(event, Completed) and event.usage is not None:
                        run.tokens = event.usage.output_tokens
                    note = f"incomplete: {event.reason}" if isinstance(event, Incomplete) else ""
                    self._finish(run, "completed", error=note)
                else:
                    assert isinstance(event, Failed | ErrorEvent)
                    self._roll_back_and_finish(run, "failed", error=f"{event.code}: {event.message}")
                    if isinstance(event, ErrorEvent) and not event.retryable:
                        self._drop_client()
                break
            else:
                if run.live:
                    self._roll_back_and_finish(run, "failed", error="the model connection ended without an answer")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("turn %s failed", run.id)
            if run.live:
                self._roll_back_and_finish(run, "failed", error=f"internal error: {exc}")
        self.submit(Command(kind="next"))

    def _on_text(self, run: TurnRun, text: str) -> None:
        now = time.monotonic()
        if run.first_token_at is None:
            run.first_token_at = now
        run.tokens += 1
        self.hub.publish({"type": "turn.delta", "turn": run.id, "text": text})
        self._publish_statuses(run.editor.feed(text))

    def _publish_statuses(self, events: list[Any]) -> None:
        for event in events:
            if isinstance(event, BlockStatus):
                self.hub.publish(event.as_message())
            elif isinstance(event, ProseEvent):
                self.hub.publish({"type": "turn.prose", "turn": event.turn, "text": event.text})

    def _metrics(self, run: TurnRun, ended: float) -> dict[str, Any]:
        received = run.command.received_at
        metrics: dict[str, Any] = {
            "ttft_ms": None if run.first_token_at is None else round((run.first_token_at - received) * 1000, 2),
            "tokens": run.tokens,
            "duration_ms": round((ended - received) * 1000, 2),
        }
        generating = ended - run.first_token_at if run.first_token_at is not None else 0.0
        metrics["tokens_per_s"] = round(run.tokens / generating, 1) if generating > 0 else None
        if run.steer_ms is not None:
            metrics["steer_ms"] = round(run.steer_ms, 3)
            if run.first_token_at is not None:
                metrics["steer_first_token_ms"] = round((run.first_token_at - received) * 1000, 2)
        return metrics

    def _finish(self, run: TurnRun, status: str, *, error: str = "") -> None:
        """Announce the end of ``run``; after this nothing of it is sent but its rollback."""
        run.live = False
        metrics = self._metrics(run, time.monotonic())
        event: dict[str, Any] = {"type": "turn.finished", "turn": run.id, "status": status, "metrics": metrics}
        if error:
            event["error"] = error
        self.hub.publish(event)
        if self._run is run:
            self._run = None
        output = run.stream.text if run.stream is not None else ""
        if status != "steered":
            # A steered turn lives on in its successor's request (the steering note carries
            # its partial answer), so it is not history of its own.
            self._history.append(PastTurn(prompt=_chain_prompt(run), output=output))
        self._last_ledger = run.editor.ledger.as_prompt()
        self._record(
            services.turn_finish, turn_id=run.id, status=status, output=output,
            ledger=run.editor.ledger.as_dicts(), diff=self._diff(run), metrics=metrics, error=error,
        )

    def _diff(self, run: TurnRun) -> dict[str, str]:
        touched = {entry.path for entry in run.editor.ledger.entries}
        now = self.hub.texts()
        diffs = {}
        for path in sorted(touched):
            before, after = run.before.get(path, ""), now.get(path, "")
            if before != after:
                lines = difflib.unified_diff(
                    before.splitlines(keepends=True), after.splitlines(keepends=True),
                    fromfile=f"a/{path}", tofile=f"b/{path}",
                )
                diffs[path] = "".join(lines)
        return diffs

    def _revert(self, turn_id: str) -> None:
        editor = self._editors.get(turn_id)
        if editor is None:
            self.hub.publish({"type": "error", "code": "revert_unavailable",
                              "message": f"turn {turn_id} cannot be reverted (unknown or too old)", "ref": turn_id})
            return
        if self._run is not None and self._run.id == turn_id:
            self._stop_forwarding(self._run)
            self._finish(self._run, "cancelled")
        self._publish_statuses(editor.revert())
        # Announced once recorded, so a history panel refreshed on it shows the revert.
        self._record(
            services.turn_mark_reverted, turn_id,
            then=lambda: self.hub.publish({"type": "turn.reverted", "turn": turn_id}),
        )

    # -- ordered database writes, off the event loop -----------------------------------------

    def _record(self, fn: Any, *args: Any, then: Callable[[], object] | None = None, **kwargs: Any) -> None:
        self._db.put_nowait((fn, args, kwargs, then))

    async def _write_records(self) -> None:
        while True:
            fn, args, kwargs, then = await self._db.get()
            try:
                await database_sync_to_async(fn)(*args, **kwargs)
                if then is not None:
                    then()
            except Exception:
                log.exception("could not record %s", getattr(fn, "__name__", fn))
            finally:
                self._db.task_done()

    async def _drain_records(self) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._db.join(), timeout=10)
