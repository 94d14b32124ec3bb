"""Server settings (re-exported by :mod:`spark_ide.modelserver.server`)."""

from __future__ import annotations

from dataclasses import dataclass

RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 0  # 0 picks a free ephemeral port; read it back from ModelServer.url
    api_key: str | None = None  # set: the upgrade needs "Authorization: Bearer <key>"
    lifetime_s: float = 3600.0  # OpenAI closes a socket after 60 minutes
    max_frame_bytes: int = 4 * 1024 * 1024
    cancel_extension: bool = True  # False: response.cancel is an unknown type, as on OpenAI
    steer_extension: bool = False  # True: response.steer is supported
    model: str | tuple[str, ...] = "smollm2"  # model name(s) response.create may ask for

    @property
    def accepted_models(self) -> tuple[str, ...]:
        return (self.model,) if isinstance(self.model, str) else self.model
