"""OpenAI's shapes for the ``response`` object, output items and ``usage``.

Kept apart from the code that decides *when* to send things, so the field lists can be
checked against OpenAI's reference in one place.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from spark_ide.modelserver.engine import Tally
from spark_ide.modelserver.request import CreateRequest
from spark_ide.responses_protocol import Status


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


@dataclass
class ResponseRecord:
    """Everything the ``response`` object reports, updated as the response runs."""

    request: CreateRequest
    id: str = field(default_factory=lambda: new_id("resp"))
    item_id: str = field(default_factory=lambda: new_id("msg"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: Status = "in_progress"
    text: str = ""
    has_item: bool = False
    tally: Tally | None = None
    incomplete_reason: str | None = None
    error: dict[str, str] | None = None

    def item(self) -> dict[str, Any]:
        if self.status == "in_progress":
            return message_item(self.item_id, "in_progress", [])
        item_status = "completed" if self.status == "completed" else "incomplete"
        return message_item(self.item_id, item_status, [text_part(self.text)])

    def to_json(self) -> dict[str, Any]:
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "error": self.error,
            "incomplete_details": (
                {"reason": self.incomplete_reason} if self.incomplete_reason else None
            ),
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": request.model,
            "output": [self.item()] if self.has_item and self.status != "in_progress" else [],
            "parallel_tool_calls": True,
            "previous_response_id": request.previous_response_id,
            "reasoning": {"effort": request.effort, "summary": None},
            "store": request.store,
            "temperature": request.temperature if request.temperature is not None else 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage(self.tally) if self.tally and self.status != "in_progress" else None,
            "user": None,
            "metadata": {},
        }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def message_item(item_id: str, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def usage(tally: Tally) -> dict[str, Any]:
    return {
        "input_tokens": tally.input_tokens,
        "input_tokens_details": {"cached_tokens": tally.cached_tokens},
        "output_tokens": tally.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tally.input_tokens + tally.output_tokens,
    }
