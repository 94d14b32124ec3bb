"""Provider configuration, from the environment (OpenAI conventions) or explicit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import get_args
from urllib.parse import urlsplit, urlunsplit

from spark_ide.upstream.backoff import RetryPolicy
from spark_ide.upstream.errors import ConfigError
from spark_ide.upstream.profiles import (
    CancelStrategy,
    Provider,
    ProviderProfile,
    profile_for,
)

LOCAL_BASE_URL = "http://127.0.0.1:8765/v1"
OPENAI_BASE_URL = "https://api.openai.com/v1"
LOCAL_MODEL = "smollm2"
BETA_HEADER = ("OpenAI-Beta", "responses_websockets=2026-02-06")

_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


@dataclass(frozen=True)
class ProviderConfig:
    provider: Provider = "local"
    base_url: str = LOCAL_BASE_URL
    model: str = LOCAL_MODEL
    api_key: str | None = field(default=None, repr=False)
    # Models (for the openai profile) known to accept `response.steer`.
    steer_models: frozenset[str] = frozenset()
    # Forces a cancel strategy instead of the profile's choice (tests, benchmarks).
    cancel_strategy: CancelStrategy | None = None
    store: bool = False
    connect_timeout_s: float = 10.0
    first_byte_timeout_s: float = 60.0
    idle_timeout_s: float = 120.0
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    # OpenAI closes a socket after 60 minutes; roll over to a fresh one a little earlier.
    connection_lifetime_s: float = 3600.0
    rollover_margin_s: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_transparent_resends: int = 3

    def __post_init__(self) -> None:
        if self.provider not in get_args(Provider):
            raise ConfigError(f"unknown provider {self.provider!r}")
        if not self.model:
            raise ConfigError("no model configured (SPARK_MODEL)")
        if self.profile.requires_key and not self.api_key:
            raise ConfigError(f"provider {self.provider!r} needs an API key (OPENAI_API_KEY)")
        websocket_url(self.base_url)  # validates the base URL for every provider
        if not 0 <= self.rollover_margin_s < self.connection_lifetime_s:
            raise ConfigError("rollover_margin_s must be >= 0 and below connection_lifetime_s")

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> ProviderConfig:
        provider = env.get("SPARK_PROVIDER", "local") or "local"
        if provider not in get_args(Provider):
            raise ConfigError(
                f"SPARK_PROVIDER must be one of {', '.join(get_args(Provider))}, not {provider!r}"
            )
        base_url = env.get("OPENAI_BASE_URL") or _default_base_url(provider)
        model = env.get("SPARK_MODEL") or (LOCAL_MODEL if provider == "local" else "")
        steer = frozenset(m.strip() for m in env.get("SPARK_STEER_MODELS", "").split(",") if m)
        config = cls(
            provider=provider,  # type: ignore[arg-type]  # checked against Provider above
            base_url=base_url,
            model=model,
            api_key=env.get("OPENAI_API_KEY") or None,
            steer_models=steer,
        )
        return replace(config, **overrides)  # type: ignore[arg-type]

    @property
    def profile(self) -> ProviderProfile:
        return profile_for(
            self.provider, self.model, steer_models=self.steer_models,
            override=self.cancel_strategy,
        )

    @property
    def websocket_url(self) -> str:
        return websocket_url(self.base_url)

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key else ()

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"ProviderConfig(provider={self.provider!r}, base_url={self.base_url!r}, "
            f"model={self.model!r}, api_key=<{key}>)"
        )


def _default_base_url(provider: str) -> str:
    if provider == "local":
        return LOCAL_BASE_URL
    if provider == "openai":
        return OPENAI_BASE_URL
    raise ConfigError("SPARK_PROVIDER=openai-compatible needs OPENAI_BASE_URL")


def websocket_url(base_url: str) -> str:
    """The Responses socket URL, derived as the openai SDK does: ws(s) scheme + ``/responses``."""
    parts = urlsplit(base_url)
    scheme = _WS_SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.netloc:
        raise ConfigError(f"base URL must be http(s):// or ws(s)://host..., got {base_url!r}")
    path = parts.path.rstrip("/") + "/responses"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def http_base_url(base_url: str) -> str:
    """The HTTP form of the base URL (for the Chat Completions adapter and the 426 fallback)."""
    parts = urlsplit(base_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme.lower(), parts.scheme.lower())
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), parts.query, ""))
