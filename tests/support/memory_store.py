"""A room's storage in memory: ``live.store.RoomStore`` without Django, for tests of the live
engine (the Pilot, the room) that need no database.

It keeps what ``spark_ide.pairing.adapter.DatabaseRoomStore`` keeps, the way it keeps it: the
document as a state and the updates after it (compaction folds them in, a replacement starts a
new generation and keeps the one before), the materialised file texts, the turn-event log, the
turn and run records, and the course's AI policy with the tokens of the recorded turns counted
in it. A test can make any operation fail (``fail``), as a database that stopped answering.

This module imports no Django (tests/test_pure_cores.py checks it with the cores).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pycrdt import Doc

from spark_ide.editing.document import document_from_texts, document_texts
from spark_ide.guard import GuardMode
from spark_ide.live.checkpoints import Checkpoint, Saved, addressed, file_keys, plan_save, rebuilt
from spark_ide.live.events import CheckpointRestored, TurnDelta, TurnStarted, TurnStatus
from spark_ide.live.policy import AiPolicy
from spark_ide.live.reopen import PastRecord, StoredPast
from spark_ide.live.spend import Spent
from spark_ide.live.store import RoomState, RunOutcome, RunRecord, StoredEvent, TurnOutcome, TurnRecord
from spark_ide.live.usage import TurnUsage
from spark_ide.upstream.catalogue import ModelEntry


class StorageDown(OSError):
    """What a failing operation raises (``MemoryRoomStore.fail``)."""


@dataclass
class StoredTurn:
    """A turn's record: as started, as it ended (None while it runs), and whether it is reverted."""

    record: TurnRecord
    status: str = TurnStatus.RUNNING.value
    outcome: TurnOutcome | None = None
    reverted: bool = False


@dataclass
class StoredRun:
    record: RunRecord
    outcome: RunOutcome | None = None


@dataclass
class StoredCheckpoint:
    checkpoint: Checkpoint  # with its files and history emptied: those are the keys below
    number: int
    manifest: list[str]  # its buckets' blob keys
    history: list[str]  # its past turns' blob keys

    def file_keys(self, blobs: Mapping[str, str]) -> dict[str, str]:
        return file_keys(blobs[key] for key in self.manifest)


