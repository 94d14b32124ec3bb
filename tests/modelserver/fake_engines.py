"""Engines that let tests see what the server handed them."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from spark_ide.modelserver.engine import CancelToken, Job, Piece, Tally


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


class BrokenEngine(EchoEngine):
    """Fails with an unexpected exception after its first piece."""

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        yield Piece("partial")
        raise RuntimeError("engine bug")
