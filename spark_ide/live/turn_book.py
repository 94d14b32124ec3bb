"""What everyone is told of a turn's start and end, and what is kept of it.

``TurnBook`` publishes ``turn.started`` (with a line in the transcript when the course caps the
effort) and ``turn.finished`` with the turn's metrics (counted once, ``turns.turn_metrics``),
tells the meter and the AI policy's quota how the turn ended, and writes the turn's records
in order, off the critical path (``Records``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from .events import DEFAULT_EFFORT, FinishReason, TurnEvent, TurnFinished, TurnProse, TurnStarted, TurnStatus
from .meter import Meter
from .policy import AiPolicy
from .policy_gate import PolicyGate, PolicySource
from .records import Records
from .reverts import RevertBook
from .store import TurnOutcome, TurnRecord
from .turns import CommandKind, TurnRun, changed_files, meter_turn, turn_metrics, unified_diffs

Metrics = Mapping[str, float | int | str | None]


class TurnStore(PolicySource, RevertBook, Protocol):
    """Where the Pilot records turns and reads the course's policy (``RoomStore``)."""

    async def turn_started(self, record: TurnRecord) -> None: ...

    async def turn_finished(self, outcome: TurnOutcome) -> None: ...

    async def auto_test(self) -> bool | None:
        """The workspace's test rounds switch (``RoomStore.auto_test``)."""


class TurnBook:
    def __init__(
        self,
        *,
        store: TurnStore,
        records: Records,
        publish: Callable[[TurnEvent], None],
        texts: Callable[[], dict[str, str]],
        policy: PolicyGate,
        meter: Meter,
    ) -> None:
        self._store = store
        self._records = records
        self._publish = publish
        self._texts = texts
        self._policy = policy
        self._meter = meter

    def started(self, run: TurnRun, policy: AiPolicy) -> None:
        """``run`` starts under ``policy`` (which may cap the effort asked for)."""
        command = run.command
        requested = command.effort if command.kind is CommandKind.PROMPT else run.origin.effort
        effort = policy.effort(requested or DEFAULT_EFFORT)
        self._publish(TurnStarted(
            turn=run.id, prompt=command.text, steered_from=run.steered_from, effort=effort,
            author=command.author,
        ))
        if effort != (requested or DEFAULT_EFFORT):  # the course caps the effort: the turn says so
            self._publish(TurnProse(
                turn=run.id, text=f"(This course caps the AI's effort at {effort}: asked for {requested}, "
                f"this turn runs at {effort}.)\n\n",
            ))
        record = TurnRecord(
            turn=run.id, session=command.session, author_id=command.user_id, prompt=command.text,
            effort=effort, active_path=run.origin.path, steered_from=run.steered_from,
        )
        self._records.put("turn started", lambda: self._store.turn_started(record))

    def finished(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, error: str, by: str, model: str | None,
    ) -> Metrics:
        """Announce the end of ``run`` (``by``: the person who stopped, steered or reverted
        it; ``model``: the model it ran on); its metrics, for ``record``."""
        metrics = turn_metrics(run, time.monotonic(), model=model)
        self._publish(TurnFinished(turn=run.id, status=status, reason=reason, metrics=metrics, error=error, by=by))
        self._policy.spend(run.id, metrics.get("tokens"))
        meter_turn(self._meter, run, status.value, reason.value, metrics)
        return metrics

    def record(self, run: TurnRun, status: TurnStatus, reason: FinishReason, metrics: Metrics, error: str) -> None:
        """Write the record of ``run``'s end; its tokens count in the policy's next read once written."""
        changed, ledger = changed_files(run, self._texts()), run.editor.ledger.as_dicts()

        async def write() -> None:
            # The diff is made when the record is written, off a steer's way to its re-prompt
            # (the texts are taken now: the next turn may change them before then), and on a
            # thread: difflib over a large file held every room's stream for its whole time.
            diff = await asyncio.to_thread(unified_diffs, changed) if changed else {}
            await self._store.turn_finished(TurnOutcome(
                turn=run.id, status=status.value, reason=reason.value, output=run.output, ledger=ledger,
                diff=diff, metrics=metrics, error=error,
            ))

        self._records.put("turn finished", write, then=lambda: self._policy.recorded(run.id))
