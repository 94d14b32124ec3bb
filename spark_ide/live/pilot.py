"""The Pilot: the one task per room that runs the model's turns.

Consumers never await it: they ``submit`` a command and return; the Pilot handles commands
one at a time, in order. Each turn is made by ``turn_maker`` (its request, its edit engine)
and its answer read by a task of its own (``answer``), which hands back how it ended.

Every turn ends the same way (``_finish``): stop forwarding it, roll back its block in
flight (or settle its last block when the answer is complete), announce ``turn.finished``
with a status and a reason, record it. Where the model may still be generating, the
generation is then stopped upstream by the provider's strategy (``_stop_upstream``) before
the next queued prompt starts, so it never waits behind an abandoned answer.

Steer, in the order DESIGN.md §2 fixes: stop forwarding the old turn, roll back its block in
flight, re-prompt on a warm connection (the upstream client stops the old generation by the
provider's strategy, re-prompt first). The old turn's end and the new one's start are
announced before the re-prompt when it may wait on the network, else right after it: the
same events in the same order, and nothing of the old turn after its ``turn.finished``. In
the second case the new turn is made of its request alone until the re-prompt is written
(``TurnMaker.draft``); its edit engine and context follow (``TurnMaker.turn``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pycrdt import Doc

from spark_ide.guard import Finding
from spark_ide.upstream import UpstreamError

from .answer import AnswerReader
from .checkpoints import Checkpoints, CheckpointStore
from .events import (
    Event,
    FinishReason,
    Policy,
    QueueState,
    TurnEvent,
    TurnFinished,
    TurnQueued,
    TurnStatus,
    TurnSteered,
)
from .model_link import ModelLink, connect_failure, stop_answer
from .model_runs import ModelRuns
from .policy import AiPolicy
from .policy_gate import PolicyGate
from .prompt_queue import QUEUE_KINDS, PromptQueue
from .records import Records
from .reverts import TurnReverts
from .reviews import HunkReviews
from .room_models import RoomModels
from .spend import Budgets, SpendBook
from .store import LiveSettings
from .turn_book import Metrics, TurnBook, TurnStore
from .turn_maker import Draft, TurnMaker
from .turns import ANSWERED_AT_ONCE, Command, CommandKind, TurnRun, new_turn_id, publish_edits
from .usage import TurnUsage
from .watch_gate import GuardHalt, RoomRules, WatchGate, given_up
from .watchdog import CORRECTOR

log = logging.getLogger(__name__)

class PilotStore(TurnStore, CheckpointStore, Protocol):
    """What the Pilot keeps in storage: turn records, checkpoints (``RoomStore``)."""


@dataclass(frozen=True, slots=True)
class Halt:
    """Why the room stops the running turn from outside (storage failed, the watchdog)."""

    reason: FinishReason
    error: str


class Rechoose:
    """Read the room's model again (its owner switched it): warm the new one at once."""


RECHOOSE = Rechoose()


