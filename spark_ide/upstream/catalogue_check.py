"""Checking a catalogue entry (``manage.py spark_models``): it is reached, and its key accepted.

A Responses model (``local``, ``openai``) is checked by opening its socket and warming it up
for the entry's model, as a room does before its first prompt: a refused key fails the
upgrade (``authentication_failed``), an unknown model the warm-up. A Chat Completions host
(``openai-compatible``) is asked ``GET /models`` with the key. One try each, no retries: the
check says at once what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import httpx

from spark_ide.upstream.backoff import RetryPolicy
from spark_ide.upstream.catalogue import ModelEntry, provider_config
from spark_ide.upstream.client import open_client
from spark_ide.upstream.config import ProviderConfig, http_base_url
from spark_ide.upstream.errors import (
    PROVIDER_UNAVAILABLE,
    UpstreamError,
    redact,
    status_code_error,
)
from spark_ide.upstream.profiles import Transport

CHECK_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Checked:
    """How ``entry``'s check went: ``ok``, and what was found (never the key)."""

    entry: ModelEntry
    ok: bool
    detail: str

    def line(self) -> str:
        entry = self.entry
        where = f"{entry.provider} {entry.model} at {entry.base_url}"
        return f"{'ok  ' if self.ok else 'FAIL'}  {entry.name}  ({where}): {self.detail}"


async def check_entry(entry: ModelEntry, env: Mapping[str, str], *, timeout_s: float = CHECK_TIMEOUT_S) -> Checked:
    try:
        config = provider_config(entry, env)
    except UpstreamError as exc:  # no key, or a setting it cannot use
        return Checked(entry, False, exc.message)
    config = replace(
        config, retry=RetryPolicy(max_tries=1), connect_timeout_s=min(config.connect_timeout_s, timeout_s),
        first_byte_timeout_s=min(config.first_byte_timeout_s, timeout_s),
    )
    try:
        if config.profile.transport is Transport.CHAT_SSE:
            await _list_models(config, timeout_s)
        client = await open_client(config)
        await client.close()
    except UpstreamError as exc:
        return Checked(entry, False, redact(f"{exc.code}: {exc.message}{_whose_key(entry, exc)}", config.secrets))
    except OSError as exc:
        return Checked(entry, False, redact(f"not reached: {exc}", config.secrets))
    key = f", the key in {entry.key_env} accepted" if config.api_key else ""
    return Checked(entry, True, f"reached{key}")


def _whose_key(entry: ModelEntry, exc: UpstreamError) -> str:
    if exc.code == "authentication_failed" and entry.key_env:
        return f" (the key in {entry.key_env} was refused)"
    return ""


async def _list_models(config: ProviderConfig, timeout_s: float) -> None:
    """``GET /models`` on a Chat Completions host, with the key: a refusal says so."""
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        async with httpx.AsyncClient(base_url=http_base_url(config.base_url), timeout=timeout_s) as http:
            response = await http.get("/models", headers=headers)
    except httpx.TransportError as exc:
        raise UpstreamError(PROVIDER_UNAVAILABLE, f"not reached: {exc!r}") from None
    if response.status_code >= 400:
        raise status_code_error(response.status_code, response.text[:200], key_label=config.key_label)
