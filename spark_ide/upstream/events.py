"""Normalised upstream events, the same for every provider and transport.

Each event carries :class:`Marks`: monotonic timestamps (``time.monotonic()``) of when the
request was sent, when the first byte of its answer arrived, when the first text token
arrived, and when this event itself was received.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Marks:
    sent_at: float
    first_byte_at: float | None
    first_token_at: float | None
    received_at: float


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    response_id: str | None
    marks: Marks


@dataclass(frozen=True, slots=True)
class Completed:
    response_id: str | None
    usage: Usage | None
    marks: Marks


@dataclass(frozen=True, slots=True)
class Incomplete:
    """The response ended early; ``reason`` as the provider gave it (e.g. ``max_output_tokens``,
    ``cancelled``, ``steered``, ``content_filter``)."""

    response_id: str | None
    reason: str
    marks: Marks


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


UpstreamEvent = TextDelta | Completed | Incomplete | Failed | ErrorEvent


def is_terminal(event: UpstreamEvent) -> bool:
    return not isinstance(event, TextDelta)
