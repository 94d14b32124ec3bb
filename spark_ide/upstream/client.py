"""``open_client``: the one entry point that turns a configuration into a warm client."""

from __future__ import annotations

import httpx

from spark_ide.upstream.base import ModelClient
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.profiles import Transport
from spark_ide.upstream.sse import ChatCompletionsClient
from spark_ide.upstream.ws_client import ResponsesClient


async def open_client(
    config: ProviderConfig,
    *,
    warmup_instructions: str = "",
    http_transport: httpx.AsyncBaseTransport | None = None,
) -> ModelClient:
    """Connect and warm up before the first prompt.

    Responses providers get a socket warmed with ``generate: false`` (carrying
    ``warmup_instructions``) and, when the profile uses one, a hot spare warming in the
    background. HTTP/SSE providers get a pooled keep-alive connection. Raises
    :class:`~spark_ide.upstream.errors.UpstreamError` (``provider_unavailable``,
    ``authentication_failed`` ...) instead of hanging when the provider is not there.
    ``http_transport`` replaces httpx's network transport (tests).
    """
    if config.profile.transport is Transport.CHAT_SSE:
        chat = ChatCompletionsClient(config, http_transport=http_transport)
        try:
            await chat.connect()
        except BaseException:
            await chat.close()
            raise
        return chat
    client = ResponsesClient(
        config, warmup_instructions=warmup_instructions, http_transport=http_transport
    )
    try:
        await client.connect()
    except BaseException:
        await client.close()
        raise
    return client
