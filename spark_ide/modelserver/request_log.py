"""What the server received: a log of requests for tests, benchmarks and demos.

A client that answers tool calls must send the right outputs (call ids, statuses, texts)
with the right ``previous_response_id``; a test proves it here, on the model's side of the
wire, from the request exactly as it arrived. The log is opt-in (``ModelServer(...,
request_log=RequestLog())``, ``SseModelServer(..., request_log=...)``): a production server
keeps nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from spark_ide.modelserver.tool_items import OUTPUT_TYPES

# websocket: a response.create frame; http: POST /v1/responses; chat: POST /v1/chat/completions
Transport = Literal["websocket", "http", "chat"]


@dataclass
class Received:
    """One request: its body as sent (a ``response.create`` frame, or a Chat Completions
    body), then the id of the response that answered it, or the error it got instead."""

    transport: Transport
    body: dict[str, Any]
    response_id: str | None = None
    error: dict[str, Any] | None = None  # the inner ``error`` object (type, code, message, param)

    @property
    def items(self) -> list[Any]:
        """Its input items (Responses) or messages (Chat Completions); a string input is
        one user message."""
        value = self.body.get("messages" if self.transport == "chat" else "input", [])
        if isinstance(value, str):
            return [{"type": "message", "role": "user", "content": value}]
        return value if isinstance(value, list) else []

    def tool_outputs(self) -> list[dict[str, Any]]:
        """The tool outputs it carried: ``*_call_output`` items, or ``role: tool`` messages."""
        return [
            item
            for item in self.items
            if isinstance(item, dict) and (item.get("type") in OUTPUT_TYPES or item.get("role") == "tool")
        ]


@dataclass
class RequestLog:
    entries: list[Received] = field(default_factory=list)

    def record(self, transport: Transport, body: dict[str, Any]) -> Received:
        entry = Received(transport, body)
        self.entries.append(entry)
        return entry

    def answered(self) -> list[Received]:
        """The requests a response answered, in order."""
        return [entry for entry in self.entries if entry.response_id is not None]

    def tool_outputs(self) -> list[dict[str, Any]]:
        """Every tool output received, in order."""
        return [output for entry in self.entries for output in entry.tool_outputs()]