class Pilot:
    """The model's turns in one room. What it needs of the room is handed in: ``document``,
    the room's document as it is now (the room replaces it between turns); ``texts``, the
    files' texts; ``publish``, a turn event for everyone (numbered, logged, replayed);
    ``announce``, an event for everyone now (not replayed); ``store``, where turns are
    recorded and the course's policy is read; ``guard``, the room's watchdog."""

    def __init__(
        self,
        *,
        document: Callable[[], Doc[Any]],
        texts: Callable[[], dict[str, str]],
        publish: Callable[[TurnEvent], None],
        announce: Callable[[Event], None],
        store: PilotStore,
        guard: RoomRules,
        settings: LiveSettings,
        runs: ModelRuns | None = None,
    ) -> None:
        self._publish = publish
        self._texts = texts
        self.settings = settings
        self._announce_now = announce
        self.models = RoomModels(settings)  # the model's connection, per catalogue entry
        self.style = self.models.style
        self._commands: asyncio.Queue[Command | Halt | GuardHalt | Rechoose] = asyncio.Queue()
        self._queue = PromptQueue(announce=announce)  # prompts waiting, in the order they run
        self._run: TurnRun | None = None
        self._store = store
        self._maker = TurnMaker(
            document=document, texts=texts, style=self.style, limits=settings.limits, runs=runs,
            run_budget=settings.run_output_to_model,
        )
        self._records = Records(settings.persist_retries)
        self._reverts = TurnReverts(book=store, records=self._records, publish=publish)
        self._reviews = HunkReviews(editor=self._reverts.kept, publish=publish)
        self._task: asyncio.Task[None] | None = None
        self._policy = PolicyGate(source=store, announce=announce)
        self._spend = SpendBook(source=store, daily_budget=settings.daily_budget_usd)
        self._turns = TurnBook(
            store=store, records=self._records, publish=publish, announce=announce, texts=texts, policy=self._policy,
            spend=self._spend,
            prices=lambda run: None if run.link is None else run.link.prices(), meter=settings.meter,
        )
        self._watchdog = WatchGate(
            room=guard, publish=publish, halt=self._commands.put_nowait, running=lambda: self._run,
        )
        self._answers = AnswerReader(
            publish=publish, policy=self._policy, watchdog=self._watchdog,
            budgets=Budgets(self._policy, self._spend, self._turns.usage), steps=settings.steps,
        )
        self.checkpoints = Checkpoints(
            store=store, records=self._records, document=document, texts=texts,
            conversation=lambda: self._maker.conversation, set_conversation=self._maker.go_back, announce=announce,
            publish=publish,
            files_restored=lambda: self._reverts.files_restored(document()), keep=settings.checkpoints_keep,
        )

    @property
    def busy(self) -> bool:
        return self._run is not None or bool(self._queue)

    @property
    def running_turn(self) -> str | None:
        return self._run.id if self._run is not None else None

    @property
    def running(self) -> tuple[TurnRun, AiPolicy] | None:  # and the policy as last read (``live.edit_steer``)
        return None if self._run is None else (self._run, self._policy.policy)

    def submit(self, command: Command) -> None:
        if command.kind in ANSWERED_AT_ONCE:
            self._answer(command)
            return
        if command.kind is CommandKind.PROMPT and not command.turn:
            command.turn = new_turn_id()
        self._commands.put_nowait(command)

    def _answer(self, command: Command) -> None:
        """A question about the workspace (``context.preview``, ``symbols``), answered to the
        asker at once: it changes nothing, so it does not wait behind the turns' commands."""
        if command.reply is None:
            return
        try:
            if command.kind is CommandKind.SYMBOLS:
                command.reply(self._maker.symbols(command.path))
            else:
                command.reply(self._maker.preview(command, self._policy.policy))
        except Exception:  # a bug of ours: logged, and the asker's socket stays open
            log.exception("the Pilot failed to answer %s", command.kind)

    def halt(self, reason: FinishReason, error: str) -> None:
        """Stop the running turn (failed, ``reason``); queued prompts wait for ``resume()``."""
        self._commands.put_nowait(Halt(reason, error))

    def model_changed(self) -> None:
        """The workspace's model was switched: the next turn runs on it, its socket opens now."""
        self._commands.put_nowait(RECHOOSE)

    def resume(self) -> None:
        """Start what is queued, if nothing runs (after a halt)."""
        self._commands.put_nowait(Command(kind=CommandKind.NEXT))

    def announce_lost(self, turn: str) -> None:
        """A turn an earlier owner of the room was running when it went away."""
        self._publish(TurnFinished(
            turn=turn, status=TurnStatus.FAILED, reason=FinishReason.OWNER_LOST, metrics={},
            error="the server running this turn stopped",
        ))

    def queue_state(self) -> QueueState | None:
        """For a joining page: the prompts waiting (None when none do)."""
        return self._queue.state() if len(self._queue) else None

    async def current_policy(self) -> Policy | None:
        """For a joining page: the course's AI policy as it stands (None outside a course)."""
        return await self._policy.current()

    # -- the task ----------------------------------------------------------------------------

    def start(self) -> None:
        self._records.start()
        self._task = asyncio.create_task(self._loop())

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        run = self._run
        if run is not None:
            self._finish(run, TurnStatus.CANCELLED, FinishReason.SHUTDOWN)
            await self._stop_upstream(run)
        self._policy.close()
        self._spend.close()
        self._watchdog.close()
        await self.models.close()
        await self._records.close()

    async def _loop(self) -> None:
        await self._choose_model()  # the workspace's model, its socket warmed before the first prompt
        while True:
            command = await self._commands.get()
            try:
                await self._handle(command)
            except Exception:
                log.exception("the Pilot failed on %s", command)

    async def _handle(self, command: Command | Halt | GuardHalt | Rechoose) -> None:
        run = self._run
        if isinstance(command, Rechoose):
            await self._choose_model()
            return
        if isinstance(command, Halt):
            if run is not None:
                await self._end(run, TurnStatus.FAILED, command.reason, error=command.error, then_next=False)
            return
        if isinstance(command, GuardHalt):
            if run is command.run and run.live:
                await self._correct(run, command.findings)
            return
        kind = command.kind
        if kind is CommandKind.PROMPT:
            if run is not None:
                if self._policy.refused(command, await self._policy.read()):
                    return
                if self._queue.add(command):
                    self._publish(TurnQueued(turn=command.turn, prompt=command.text, position=len(self._queue)))
            else:
                await self._start(command)
        elif kind is CommandKind.STEER:
            if run is None:
                await self._start(command)
            else:
                await self._steer(run, command)
        elif kind in QUEUE_KINDS:
            steer = self._queue.change(command)  # a queued prompt taken out to steer with now
            if steer is not None:
                await (self._start(steer) if run is None else self._steer(run, steer))
        elif kind is CommandKind.EDIT_STEER and run is not None and command.note and command.note.turn == run.id:
            await self._steer(run, command)  # (``live.edit_steer``: the turn it edits still runs)
        elif kind is CommandKind.STOP:
            if run is not None:
                await self._end(run, TurnStatus.CANCELLED, FinishReason.STOPPED, by=command.author)
        elif kind is CommandKind.REVERT:
            await self._revert(command)
        elif kind is CommandKind.RESTORE:
            self._reverts.restore(command)
        elif kind is CommandKind.REVIEW:
            self._review(command)
        elif kind is CommandKind.CHECKPOINT_RESTORE:
            await self.checkpoints.restore(command, busy=run is not None)
        elif kind is CommandKind.CHECKPOINT_CREATE:
            await self.checkpoints.create(command)
        elif kind is CommandKind.NEXT and run is None:
            await self._next()

    async def _next(self) -> None:
        if self._run is None:
            self.models.prune(in_use=None)  # a model switched away from closes once its turn ended
        if self._run is None and (command := self._queue.pop()) is not None:
            await self._start(command)

    # -- the room's model ---------------------------------------------------------------------

    async def _choose_model(self) -> None:
        """Run the next turns on the workspace's model as the store has it now: a new one's
        socket opens now and every page is told (``room_models``); the running turn keeps its
        own. A store that cannot say keeps the model there is."""
        try:
            entry = await self._store.model_entry()
        except Exception:
            log.warning("could not read the workspace's model; the room keeps its own", exc_info=True)
            entry = None
        if self.models.switch(entry):
            self.style = self.models.style
            self._maker.restyle(self.style)
            chosen = self.models.chosen()
            if chosen is not None:
                self._announce_now(chosen)
        self.models.current.warm()
        running = self._run
        self.models.prune(in_use=running.link if running is not None else None)

    async def _model_for_turn(self) -> None:
        """Before a turn: the workspace's model, its connection opened again when what it is
        opened with changed (the owner's keys: ``ModelLink.refresh``)."""
        await self._choose_model()
        await self.models.current.refresh()

    # -- starting turns ----------------------------------------------------------------------

    def _announce(self, run: TurnRun, policy: AiPolicy) -> None:
        self._run = run
        self._spend.started(run.command)
        self._reverts.turn_started(run.id, run.editor)  # a revert can be undone until the next turn starts: this one
        self._turns.started(run, policy)

    async def _auto_test(self) -> bool:
        """Whether the IDE runs the tests after the model's changes (``test_rounds``): the
        workspace's switch, else ``SPARK_AUTO_TEST`` (also when the switch cannot be read)."""
        try:
            choice = await self._store.auto_test()
        except Exception:
            log.warning("could not read the workspace's test rounds switch", exc_info=True)
            choice = None
        return self.settings.auto_test if choice is None else choice

    async def _start(self, command: Command) -> None:
        policy, spent, _, auto_test, _ = await asyncio.gather(
            self._policy.read(), self._spend.read(command), self._watchdog.read_rules(), self._auto_test(),
            self._model_for_turn(),
        )
        if self._policy.refused(command, policy) or self._spend.refused(command, spent):
            await self._next()
            return
        run = self._maker.make(
            command, steered_from=None, policy=policy, watch=self._watchdog.watch_for(policy), auto_test=auto_test,
        )
        run.link = link = self.models.current
        # Before every turn (not a steer: its chain began with one): the files it starts from
        # and the conversation before it, recorded ahead of the turn's own record.
        self.checkpoints.before_turn(run.id, command, run.before)
        self._announce(run, policy)
        try:
            client = await link.client()
            run.stream = await client.start(run.request)
        except (UpstreamError, OSError) as exc:
            self._unavailable(run, exc)
            await self._next()
            return
        run.task = asyncio.create_task(self._consume(run))

    async def _steer(self, old: TurnRun, command: Command, reason: FinishReason = FinishReason.STEERED) -> None:
        policy = await self._policy.read()  # one await: the old turn is forwarded until it ends
        if self._policy.refused(command, policy):
            if command.correction:  # the watchdog halted it: it cannot go on
                await self._end(old, TurnStatus.CANCELLED, FinishReason.GUARD_HALT, by=CORRECTOR,
                                error="the watchdog stopped a high-severity flaw; no correction could start")
            return  # the running turn goes on (a quota it passes stops it)
        if command.note is not None:  # a steer by editing: what it changed; its block in flight is kept
            self._publish(command.note)
        link = old.link or self.models.current  # a steer continues its turn: on its model
        warm = link.open_client
        # A re-prompt that goes out without waiting on the network goes out before the old
        # turn's end and the new one's start are announced (the same events, in the same
        # order, a moment later); one that may wait (a socket to open) goes out after them.
        at_once = warm is not None and warm.steers_at_once(old.stream)
        settled = self._settle(old, TurnStatus.STEERED, reason, keep=command.note is not None)  # (a), (b)
        texts = self._texts()  # as the rollback left them: read once, for the old turn's hand-over and the request
        ended: tuple[Metrics, TurnUsage] | None = None
        if settled is not None:
            self._hand_over(old, TurnStatus.STEERED, texts)
            if not at_once:
                ended = self._announce_end(old, TurnStatus.STEERED, settled, by=command.author)
        # The new turn's request first; the rest of the turn (its edit engine, its context) is
        # made after the request is written when it goes out at once, else before it.
        draft = self._maker.draft(command, steered_from=old, policy=policy, texts=texts)
        run = None if at_once else self._new_turn(draft, old, link, policy, announced_after=False)
        try:
            client = warm if warm is not None else await link.client()
            # (c)+(d): the client re-prompts on a warm connection, then stops the old answer.
            if old.stream is not None:
                stream = await client.steer(old.stream, draft.request)
            else:
                stream = await client.start(draft.request)
        except (UpstreamError, OSError) as exc:
            run = run or self._new_turn(draft, old, link, policy, announced_after=True)
            self._steered(old, run, policy, settled, ended, author=command.author, at_once=at_once)
            self._unavailable(run, exc)
            await self._stop_upstream(old)  # the steer never reached the model: stop the old answer
            return
        steer_ms = (time.monotonic() - command.received_at) * 1000
        run = run or self._new_turn(draft, old, link, policy, announced_after=True)
        run.stream, run.steer_ms = stream, steer_ms
        self._steered(old, run, policy, settled, ended, author=command.author, at_once=at_once)
        self._publish(TurnSteered(turn=run.id, steered_from=old.id, steer_ms=round(steer_ms, 3)))  # as metrics
        run.task = asyncio.create_task(self._consume(run))

    def _new_turn(
        self, draft: Draft, old: TurnRun, link: ModelLink, policy: AiPolicy, *, announced_after: bool,
    ) -> TurnRun:
        """The turn of a steer's ``draft``, on the model of the turn it steers (``link``),
        announced now unless ``announced_after`` its re-prompt (by ``_steered``)."""
        run = self._maker.turn(draft, watch=self._watchdog.watch_for(policy), auto_test=old.auto_test)
        run.link = link
        if not announced_after:
            self._announce(run, policy)
        return run

    def _steered(
        self, old: TurnRun, run: TurnRun, policy: AiPolicy, settled: FinishReason | None,
        ended: tuple[Metrics, TurnUsage] | None, *, author: str, at_once: bool,
    ) -> None:
        """After a steer's re-prompt (sent or failed): what was not announced before it is now
        (the old turn's end, the new one's start), and the old turn's record is written, made
        from the texts the new request was made from (the document as the rollback left it)."""
        if at_once:
            if settled is not None:
                ended = self._announce_end(old, TurnStatus.STEERED, settled, by=author)
            self._announce(run, policy)
        if settled is not None and ended is not None:
            self._turns.record(old, TurnStatus.STEERED, settled, *ended, "", texts=run.before)

    def _unavailable(self, run: TurnRun, exc: Exception) -> None:
        reason, error = connect_failure(exc)
        self._finish(run, TurnStatus.FAILED, reason, error=error)
        if run.link is not None:
            run.link.drop()

    # -- the answer --------------------------------------------------------------------------

    async def _consume(self, run: TurnRun) -> None:
        """Read ``run``'s answer (``answer.AnswerReader``) and end the turn as it ended; then
        start what is queued (not after a halt by the watchdog: its correction comes next)."""
        try:
            ending = await self._answers.read(run)
            if ending is None:
                return
            if ending.upstream_running:
                await self._end(run, ending.status, ending.reason, error=ending.error, then_next=False)
            else:
                self._finish(run, ending.status, ending.reason, error=ending.error)
            if ending.drop_link and run.link is not None:
                run.link.drop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("turn %s failed", run.id)
            if run.live:
                self._finish(run, TurnStatus.FAILED, FinishReason.INTERNAL_ERROR, error=f"internal error: {exc}")
        self.submit(Command(kind=CommandKind.NEXT))

    async def _correct(self, run: TurnRun, findings: tuple[Finding, ...]) -> None:
        """The watchdog halted ``run``: its block in flight is rolled back, and the model is
        re-prompted with the findings on the warm connection (a steer by the watchdog) — at
        most ``max_corrections`` times in a chain; then the turn is stopped and flagged."""
        correction = self._watchdog.correction(run, findings)
        if correction is None:
            await self._end(
                run, TurnStatus.CANCELLED, FinishReason.GUARD_HALT, by=CORRECTOR, error=given_up(run, findings),
            )
            return
        await self._steer(run, correction, FinishReason.GUARD_HALT)

    # -- the one way a turn ends -------------------------------------------------------------

    async def _end(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, error: str = "", then_next: bool = True,
        by: str = "",
    ) -> None:
        """End ``run`` while the model may still be writing it: finish it, stop the generation
        upstream, then start what is queued."""
        self._finish(run, status, reason, error=error, by=by)
        await self._stop_upstream(run)
        if then_next:
            await self._next()

    def _finish(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, error: str = "", by: str = "",
        keep: bool = False,
    ) -> None:
        """Announce the end of ``run``; after this nothing of it is sent but its rollback. ``by``: the
        person who stopped, steered or reverted it; ``keep``: its block in flight stays (edit steering)."""
        settled = self._settle(run, status, reason, keep=keep)
        if settled is None:
            return
        metrics, usage = self._announce_end(run, status, settled, error=error, by=by)
        self._hand_over(run, status)
        self._turns.record(run, status, settled, metrics, usage, error)

    def _settle(self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, keep: bool) -> FinishReason | None:
        """Stop forwarding ``run`` and settle its blocks (the last one completed when the answer
        is, the one in flight rolled back, or kept: ``keep``); the reason its end is announced
        with. None: it had ended already."""
        if not run.live:
            return None
        run.live = False
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()
        run.tools.cancel()  # a run of the model still going is stopped
        if status is TurnStatus.COMPLETED:
            finished = run.editor.finish()
            publish_edits(self._publish, finished)
            self._watchdog.answer_complete(run, finished)
            changed = run.editor.ledger.changed()
            if reason is FinishReason.ANSWERED and not changed:
                reason = FinishReason.NO_CHANGES
            if run.editor.withheld and reason is FinishReason.NO_CHANGES:
                reason = FinishReason.EXPLAIN_ONLY  # its blocks were shown, not applied
        else:
            publish_edits(self._publish, run.editor.cancel(keep_in_flight=keep))  # in flight: goes (or kept)
        return reason

    def _announce_end(
        self, run: TurnRun, status: TurnStatus, reason: FinishReason, *, error: str = "", by: str = "",
    ) -> tuple[Metrics, TurnUsage]:
        """``turn.finished`` for ``run``; its metrics and usage, for its record."""
        model = None if run.link is None else run.link.model
        return self._turns.finished(run, status, reason, error=error, by=by, model=model)

    def _hand_over(self, run: TurnRun, status: TurnStatus, texts: dict[str, str] | None = None) -> None:
        """``run`` no longer runs: the next turns carry what it did (history, ledger, notes);
        ``texts``: the files as they are now, when read already."""
        if self._run is run:
            self._run = None
        self._maker.ended(run, status, texts)
        self._maker.reviewed(run.editor, run.editor.take_notes())  # undone blocks no round told the model of
        run.touched.update(entry.path for entry in run.editor.ledger.changed())
        if status is not TurnStatus.STEERED:  # a steered turn's files are scanned when its chain ends
            self._watchdog.chain_ended(run)

    async def _stop_upstream(self, run: TurnRun) -> None:
        if run.stream is not None:
            await stop_answer(run.stream)

    # -- revert ------------------------------------------------------------------------------

    def document_replaced(self, doc: Doc[Any]) -> None:
        """The room compacted its document into ``doc`` (between turns): the kept turns'
        undo histories belong to the old one; they revert as text from now on."""
        if self._run is not None:
            raise RuntimeError("the document cannot be replaced while a turn writes into it")
        self._reverts.document_replaced(doc)

    def _review(self, command: Command) -> None:
        """Keep or undo applied blocks of a turn (``reviews``). The model hears of a block
        undone in the running turn in its next round's request (``answer``), else in the
        next turn's."""
        editor = self._reviews.review(command)
        run = self._run
        if editor is not None and (run is None or run.editor is not editor):
            self._maker.reviewed(editor, editor.take_notes())

    async def _revert(self, command: Command) -> None:
        """Take a turn back; the running one is ended first (``reverted``)."""
        editor = self._reverts.editor(command)
        if editor is None:
            return
        running = self._run if self._run is not None and self._run.id == command.turn else None
        if running is not None:
            self._finish(running, TurnStatus.CANCELLED, FinishReason.REVERTED, by=command.author)
        if not self._reverts.revert(command, editor):
            return
        if running is not None:
            await self._stop_upstream(running)
            await self._next()
