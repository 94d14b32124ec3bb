"""Named errors of the upstream client.

Every failure the Pilot can see carries a stable ``code`` (documented in docs/upstream.md)
and a message that never contains a provider key (see :func:`redact`).
"""

from __future__ import annotations

from collections.abc import Iterable

# Codes the Pilot may branch on.
PROVIDER_UNAVAILABLE = "provider_unavailable"
AUTHENTICATION_FAILED = "authentication_failed"
CONNECTION_LOST = "connection_lost"
# The provider ended the socket at its lifetime limit (60 minutes on OpenAI) mid-answer.
CONNECTION_EXPIRED = "connection_expired"
TIMEOUT = "timeout"
PROTOCOL_ERROR = "protocol_error"
RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
BAD_REQUEST = "bad_request"
NOT_FOUND = "not_found"
CONFIG_INVALID = "config_invalid"
CLIENT_CLOSED = "client_closed"
# No key may be used for the provider: the room's owner allows only their own and stored none.
KEY_MISSING = "key_missing"


class UpstreamError(Exception):
    """A failure talking to the model provider, with a stable ``code``."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


class ConfigError(UpstreamError):
    """The provider configuration (environment or explicit) is invalid."""

    def __init__(self, message: str) -> None:
        super().__init__(CONFIG_INVALID, message)


class UpgradeRefused(UpstreamError):
    """The server answered the WebSocket upgrade with an HTTP status (426 means: use HTTP)."""

    def __init__(self, status: int) -> None:
        super().__init__(PROVIDER_UNAVAILABLE, f"WebSocket upgrade refused with HTTP {status}")
        self.status = status


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Remove every secret from ``text``; used on all messages built from foreign errors."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def key_refused(message: str, key_label: str) -> str:
    """An authentication failure's message, naming the key the provider refused (its label,
    never the key)."""
    return f"{message}; the key was {key_label}" if key_label else message


def status_code_error(status: int, detail: str, *, key_label: str = "") -> UpstreamError:
    """Map an HTTP status from a provider to a named error (a refused key's names
    ``key_label``)."""
    if status in (401, 403):
        return UpstreamError(AUTHENTICATION_FAILED, key_refused(f"HTTP {status}: {detail}", key_label))
    if status == 404:
        return UpstreamError(NOT_FOUND, f"HTTP {status}: {detail}")
    if status == 429:
        return UpstreamError(RATE_LIMITED, f"HTTP {status}: {detail}", retryable=True)
    if status >= 500:
        return UpstreamError(SERVER_ERROR, f"HTTP {status}: {detail}", retryable=True)
    return UpstreamError(BAD_REQUEST, f"HTTP {status}: {detail}")