@dataclass
class MemoryRoomStore:
    """One workspace's room storage. ``files``: the workspace's files before its first room
    (its document is made from them, as a workspace's first document is); ``policy``: its
    course's AI rules, ``tokens_used`` being what was used before the turns recorded here;
    ``guard_mode``: the security watchdog's mode (off unless a test turns it on)."""

    files: dict[str, str] = field(default_factory=dict)
    policy: AiPolicy = AiPolicy.OPEN
    guard_mode_now: GuardMode = GuardMode.OFF
    auto_test_choice: bool | None = None  # the workspace's switch (None: the server's setting)
    entry: ModelEntry | None = None  # the catalogue entry the workspace runs on (None: no catalogue)
    epoch: int = 0
    generation: int = 0
    state: bytes | None = None  # the compacted document (None: not made from the files yet)
    previous: bytes | None = None  # the whole document of the generation before, once replaced
    updates: list[tuple[int, bytes]] = field(default_factory=list)  # (id, update) after ``state``
    events: list[StoredEvent] = field(default_factory=list)
    turns: dict[str, StoredTurn] = field(default_factory=dict)
    runs: dict[str, StoredRun] = field(default_factory=dict)
    # Checkpoints as the database keeps them: content-addressed, oldest first, and the blobs.
    checkpoints: list[StoredCheckpoint] = field(default_factory=list)
    blobs: dict[str, str] = field(default_factory=dict)
    blob_used: dict[str, int] = field(default_factory=dict)  # each blob's mark (live.checkpoints.SavePlan)
    failing: set[str] = field(default_factory=set)  # names of the operations that raise now
    calls: list[str] = field(default_factory=list)  # every operation asked of it, in order
    closed: bool = False
    _next_id: int = 0

    # -- what a test does with it --------------------------------------------------------------

    def fail(self, *operations: str) -> None:
        """From now on each of ``operations`` (method names: ``append_update``, ...) raises."""
        unknown = [name for name in operations if not callable(getattr(self, name, None))]
        if unknown:
            raise ValueError(f"no such storage operation: {unknown}")
        self.failing.update(operations)

    def heal(self) -> None:
        """Every operation answers again."""
        self.failing.clear()

    def document(self) -> Doc[Any]:
        """The document as stored: the state with every update after it applied."""
        doc: Doc[Any] = Doc()
        if self.state is not None:
            doc.apply_update(self.state)
        for _, update in self.updates:
            doc.apply_update(update)
        return doc

    def texts(self) -> dict[str, str]:
        """The stored document's files (what a room opening now would hold)."""
        return document_texts(self.document())

    def _check(self, operation: str) -> None:
        self.calls.append(operation)
        if operation in self.failing:
            raise StorageDown(f"storage is down ({operation})")

    # -- the document ----------------------------------------------------------------------------

    async def open(self) -> RoomState:
        self._check("open")
        if self.state is None:
            self.state = document_from_texts(self.files, "files").get_update()
        self.epoch += 1
        unfinished = tuple(turn for turn, stored in self.turns.items() if stored.status == TurnStatus.RUNNING.value)
        for turn in unfinished:  # what an earlier owner was running is lost, as the database records it
            self.turns[turn].status = TurnStatus.FAILED.value
        return RoomState(
            document=self.document().get_update(), epoch=self.epoch, unfinished=unfinished,
            generation=self.generation,
        )

    async def append_update(self, update: bytes) -> int:
        self._check("append_update")
        self._next_id += 1
        self.updates.append((self._next_id, update))
        return self._next_id

    async def compact(self, state: bytes, *, through_id: int) -> None:
        self._check("compact")
        self.state = state
        self.updates = [(update_id, update) for update_id, update in self.updates if update_id > through_id]

    async def replace_document(self, state: bytes, *, generation: int, previous: bytes | None) -> None:
        self._check("replace_document")
        self.state, self.generation, self.previous, self.updates = state, generation, previous, []

    async def previous_document(self, generation: int) -> bytes | None:
        self._check("previous_document")
        return self.previous if generation == self.generation - 1 else None

    async def write_files(self, texts: Mapping[str, str], current: Callable[[], bool] = lambda: True) -> bool:
        self._check("write_files")
        if not current():
            return False
        self.files = dict(texts)
        return True

    # -- the turn-event log ----------------------------------------------------------------------

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        self._check("append_events")
        self.events += events

    async def events_after(self, seq: int, *, limit: int) -> list[StoredEvent]:
        self._check("events_after")
        return [entry for entry in self.events if entry.seq > seq][:limit]

    async def recent_events(self, *, turns: int, deltas_of: str | None) -> list[StoredEvent]:
        self._check("recent_events")
        started = [entry.event.turn for entry in self.events if isinstance(entry.event, TurnStarted)]
        recent = set(started[-turns:]) if turns > 0 else set()
        return [
            entry for entry in self.events
            if entry.event.turn in recent and (not isinstance(entry.event, TurnDelta) or entry.event.turn == deltas_of)
        ]

    # -- turn and run records --------------------------------------------------------------------

    async def turn_started(self, record: TurnRecord) -> None:
        self._check("turn_started")
        self.turns[record.turn] = StoredTurn(record)

    async def turn_finished(self, outcome: TurnOutcome) -> None:
        self._check("turn_finished")
        stored = self.turns[outcome.turn]  # a turn is recorded as started first (``Records`` keeps the order)
        stored.status, stored.outcome = outcome.status, outcome

    async def turn_reverted(self, turn: str) -> None:
        self._check("turn_reverted")
        self.turns[turn].reverted = True

    async def turn_restored(self, turn: str) -> None:
        self._check("turn_restored")
        self.turns[turn].reverted = False

    async def stored_past(self, *, turns: int) -> StoredPast:
        """As the database answers it (``spark_ide.pairing.past``)."""
        self._check("stored_past")
        restored, after = None, list(self.turns)
        for entry in self.events:
            event = entry.event
            if isinstance(event, CheckpointRestored) and event.conversation:
                restored, after = event.checkpoint, []
            elif isinstance(event, TurnStarted) and restored is not None and event.turn in self.turns:
                after.append(event.turn)
        ended = [self._past(turn) for turn in after if self.turns[turn].outcome is not None]
        shown = [record for record in ended if record.status != TurnStatus.STEERED.value]
        newest = shown[-turns:] if turns > 0 else []
        known = {record.turn for record in newest}
        for record in reversed(newest):  # the turns their steering chains started from
            step = record
            while step.steered_from is not None and step.steered_from in self.turns and step.steered_from not in known:
                step = self._past(step.steered_from)
                known.add(step.turn)
        order = list(self.turns)
        chosen = sorted(known, key=order.index)
        return StoredPast(
            turns=tuple(self._past(turn) for turn in chosen), last=ended[-1] if ended else None, restored=restored,
        )

    def _past(self, turn: str) -> PastRecord:
        stored = self.turns[turn]
        outcome = stored.outcome
        return PastRecord(
            turn=turn, prompt=stored.record.prompt, status=stored.status,
            output=outcome.output if outcome is not None else "", ledger=outcome.ledger if outcome is not None else [],
            steered_from=stored.record.steered_from, reverted=stored.reverted,
        )

    async def run_started(self, record: RunRecord) -> None:
        self._check("run_started")
        self.runs[record.run] = StoredRun(record)

    async def run_finished(self, outcome: RunOutcome) -> None:
        self._check("run_finished")
        self.runs[outcome.run].outcome = outcome

    # -- checkpoints ----------------------------------------------------------------------------

    async def checkpoint_save(self, checkpoint: Checkpoint, *, keep: int) -> Saved:
        self._check("checkpoint_save")
        stored = addressed(checkpoint)
        used = {key: self.blob_used[key] for key in stored.blobs if key in self.blobs}
        number = self.checkpoints[-1].number + 1 if self.checkpoints else 1
        plan = plan_save(stored, number=number, keep=keep, used=used)
        self.blobs.update(plan.new)
        for key in [*plan.new, *plan.mark]:
            self.blob_used[key] = plan.number
        bare = dataclasses.replace(checkpoint, files={}, history=())
        self.checkpoints.append(StoredCheckpoint(bare, plan.number, stored.manifest, stored.history))
        self.checkpoints = [entry for entry in self.checkpoints if entry.number > plan.drop_through]
        for key in [key for key, mark in self.blob_used.items() if mark < plan.drop_blobs_below]:
            del self.blobs[key], self.blob_used[key]
        return plan.saved

    async def checkpoint_load(self, checkpoint: str) -> Checkpoint | None:
        self._check("checkpoint_load")
        for entry in self.checkpoints:
            if entry.checkpoint.id == checkpoint:
                files, history = rebuilt(entry.file_keys(self.blobs), entry.history, self.blobs)
                return dataclasses.replace(entry.checkpoint, files=files, history=history)
        return None

    # -- the rules -------------------------------------------------------------------------------

    async def ai_policy(self) -> AiPolicy:
        """``policy`` with the tokens of the turns recorded here added to those used before (the
        classroom sums the copy's turns' ``metrics["tokens"]`` the same way)."""
        self._check("ai_policy")
        if self.policy == AiPolicy.OPEN:
            return self.policy
        used = sum(_tokens(stored.outcome) for stored in self.turns.values())
        return dataclasses.replace(self.policy, tokens_used=self.policy.tokens_used + used)

    async def spent(self, session: str, user_id: int | None) -> Spent:
        """The usage of the turns recorded here in ``session``, and the cost of those ``user_id``
        asked for (every one of them counts as today's)."""
        self._check("spent")
        ended = [stored for stored in self.turns.values() if stored.outcome is not None]
        total, today = TurnUsage(), Decimal(0)
        for stored in ended:
            assert stored.outcome is not None
            if stored.record.session == session:
                total = total.plus(stored.outcome.usage)
            if stored.record.author_id == user_id:
                today += stored.outcome.usage.cost
        return Spent(total, today)

    async def guard_mode(self) -> GuardMode:
        self._check("guard_mode")
        return self.guard_mode_now

    async def auto_test(self) -> bool | None:
        self._check("auto_test")
        return self.auto_test_choice

    async def model_entry(self) -> ModelEntry | None:
        self._check("model_entry")
        return self.entry

    async def close(self) -> None:
        self._check("close")
        self.closed = True

    # -- what tests read -------------------------------------------------------------------------

    def outcome(self, turn: str) -> TurnOutcome:
        """How ``turn`` ended, as recorded (AssertionError while it is not)."""
        stored = self.turns.get(turn)
        assert stored is not None and stored.outcome is not None, f"turn {turn} has no recorded end"
        return stored.outcome


def _tokens(outcome: TurnOutcome | None) -> int:
    tokens = outcome.metrics.get("tokens") if outcome is not None else None
    return tokens if isinstance(tokens, int) else 0
