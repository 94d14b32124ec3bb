"""The seam between the protocol server and whatever produces text.

An engine turns a :class:`Job` (the whole conversation, already resolved from
``previous_response_id``) into output: text pieces, and markers that start a new output
item (:class:`ToolCall`, :class:`MessageStart`); the pieces after a marker belong to that
item. Pieces before any marker form an assistant message. The server owns ids, events,
queueing and cancellation policy; the engine only has to stop promptly when the
:class:`CancelToken` is set and to fill in the :class:`Tally` so ``usage`` can be reported.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]
# The three ways OpenAI's models call tools: a custom (freeform) tool, a function tool, and
# the built-in apply_patch tool.
ToolKind = Literal["custom", "function", "apply_patch"]
PatchOperation = Literal["create_file", "update_file", "delete_file"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call of the model. Yielded by an engine, it starts an output item whose input
    (custom), arguments (function) or diff (apply_patch) are the pieces that follow; in a
    conversation it is the call an assistant message makes."""

    kind: ToolKind
    call_id: str
    name: str = "apply_patch"
    operation: PatchOperation | None = None  # apply_patch only
    path: str = ""  # apply_patch only: the file the operation is about
    # False: no delta or done events of its own, the input arrives whole in output_item.done.
    streamed: bool = True


@dataclass(frozen=True)
class MessageStart:
    """Yielded by an engine: the pieces that follow form a new assistant message."""


@dataclass(frozen=True)
class ToolOutput:
    """What a tool message answers: the call's id and kind (``status`` for apply_patch)."""

    kind: ToolKind
    call_id: str
    status: str | None = None


@dataclass(frozen=True)
class Message:
    """One entry of a conversation. ``call`` is set on an assistant message that is a tool
    call (``content`` holds its input); ``output`` on a ``tool`` message (``content`` holds
    the output the client sent)."""

    role: Role
    content: str
    call: ToolCall | None = None
    output: ToolOutput | None = None


@dataclass(frozen=True)
class Job:
    """One generation request as the engine sees it.

    ``messages`` starts with the system message built from ``instructions`` (if any),
    followed by the chained conversation and the new input.
    """

    messages: tuple[Message, ...]
    max_output_tokens: int | None = None
    temperature: float | None = None
    effort: str | None = None

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    def answers_since_user(self) -> int:
        """How many times the model answered since the last user message."""
        users = [index for index, message in enumerate(self.messages) if message.role == "user"]
        return self.answers_after(users[-1] if users else -1)

    def answers_after(self, index: int) -> int:
        """How many times the model answered after ``messages[index]``: the runs of assistant
        messages (a tool output, a user message, or any other message, ends a run)."""
        answers, in_answer = 0, False
        for message in self.messages[index + 1:]:
            if message.role == "assistant" and not in_answer:
                answers += 1
            in_answer = message.role == "assistant"
        return answers


@dataclass
class Tally:
    """Token accounting an engine fills in while it works (reported as ``usage``)."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    hit_token_limit: bool = False


@dataclass(frozen=True)
class Piece:
    """Text produced in one step; ``tokens`` counts the model tokens it holds."""

    text: str
    tokens: int = 1


Output = Piece | ToolCall | MessageStart


class EngineError(Exception):
    """A generation that cannot run; the response ends ``response.failed`` with ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ModelUnavailable(Exception):
    """The engine cannot start: a library or the model file is missing or unusable."""


@dataclass
class CancelToken:
    """A stop flag readable from worker threads and awaitable from the event loop.

    ``cancel`` must be called on the loop's thread (the waiters are futures of the loop);
    worker threads only read :meth:`is_set`.
    """

    _flag: threading.Event = field(default_factory=threading.Event)
    _waiters: set[asyncio.Future[bool]] = field(default_factory=set)

    def cancel(self) -> None:
        self._flag.set()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(True)
        self._waiters.clear()

    def is_set(self) -> bool:
        return self._flag.is_set()

    def attach(self, waiter: asyncio.Future[bool]) -> None:
        """Resolve ``waiter`` with True when the token is cancelled (at once if it is);
        :meth:`detach` it when it is no longer waited for."""
        if self._flag.is_set():
            if not waiter.done():
                waiter.set_result(True)
        else:
            self._waiters.add(waiter)

    def detach(self, waiter: asyncio.Future[bool]) -> None:
        self._waiters.discard(waiter)

    async def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True as soon as the token is cancelled."""
        return await self.wait_until(asyncio.get_running_loop().time() + timeout)

    async def wait_until(self, deadline: float) -> bool:
        """Sleep until the loop's clock reads ``deadline``; True as soon as the token is
        cancelled. One future and one timer: a paced engine waits like this once a token, so
        it wakes once (``asyncio.wait_for`` ran a task and took three more passes of the loop
        to wake and tidy up). A deadline already past still lets the loop run once."""
        if self._flag.is_set():
            return True
        loop = asyncio.get_running_loop()
        if deadline <= loop.time():
            await asyncio.sleep(0)
            return self._flag.is_set()
        waiter: asyncio.Future[bool] = loop.create_future()
        self.attach(waiter)
        timer = loop.call_at(deadline, _expire, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()
            self.detach(waiter)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class Engine(Protocol):
    """What the server needs from a text generator."""

    async def load(self) -> None:
        """Load weights once, before the server accepts connections (idempotent)."""

    async def close(self) -> None:
        """Release resources; called when the server stops."""

    async def prepare(self, job: Job, tally: Tally) -> None:
        """Warm-up (``generate: false``): get the prompt state ready, produce no text."""

    def generate(self, job: Job, tally: Tally, cancel: CancelToken) -> AsyncGenerator[Output, None]:
        """Stream output until done, ``max_output_tokens`` or ``cancel``.

        Closing the iterator early (``aclose``) must stop the generation too.
        """
        ...
