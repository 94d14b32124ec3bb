"""Provider configuration, from the environment (OpenAI conventions) or explicit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import get_args
from urllib.parse import urlsplit, urlunsplit

from spark_ide.upstream.backoff import RetryPolicy
from spark_ide.upstream.dialects import (
    EditStyle,
    configured_edit_style,
    default_edit_style,
    parse_edit_style,
)
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


def server_key_label(key_env: str = "OPENAI_API_KEY") -> str:
    """How a refusal names the server's key (``ProviderConfig.key_label``): by its variable."""
    return f"the server's key ({key_env})"


SERVER_KEY_LABEL = server_key_label()

# How long the IDE waits on the model before it gives up (SPARK_UPSTREAM_CONNECT_S,
# SPARK_UPSTREAM_FIRST_BYTE_S, SPARK_UPSTREAM_STALL_S). The first byte is any frame, and
# OpenAI sends `response.created` at once, so a minute of silence means a stuck request; a
# reasoning model may think for a while between frames, hence the longer stall limit.
CONNECT_TIMEOUT_S = 10.0
FIRST_BYTE_TIMEOUT_S = 60.0
STALL_TIMEOUT_S = 120.0

_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


@dataclass(frozen=True)
class ProviderConfig:
    provider: Provider = "local"
    base_url: str = LOCAL_BASE_URL
    model: str = LOCAL_MODEL
    api_key: str | None = field(default=None, repr=False)
    # Which key ``api_key`` is, for people (never the key): a refusal by the provider names it.
    key_label: str = ""
    # Models (for the openai profile) known to accept `response.steer`.
    steer_models: frozenset[str] = frozenset()
    # A cancel strategy instead of the profile's choice (SPARK_UPSTREAM_CANCEL): ``reconnect``
    # for a Responses server that takes neither ``response.cancel`` nor a second socket.
    cancel_strategy: CancelStrategy | None = None
    # The edit dialect instead of the provider's default (SPARK_EDIT_STYLE; ``dialect``).
    edit_style: EditStyle | None = None
    store: bool = False
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    first_byte_timeout_s: float = FIRST_BYTE_TIMEOUT_S
    idle_timeout_s: float = STALL_TIMEOUT_S
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
        for name in ("connect_timeout_s", "first_byte_timeout_s", "idle_timeout_s"):
            if not getattr(self, name) > 0:  # also refuses NaN
                raise ConfigError(f"{name} must be a positive number of seconds")
        strategy = self.cancel_strategy
        if strategy is not None and strategy not in _SOCKET_STRATEGIES[self.provider]:
            allowed = ", ".join(_SOCKET_STRATEGIES[self.provider]) or "none (it closes the stream)"
            raise ConfigError(f"provider {self.provider!r} cannot cancel by {strategy}; it can by: {allowed}")
        if self.edit_style is not None:
            parse_edit_style(self.edit_style, provider=self.provider, setting="edit_style")
        if self.retry.max_tries < 1:
            raise ConfigError("retry.max_tries must be at least 1")
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
            key_label=SERVER_KEY_LABEL if env.get("OPENAI_API_KEY") else "",
            steer_models=steer,
            # How long the IDE waits on the model before it gives a turn up (docs/upstream.md).
            connect_timeout_s=_seconds(env, "SPARK_UPSTREAM_CONNECT_S", CONNECT_TIMEOUT_S),
            first_byte_timeout_s=_seconds(env, "SPARK_UPSTREAM_FIRST_BYTE_S", FIRST_BYTE_TIMEOUT_S),
            idle_timeout_s=_seconds(env, "SPARK_UPSTREAM_STALL_S", STALL_TIMEOUT_S),
            retry=RetryPolicy(max_tries=_tries(env, "SPARK_UPSTREAM_CONNECT_TRIES", RetryPolicy().max_tries)),
            cancel_strategy=_strategy(env, "SPARK_UPSTREAM_CANCEL"),
            edit_style=configured_edit_style(env, provider=provider),
        )
        return replace(config, **overrides)  # type: ignore[arg-type]

    @property
    def profile(self) -> ProviderProfile:
        return profile_for(self.provider, self.model, steer_models=self.steer_models, cancel=self.cancel_strategy)

    @property
    def dialect(self) -> EditStyle:
        """The dialect turns use: the configured one, else the provider's and model's default."""
        return self.edit_style or default_edit_style(self.provider, self.model)

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


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{name} must be a positive, finite number of seconds, got {raw!r}")
    return value


# What each provider's transport can stop a response by, when told (``cancel_strategy``).
_SOCKET_STRATEGIES: Mapping[str, tuple[CancelStrategy, ...]] = {
    "local": (CancelStrategy.NATIVE_CANCEL, CancelStrategy.HOT_SPARE, CancelStrategy.RECONNECT),
    "openai": (CancelStrategy.NATIVE_STEER, CancelStrategy.HOT_SPARE, CancelStrategy.RECONNECT),
    "openai-compatible": (),  # Chat Completions over SSE: closing the stream is the only way
}


def _strategy(env: Mapping[str, str], name: str) -> CancelStrategy | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return CancelStrategy(raw)
    except ValueError:
        known = ", ".join(strategy.value for strategy in CancelStrategy)
        raise ConfigError(f"{name} must be one of {known}, got {raw!r}") from None


def _tries(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be at least 1, got {raw!r}")
    return value


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
