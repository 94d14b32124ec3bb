"""A Pilot on its own, its ports in memory: the room's document, the events it publishes and
announces (kept in order), its storage (``MemoryRoomStore``), the room's real watchdog
(``RoomGuard``) and the fake model (``FakeModel``, the one part replaced). No Django, no
database, no socket: a turn's logic runs in milliseconds.

    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X")
        stream = await rig.model.next_stream()
        ...
        finished = await rig.finished(turn)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from pycrdt import Doc

from spark_ide.editing.document import document_texts
from spark_ide.guard import Finding, GuardMode, full_scan
from spark_ide.live.events import EditStatus, ErrorEvent, Event, TurnDelta, TurnFinished, TurnStarted
from spark_ide.live.model_runs import ModelRuns
from spark_ide.live.pilot import Pilot
from spark_ide.live.policy import AiPolicy
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.room_guard import RoomGuard
from spark_ide.live.runs import RoomRuns
from spark_ide.live.steps import Steps
from spark_ide.live.store import EntryConnector, LiveSettings, NoRunner, Runner
from spark_ide.live.turns import Command, CommandKind
from spark_ide.live.watchdog import GuardSettings
from spark_ide.upstream import Message, TurnRequest
from spark_ide.upstream.catalogue import ModelEntry
from tests.support.fake_model import FakeModel
from tests.support.memory_store import MemoryRoomStore
from tests.support.waits import eventually

E = TypeVar("E", bound=Event)

WAIT_S = 5.0  # a bound on any wait: a turn's logic takes milliseconds


async def full_scan_in_thread(files: Mapping[str, str]) -> list[Finding]:
    """The watchdog's full scan (bandit, ruff ``S``) in a thread, not the scan process."""
    return await asyncio.to_thread(full_scan, dict(files))


def prompt_of(request: TurnRequest) -> str:
    """The text of a request's last message (what the model is asked now)."""
    last = request.input[-1]
    assert isinstance(last, Message), last
    return last.text


class Seen:
    """Events in the order they were published, and a wait for one."""

    def __init__(self) -> None:
        self.items: list[Event] = []
        self._added = asyncio.Event()

    def add(self, event: Event) -> None:
        self.items.append(event)
        self._added.set()

    async def until(self, kind: type[E], where: Callable[[E], bool] = lambda event: True) -> E:
        """The first event of ``kind`` for which ``where`` holds, waiting for it if need be."""
        async with asyncio.timeout(WAIT_S):
            while True:
                for event in self.items:
                    if isinstance(event, kind) and where(event):
                        return event
                self._added.clear()
                await self._added.wait()

    def of(self, kind: type[E], turn: str | None = None) -> list[E]:
        return [
            event for event in self.items
            if isinstance(event, kind) and (turn is None or getattr(event, "turn", None) == turn)
        ]

    def index(self, event: Event) -> int:
        return next(i for i, seen in enumerate(self.items) if seen is event)


@dataclass
class PilotRig:
    pilot: Pilot
    store: MemoryRoomStore
    model: FakeModel
    doc: Doc[Any]
    published: Seen  # turn events (numbered, logged, replayed by the room)
    announced: Seen  # ephemeral events for everyone (the policy, a storage error, the runs)
    runs: RoomRuns | None = None  # the room's code runs, given a runner
    replies: list[ErrorEvent] = field(default_factory=list)  # told to the connection that asked
    answers: list[Event] = field(default_factory=list)  # other answers to it (a context preview, symbols)

    def texts(self) -> dict[str, str]:
        return document_texts(self.doc)

    def command(self, kind: CommandKind, **fields: Any) -> Command:
        fields.setdefault("author", "ada")
        fields.setdefault("user_id", 7)
        command = Command(kind=kind, session="s1", reply=self._told, **fields)
        self.pilot.submit(command)
        return command

    def _told(self, event: Event) -> None:
        (self.replies if isinstance(event, ErrorEvent) else self.answers).append(event)  # type: ignore[arg-type]

    def prompt(self, text: str, **fields: Any) -> str:
        """Ask for a turn; its id (given when the prompt is submitted)."""
        return self.command(CommandKind.PROMPT, text=text, **fields).turn

    def steer(self, text: str, **fields: Any) -> None:
        self.command(CommandKind.STEER, text=text, **fields)

    def stop(self) -> None:
        self.command(CommandKind.STOP)

    def revert(self, turn: str) -> None:
        self.command(CommandKind.REVERT, turn=turn)

    def restore(self, turn: str) -> None:
        self.command(CommandKind.RESTORE, turn=turn)

    async def started(self, where: Callable[[TurnStarted], bool] = lambda event: True) -> TurnStarted:
        return await self.published.until(TurnStarted, where)

    async def finished(self, turn: str) -> TurnFinished:
        return await self.published.until(TurnFinished, lambda event: event.turn == turn)

    async def ended(self, count: int) -> None:
        """Wait until ``count`` turns have ended."""
        await eventually(lambda: len(self.published.of(TurnFinished)) >= count, WAIT_S)

    async def delta_seen(self, turn: str, text: str) -> None:
        """Wait until the published deltas of ``turn`` hold ``text``."""
        await eventually(lambda: text in self.answer(turn), WAIT_S)

    def answer(self, turn: str) -> str:
        """What was published of ``turn``'s answer."""
        return "".join(delta.text for delta in self.published.of(TurnDelta, turn))

    def states(self, turn: str) -> list[str]:
        """The edit states published for ``turn``'s blocks, in order."""
        return [status.state for status in self.published.of(EditStatus, turn)]

    async def recorded(self, turn: str) -> None:
        """Wait until ``turn``'s end is written (records go in the background)."""
        await eventually(lambda: turn in self.store.turns and self.store.turns[turn].outcome is not None, WAIT_S)


