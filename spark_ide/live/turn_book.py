"""What everyone is told of a turn's start and end, and what is kept of it.

``TurnBook`` publishes ``turn.started`` and ``turn.context`` (with a line in the transcript when the course caps the
effort) and ``turn.finished`` with the turn's metrics (counted once, ``turns.turn_metrics``)
and its tokens and cost (``usage.turn_usage``, with its session's so far), tells the meter,
the AI policy's quota and the spend book how the turn ended, and writes the turn's records
in order, off the critical path (``Records``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from spark_ide.upstream.catalogue import ModelEntry, Prices

from .events import (
    DEFAULT_EFFORT,
    Event,
    FinishReason,
    HistoryChanged,
    TurnContext,
    TurnEvent,
    TurnFinished,
    TurnProse,
    TurnStarted,
    TurnStatus,
)
from .meter import Meter
from .policy import AiPolicy
from .policy_gate import PolicyGate, PolicySource
from .records import Records
from .reverts import RevertBook
from .spend import SpendBook, SpendSource
from .store import TurnOutcome, TurnRecord
from .turns import CommandKind, TurnRun, changed_files, meter_turn, turn_metrics, unified_diffs
from .usage import TurnUsage, turn_usage

Metrics = Mapping[str, float | int | str | None]


class TurnStore(PolicySource, SpendSource, RevertBook, Protocol):
    """Where the Pilot records turns and reads the course's policy and the spend (``RoomStore``)."""

    async def turn_started(self, record: TurnRecord) -> None: ...

    async def turn_finished(self, outcome: TurnOutcome) -> None: ...

    async def auto_test(self) -> bool | None:
        """The workspace's test rounds switch (``RoomStore.auto_test``)."""

    async def model_entry(self) -> ModelEntry | None:
        """The catalogue's entry the next turn runs on (``RoomStore.model_entry``)."""


class TurnBook:
    def __init__(
        self,
        *,
        store: TurnStore,
        records: Records,
        publish: Callable[[TurnEvent], None],
        announce: Callable[[Event], None],
        texts: Callable[[], dict[str, str]],
        policy: PolicyGate,
        spend: SpendBook,
        prices: Callable[[TurnRun], Prices | None],
        meter: Meter,
    ) -> None:
        self._store = store
        self._records = records
        self._publish = publish
        self._announce = announce
        self._texts = texts
        self._policy = policy
        self._spend = spend
        self._prices = prices  # the prices of the model a turn runs on (None: unknown)
        self._meter = meter

    def started(self, run: TurnRun, policy: AiPolicy) -> None:
        """``run`` starts under ``policy`` (which may cap the effort asked for)."""
        command = run.command
        prompt = command.text if command.note is None else command.note.label()  # (a steer by editing)
        requested = command.effort if command.kind is CommandKind.PROMPT else run.origin.effort
        effort = policy.effort(requested or DEFAULT_EFFORT)
        self._publish(TurnStarted(
            turn=run.id, prompt=prompt, steered_from=run.steered_from, effort=effort,
            author=command.author, range=run.focus.span if run.focus is not None else None,
        ))
        if run.focus_note:  # the range was cut at the file's end, or its file is gone
            self._publish(TurnProse(turn=run.id, text=f"{run.focus_note}\n\n"))
        if run.context:  # what its request carries of the workspace
            self._publish(TurnContext(turn=run.id, context=run.context))
        if effort != (requested or DEFAULT_EFFORT):  # the course caps the effort: the turn says so
            self._publish(TurnProse(
                turn=run.id, text=f"(This course caps the AI's effort at {effort}: asked for {requested}, "
                f"this turn runs at {effort}.)\n\n",
            ))
        record = TurnRecord(
            turn=run.id, session=command.session, author_id=command.user_id, prompt=prompt,
            effort=effort, active_path=run.origin.path, steered_from=run.steered_from,
            model=run.link.entry.name if run.link is not None and run.link.entry is not None else "",
        )
        self._records.put("turn started", lambda: self._store.turn_started(record))

    def usage(self, run: TurnRun) -> TurnUsage:
        """What ``run`` has used so far (all of it, once it ended)."""
        return turn_usage(run.streams, self._prices(run), streamed=run.streamed_tokens)

    def finished(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, error: str, by: str, model: str | None,
    ) -> tuple[Metrics, TurnUsage]:
        """Announce the end of ``run`` (``by``: the person who stopped, steered or reverted
        it; ``model``: the model it ran on); its metrics and usage, for ``record``."""
        usage = self.usage(run)
        metrics = turn_metrics(run, time.monotonic(), usage, model=model)
        session = self._spend.finished(run.id, usage)
        self._publish(TurnFinished(
            turn=run.id, status=status, reason=reason, metrics=metrics, error=error, by=by, usage=usage.payload(),
            session_usage=session.payload(),
        ))
        self._policy.spend(run.id, usage.output_tokens, usage.cost)
        meter_turn(self._meter, run, status.value, reason.value, metrics, usage)
        return metrics, usage

    def record(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, metrics: Metrics, usage: TurnUsage, error: str,
        *, texts: Mapping[str, str] | None = None,
    ) -> None:
        """Write the record of ``run``'s end; its tokens and cost count in the policy's and the
        spend's next reads once written. ``texts``: the files as the turn left them, when the
        caller has them already (a steer: the texts its re-prompt was made from)."""
        changed, ledger = changed_files(run, self._texts() if texts is None else texts), run.editor.ledger.as_dicts()

        async def write() -> None:
            # The diff is made when the record is written, off a steer's way to its re-prompt
            # (the texts are taken now: the next turn may change them before then), and on a
            # thread: difflib over a large file held every room's stream for its whole time.
            diff = await asyncio.to_thread(unified_diffs, changed) if changed else {}
            await self._store.turn_finished(TurnOutcome(
                turn=run.id, status=status.value, reason=reason.value, output=run.output, ledger=ledger,
                diff=diff, metrics=metrics, error=error, usage=usage,
            ))

        def written() -> None:
            self._policy.recorded(run.id)
            self._spend.recorded(run.id)
            self._announce(HistoryChanged(turn=run.id))  # the history panel shows it from now

        self._records.put("turn finished", write, then=written)
