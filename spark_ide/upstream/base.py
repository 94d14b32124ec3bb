"""The interface the Pilot programs against, whatever the provider."""

from __future__ import annotations

from abc import ABC, abstractmethod

from spark_ide.upstream.profiles import ProviderProfile, Transport
from spark_ide.upstream.request import TurnRequest
from spark_ide.upstream.stream import TurnStream


class ModelClient(ABC):
    """One session's way to the model: start turns, steer them, stop them."""

    @property
    @abstractmethod
    def transport(self) -> Transport:
        """How turns currently travel (can change once: 426 -> HTTP/SSE)."""

    @property
    @abstractmethod
    def profile(self) -> ProviderProfile: ...

    @property
    def model_name(self) -> str:
        """The model turns run on ("" when the client cannot say)."""
        return ""

    @abstractmethod
    async def start(self, request: TurnRequest) -> TurnStream:
        """Send a turn on a warm connection; raises UpstreamError if none can be had."""

    @abstractmethod
    async def steer(self, stream: TurnStream, request: TurnRequest) -> TurnStream:
        """Stop ``stream`` (it yields nothing more, at once) and start ``request`` instead,
        re-prompt first, by the profile's cancel strategy."""

    def steers_at_once(self, stream: TurnStream | None) -> bool:
        """Whether ``steer(stream, ...)`` (``start`` when ``stream`` is None) writes its
        request without waiting on the network (no socket to open, no answer to wait for).
        False when the client cannot tell."""
        return False

    @abstractmethod
    async def close(self) -> None:
        """Close every connection; running turns are stopped."""