@contextlib.asynccontextmanager
async def pilot_rig(
    files: Mapping[str, str],
    *,
    policy: AiPolicy = AiPolicy.OPEN,
    guard_mode: GuardMode = GuardMode.OFF,
    style: PromptStyle | None = None,
    store: MemoryRoomStore | None = None,
    runner: Runner | None = None,
    auto_test: bool = False,
    run_wait_s: float = 30.0,
    model_entry: ModelEntry | None = None,
    daily_budget_usd: Decimal | None = None,
    connect_entry: EntryConnector | None = None,
    style_for: Callable[[ModelEntry], PromptStyle] | None = None,
    steps: Steps | None = None,
) -> AsyncIterator[PilotRig]:
    """A started Pilot over a document made of ``files`` (or ``store``'s), shut down after;
    given a ``runner``, with the room's runs for the model (``auto_test``: its test rounds);
    ``model_entry``: the catalogue's entry of the model (its prices), ``daily_budget_usd``:
    ``SPARK_DAILY_BUDGET_USD``; ``connect_entry`` and ``style_for``: the catalogue's models
    (``store.entry``: the room's); ``steps``: the process's step window (``live.steps``; None: its own default)."""
    store = store or MemoryRoomStore(files=dict(files), policy=policy, guard_mode_now=guard_mode)
    state = await store.open()
    doc: Doc[Any] = Doc()
    doc.apply_update(state.document)
    model, published, announced = FakeModel(), Seen(), Seen()
    settings = LiveSettings(
        connect_model=model.connect, prompt_style=style or PromptStyle(), persist_retries=(0.0,),
        guard=GuardSettings(full_scan=full_scan_in_thread), runner=runner or NoRunner(), auto_test=auto_test,
        model_run_wait_s=run_wait_s, model_entry=model_entry, daily_budget_usd=daily_budget_usd,
        connect_entry=connect_entry, style_for=style_for,
    )
    if steps is not None:
        settings = dataclasses.replace(settings, steps=steps)
    def texts() -> dict[str, str]:
        return document_texts(doc)

    holder: list[Pilot] = []
    guard = RoomGuard(
        texts=texts, publish=published.add, announce=announced.add, read_mode=store.guard_mode,
        settings=settings.guard, busy=lambda: bool(holder) and holder[0].running_turn is not None,
    )
    runs = model_runs = None
    if runner is not None:
        runs = RoomRuns(store=store, settings=settings, texts=texts, announce=announced.add, publish=published.add)
        model_runs = ModelRuns(
            runs, texts=texts, high_findings=guard.high_findings, budget=settings.run_output_to_model,
        )
        runs.start()
    pilot = Pilot(
        document=lambda: doc, texts=texts, publish=published.add, announce=announced.add, store=store,
        guard=guard, settings=settings, runs=model_runs,
    )
    holder.append(pilot)
    pilot.start()
    try:
        yield PilotRig(
            pilot=pilot, store=store, model=model, doc=doc, published=published, announced=announced, runs=runs,
        )
    finally:
        await pilot.shutdown()
        if runs is not None:
            await runs.close()
        await guard.close()
