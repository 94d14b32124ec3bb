"""A scripted model-server engine that keeps the server side's own record of its work.

Tests that must prove something happened *upstream* (a generation really stopped, a socket
was warmed) read it here, where the model runs, instead of from the client's own notes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Literal

from spark_ide.modelserver.engine import CancelToken, Job, Piece, Tally
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer

# finished: every token of its text; stopped: ended early, by a cancel or steer that reached
# the running response or by its socket closing under it; failed: it raised.
End = Literal["finished", "stopped", "failed"]


@dataclass
class Generation:
    """One ``generate`` call: what it was asked, what it produced, how it ended."""

    prompt: str  # the job's last user message
    tokens: int = 0
    end: End | None = None  # None while it runs


class RecordingEngine(ScriptedEngine):
    def __init__(self, scripts: dict[str, str] | None = None, *, tokens_per_s: float = 1000.0,
                 ttft_s: float = 0.02) -> None:
        super().__init__(scripts, tokens_per_s=tokens_per_s, ttft_s=ttft_s)
        self.generations: list[Generation] = []
        self.warmups: list[Job] = []  # each ``generate: false`` request, in arrival order

    async def prepare(self, job: Job, tally: Tally) -> None:
        self.warmups.append(job)
        await super().prepare(job, tally)

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        generation = Generation(job.last_user_text())
        self.generations.append(generation)
        try:
            async for piece in super().generate(job, tally, cancel):
                generation.tokens += piece.tokens
                yield piece
        except Exception:
            generation.end = "failed"
            raise
        except BaseException:  # GeneratorExit, CancelledError: closed from outside
            generation.end = "stopped"
            raise
        generation.end = "stopped" if cancel.is_set() else "finished"

    def asked(self, prompt: str) -> list[Generation]:
        """The generations whose last user message was ``prompt``."""
        return [generation for generation in self.generations if generation.prompt == prompt]


def recording_engine(server: ModelServer) -> RecordingEngine:
    engine = server.engine
    assert isinstance(engine, RecordingEngine), "the server was not started with a RecordingEngine"
    return engine
