"""Provider profiles: how each kind of provider is reached and how a running answer is stopped.

One small table, so the Pilot never branches on the provider itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Provider = Literal["local", "openai", "openai-compatible"]
Effort = Literal["low", "medium", "high", "xhigh"]
EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "xhigh")


class Transport(StrEnum):
    RESPONSES_WS = "responses_ws"
    CHAT_SSE = "chat_sse"


class CancelStrategy(StrEnum):
    """Ways to stop a running response, best first (DESIGN.md §2)."""

    NATIVE_CANCEL = "native_cancel"  # our server's `response.cancel` extension
    NATIVE_STEER = "native_steer"  # `response.steer` on models that support it
    HOT_SPARE = "hot_spare"  # re-prompt on a second warm socket, close the old one
    RECONNECT = "reconnect"  # close the socket, open a new one, re-prompt
    CLOSE_STREAM = "close_stream"  # HTTP/SSE: closing the stream stops the server


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    name: Provider
    transport: Transport
    cancel_strategy: CancelStrategy
    keeps_spare: bool
    beta_header: bool
    requires_key: bool
    # How a TurnRequest.effort becomes a request field; None drops it.
    effort_values: Mapping[Effort, str] | None


_IDENTITY_EFFORT: Mapping[Effort, str] = {e: e for e in EFFORTS}


def profile_for(
    provider: Provider,
    model: str,
    *,
    steer_models: frozenset[str] = frozenset(),
    cancel: CancelStrategy | None = None,
) -> ProviderProfile:
    """The profile for a provider; ``cancel``: the strategy the configuration asks for instead
    of the provider's best (``ProviderConfig.cancel_strategy``, checked there)."""
    if provider == "openai-compatible":
        return ProviderProfile(
            name=provider,
            transport=Transport.CHAT_SSE,
            cancel_strategy=CancelStrategy.CLOSE_STREAM,
            keeps_spare=False,
            beta_header=False,
            requires_key=False,
            effort_values=None,
        )
    if provider == "local":
        strategy = CancelStrategy.NATIVE_CANCEL
        beta, requires_key, efforts = False, False, None
    else:
        steers = model in steer_models
        strategy = CancelStrategy.NATIVE_STEER if steers else CancelStrategy.HOT_SPARE
        beta, requires_key, efforts = True, True, _IDENTITY_EFFORT
    strategy = cancel or strategy
    return ProviderProfile(
        name=provider,
        transport=Transport.RESPONSES_WS,
        cancel_strategy=strategy,
        # Native steer still needs the spare for a plain stop and for a refused steer.
        keeps_spare=strategy in (CancelStrategy.HOT_SPARE, CancelStrategy.NATIVE_STEER),
        beta_header=beta,
        requires_key=requires_key,
        effort_values=efforts,
    )
