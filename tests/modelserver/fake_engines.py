"""Engines that let tests see what the server handed them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from spark_ide.modelserver.engine import CancelToken, Job, Piece, Tally
from spark_ide.modelserver.engines.scripted import ScriptedEngine


class EchoEngine:
    """Answers with the conversation it was given, one message per line."""

    def __init__(self) -> None:
        self.prepared: list[Job] = []

    async def load(self) -> None:
        """Nothing to load."""

    async def close(self) -> None:
        """Nothing to release."""

    async def prepare(self, job: Job, tally: Tally) -> None:
        self.prepared.append(job)
        tally.input_tokens = len(job.messages)

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        tally.input_tokens = len(job.messages)
        for message in job.messages:
            tally.output_tokens += 1
            yield Piece(f"{message.role}: {message.content}\n")


class ProbeEngine(ScriptedEngine):
    """A scripted engine that records how each generation ended."""

    def __init__(self, tokens_per_s: float) -> None:
        super().__init__(tokens_per_s=tokens_per_s, ttft_s=0.0)
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        self.ran_to_the_end = False
        self.pieces = 0

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        self.started.set()
        try:
            async for piece in super().generate(job, tally, cancel):
                self.pieces += 1
                yield piece
            self.ran_to_the_end = True
        finally:
            self.ended.set()


class BrokenEngine(EchoEngine):
    """Fails with an unexpected exception after its first piece."""

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        yield Piece("partial")
        raise RuntimeError("engine bug")
