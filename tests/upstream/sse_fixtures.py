"""Canned Chat Completions answers for httpx.MockTransport (the HTTP/SSE adapter's tests)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

Handler = Callable[[httpx.Request], httpx.Response]


def sse_body(chunks: list[object], *, done: bool = True) -> bytes:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def chunk(text: str | None = None, finish: str | None = None) -> dict[str, object]:
    delta = {} if text is None else {"content": text}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def chat_server(
    body: bytes, *, status: int = 200, seen: list[httpx.Request] | None = None
) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": []})
        content_type = "text/event-stream" if status == 200 else "application/json"
        return httpx.Response(status, content=body, headers={"content-type": content_type})

    return httpx.MockTransport(handle)
