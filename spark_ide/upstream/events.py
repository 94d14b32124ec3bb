"""Normalised upstream events, the same for every provider and transport.

Each event carries :class:`Marks`: monotonic timestamps (``time.monotonic()``) of when the
request was sent, when the first byte of its answer arrived, when the first text token
arrived, and when this event itself was received.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How a tool call travels: a freeform custom tool, the built-in ``apply_patch``, a JSON function.
ToolKind = Literal["custom", "apply_patch", "function"]
# The file operation of a built-in ``apply_patch_call`` (one file per call).
FileOperation = Literal["create_file", "update_file", "delete_file"]


@dataclass(frozen=True, slots=True)
class Marks:
    sent_at: float
    first_byte_at: float | None
    first_token_at: float | None
    received_at: float


@dataclass(frozen=True, slots=True)
class Usage:
    """A response's tokens as the provider counted them: ``input_tokens`` counts every input
    token, the ``cached_input_tokens`` among them included (OpenAI's ``usage`` does so)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    response_id: str | None
    marks: Marks


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made, whole.

    ``input`` is what the tool is given: a custom tool's input, an ``apply_patch_call``'s diff
    ("" for ``delete_file``), or a function call's decoded argument (``input``; ``command`` for
    ``run``; "" when it has none). ``arguments`` is a function call's raw JSON arguments ("" for the other kinds).
    ``item_id`` is the provider's id of the output item (None on Chat Completions).
    """

    call_id: str
    name: str
    kind: ToolKind
    input: str
    item_id: str | None = None
    operation: FileOperation | None = None
    path: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model began a tool call; its input follows as :class:`ToolInputDelta`\\ s.
    ``operation`` and ``path``: a built-in ``apply_patch_call``'s, known from the start."""

    call_id: str
    item_id: str | None
    name: str
    kind: ToolKind
    operation: FileOperation | None
    path: str | None
    response_id: str | None
    marks: Marks


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    """More of a call's input (for a function call: more of its decoded ``input`` string)."""

    call_id: str
    text: str
    marks: Marks


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    """A call's input is complete. The deltas before it add up to ``call.input`` (what the
    provider gave at the end and had not streamed comes as one last delta first)."""

    call: ToolCall
    marks: Marks

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def input(self) -> str:
        return self.call.input


@dataclass(frozen=True, slots=True)
class Completed:
    """The response ended normally. ``tool_calls``: the calls it ended with, in order; a
    response with calls wants their outputs in a follow-up request (the tool loop)."""

    response_id: str | None
    usage: Usage | None
    marks: Marks
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Incomplete:
    """The response ended early; ``reason`` as the provider gave it (e.g. ``max_output_tokens``,
    ``cancelled``, ``steered``, ``content_filter``)."""

    response_id: str | None
    reason: str
    marks: Marks
    tool_calls: tuple[ToolCall, ...] = ()  # the calls completed before it ended


@dataclass(frozen=True, slots=True)
class Failed:
    """The provider reports that the response itself failed."""

    response_id: str | None
    code: str
    message: str
    marks: Marks


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The turn could not be carried out (transport, protocol or request error).

    ``code`` is one of the codes in :mod:`spark_ide.upstream.errors` or the provider's own
    error code; ``retryable`` says whether sending the same turn again may succeed.
    """

    code: str
    message: str
    retryable: bool
    marks: Marks


UpstreamEvent = (
    TextDelta | ToolCallStarted | ToolInputDelta | ToolCallDone | Completed | Incomplete | Failed | ErrorEvent
)
TerminalEvent = Completed | Incomplete | Failed | ErrorEvent


def is_terminal(event: UpstreamEvent) -> bool:
    return isinstance(event, Completed | Incomplete | Failed | ErrorEvent)
