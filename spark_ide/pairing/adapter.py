"""The Django side of the live engine: a room's storage in the database, its settings from
Django settings and the environment, and this process's rooms."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import os
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from asgiref.sync import SyncToAsync, async_to_sync
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DataError, IntegrityError, transaction
from django.db.models import Q

from spark_ide.editing.limits import FileLimits
from spark_ide.guard import GuardMode, Severity
from spark_ide.live.bus import send
from spark_ide.live.bus_messages import Message, RoomExpel, RoomModel, RoomRejoin, RoomSettings
from spark_ide.live.checkpoints import Checkpoint, Saved
from spark_ide.live.events import FinishReason, TurnDelta, TurnStatus, turn_event_from
from spark_ide.live.policy import AiPolicy
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.reopen import StoredPast
from spark_ide.live.room import Room
from spark_ide.live.rooms import Rooms
from spark_ide.live.spend import Spent
from spark_ide.live.steps import Steps
from spark_ide.live.store import (
    LiveSettings,
    RoomState,
    RunOutcome,
    RunRecord,
    StoredEvent,
    TurnOutcome,
    TurnRecord,
)
from spark_ide.live.transport import Place, Transport
from spark_ide.live.watchdog import GuardSettings
from spark_ide.ops.metrics import METER
from spark_ide.upstream import ModelClient, ProviderConfig, open_client
from spark_ide.upstream.catalogue import ModelEntry, provider_config
from spark_ide.upstream.dialects import EditStyle, default_edit_style, parse_edit_style
from spark_ide.workspaces import documents
from spark_ide.workspaces.catalogue import entry_for, environment_entry
from spark_ide.workspaces.services import auto_test_for, guard_mode_for

from . import checkpoints, past, ports, services, usage
from .cluster import cluster_from_settings
from .guard import celery_full_scan
from .models import Room as RoomRow
from .models import RoomEvent, Turn
from .owner_keys import owner_api_key, owner_keys_stamp
from .runs import CeleryRunner
from .write_thread import run_write

T = TypeVar("T")


class StaleOwner(Exception):
    """The room was opened again (by another process) since this store opened it."""


def unmarked_context() -> contextvars.Context:
    """A copy of the current context without asgiref's mark that a thread-sensitive call runs
    in it. A task inherits its creator's context; one created while that mark was set (by code
    that runs inside such a call's context: the rooms' writer started from it, a signal's
    callback) has every thread-sensitive call it makes refused ("would deadlock"). The rest of
    the context (a request's thread-sensitive executor, say) is kept."""
    context = contextvars.copy_context()
    context.run(SyncToAsync.deadlock_context.set, False)
    return context


class _Appends:
    """The document updates and turn-event rows of every room of this process, written
    together: each trip to the rooms' own database thread (``write_thread``: never behind the
    requests' and prompts' calls) takes every write waiting then, in one transaction (one
    fence for the rooms of the trip, one INSERT per table). A room sends an update only once
    it is saved, and with one trip per update every room waited behind every other's (60 rooms
    writing code: each update behind 59 others). A room's updates still go one at a time, in
    order (its pipeline awaits each); one room's refused write (a stale owner) fails that
    room alone.

    Before each trip the writer lets the rooms whose writes the last trip saved take their
    turn: their next update (what came while that trip was in flight) joins this trip, so a
    room's update waits for at most the trip in flight and its own (issued at once it would
    have waited for the next trip too, the one the other rooms' writes had started)."""

    def __init__(self) -> None:
        self._waiting: list[_Job] = []
        self._writer: asyncio.Task[None] | None = None
        self.trips = 0  # trips to the database thread so far (tests)

    async def append(self, store: DatabaseRoomStore, update: bytes) -> int:
        result = await self._submit(_Job(store, update=update))
        assert result is not None
        return result

    async def append_events(self, store: DatabaseRoomStore, events: Sequence[StoredEvent]) -> None:
        await self._submit(_Job(store, events=tuple(events)))

    async def _submit(self, job: _Job) -> int | None:
        self._waiting.append(job)
        if self._writer is None or self._writer.done():
            # It writes for every room: asgiref's mark of its starter's context is not its own.
            self._writer = asyncio.get_running_loop().create_task(self._write(), context=unmarked_context())
        return await job.saved  # a room that stops waiting does not stop the others' write

    async def _write(self) -> None:
        while True:
            await asyncio.sleep(0)  # the rooms the last trip answered add their next writes
            if not self._waiting:
                return
            batch, self._waiting = self._waiting, []
            self.trips += 1
            try:
                results = await run_write(functools.partial(_write_all, batch))
            except Exception as exc:  # the transaction itself failed: every write of it
                results = [exc] * len(batch)
            for job, result in zip(batch, results, strict=True):
                if job.saved.done():
                    continue
                if isinstance(result, Exception):
                    job.saved.set_exception(result)
                else:
                    job.saved.set_result(result)


@dataclasses.dataclass
class _Job:
    """One write of a trip: a document update (its row id is the answer) or turn-event rows."""

    store: DatabaseRoomStore
    update: bytes | None = None
    events: tuple[StoredEvent, ...] = ()
    saved: asyncio.Future[int | None] = dataclasses.field(
        default_factory=lambda: asyncio.get_running_loop().create_future(),
    )


def _write_all(jobs: list[_Job]) -> list[int | Exception | None]:
    """Every job's write, in one transaction. A job whose rows the database refuses (an
    ``IntegrityError``, ``DataError``) or whose room's owner is stale fails alone: the others
    are written again each in a savepoint of its own. Any other failure (a locked or lost
    database) is every job's: each room tries again."""
    try:
        with transaction.atomic():
            return _write_together(jobs)
    except (IntegrityError, DataError):
        pass
    results: list[int | Exception | None] = []
    with transaction.atomic():
        for job in jobs:
            try:
                with transaction.atomic():  # a savepoint: a refused write takes back its own rows only
                    results.append(job.store.write_now(job))
            except (IntegrityError, DataError, StaleOwner) as exc:
                results.append(exc)
    return results


def _write_together(jobs: list[_Job]) -> list[int | Exception | None]:
    """The jobs' writes with one fence for all their rooms and one INSERT per table; a write
    of a room opened again since its store opened it is refused (``StaleOwner``)."""
    rooms = {job.store.workspace for job in jobs}
    # The rows locked (PostgreSQL; SQLite's IMMEDIATE transaction holds the whole database) as
    # each write's fence did: an opening elsewhere waits for this transaction, or this sees it.
    epochs = dict(
        RoomRow.objects.select_for_update().filter(workspace_id__in=rooms).order_by("workspace_id")
        .values_list("workspace_id", "epoch")
    )
    results: list[int | Exception | None] = []
    updates: list[tuple[int, uuid.UUID, bytes]] = []
    events: list[RoomEvent] = []
    for job in jobs:
        store = job.store
        if epochs.get(store.workspace) != store.epoch:
            results.append(StaleOwner(f"room {store.workspace} was opened again since epoch {store.epoch}"))
        elif job.update is not None:
            updates.append((len(results), store.workspace, job.update))
            results.append(None)
        else:
            events += _event_rows(store.workspace, job.events)
            results.append(None)
    if updates:
        ids = documents.document_append_many([(workspace, update) for _, workspace, update in updates])
        for (index, _, _), row_id in zip(updates, ids, strict=True):
            results[index] = row_id
    RoomEvent.objects.bulk_create(events)
    return results


def _event_rows(workspace: uuid.UUID, events: Sequence[StoredEvent]) -> list[RoomEvent]:
    """The event log's rows of ``events`` (made in the database thread, off the loop)."""
    return [
        RoomEvent(
            workspace_id=workspace, seq=entry.seq, first_seq=entry.first_seq, turn=entry.event.turn,
            kind=entry.event.type, data=entry.event.payload(), at=entry.at,
            until=None if entry.until == entry.at else entry.until,  # a single event: null
        )
        for entry in events
    ]


# Per event loop: tests run several loops one after another, Daphne one.
_APPENDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Appends] = weakref.WeakKeyDictionary()


def appends() -> _Appends:
    loop = asyncio.get_running_loop()
    found = _APPENDS.get(loop)
    if found is None:
        found = _APPENDS[loop] = _Appends()
    return found


class DatabaseRoomStore:
    """``live.store.RoomStore`` over the database: every call runs off the event loop.

    Every write is fenced: it runs in a transaction that first confirms, by a conditional
    update of the room's row, that the epoch this store opened is still the room's. A process
    that lost the room (its lease expired while it stalled, say) cannot write after the next
    owner opened it; the next owner's opening waits for a write in progress (the row lock).
    """

    def __init__(self, workspace: uuid.UUID) -> None:
        self.workspace = workspace
        self.epoch = 0
        self.room: Room | None = None  # the room to hand HTTP requests to, once open
        # A workspace is made a student's copy with its enrollment, in one transaction
        # (``classroom.services.course_join``), never later: once a read found it is not one,
        # a course's rules (its AI policy, its watchdog mode) are not looked for again. A
        # streaming room reads them every 2 s (``POLICY_FRESH_S``, ``RULES_FRESH_S``).
        self._outside_courses = False

    def _fenced(self, write: Callable[[], T]) -> T:
        with transaction.atomic():
            return self._fenced_now(write)

    def _fenced_now(self, write: Callable[[], T]) -> T:
        """``write`` after the fence, in the transaction the caller holds."""
        if not RoomRow.objects.filter(workspace_id=self.workspace, epoch=self.epoch).update(epoch=self.epoch):
            raise StaleOwner(f"room {self.workspace} was opened again since epoch {self.epoch}")
        return write()

    async def _write(self, write: Callable[[], T]) -> T:
        result: T = await database_sync_to_async(self._fenced)(write)
        return result

    async def open(self) -> RoomState:
        state: RoomState = await database_sync_to_async(self._open)()
        if self.room is not None:
            documents.LIVE.register(self.workspace, self.room.files)
        return state

    def _open(self) -> RoomState:
        with transaction.atomic():
            row, _ = RoomRow.objects.select_for_update().get_or_create(workspace_id=self.workspace)
            row.epoch += 1
            row.save(update_fields=["epoch"])
            doc = documents.document_load(self.workspace)
            lost = Turn.objects.filter(session__workspace_id=self.workspace, status=TurnStatus.RUNNING)
            unfinished = tuple(lost.values_list("id", flat=True))
            lost.update(status=TurnStatus.FAILED, reason=FinishReason.OWNER_LOST, error="the server running it stopped")
            services.runs_lost(self.workspace)  # a room opens with no run going: any left running was lost
            generation, _ = documents.document_generation(self.workspace)
        self.epoch = row.epoch
        return RoomState(document=doc.get_update(), epoch=row.epoch, unfinished=unfinished, generation=generation)

    async def append_update(self, update: bytes) -> int:
        return await appends().append(self, update)

    def write_now(self, job: _Job) -> int | None:
        """``job``'s write (``_Appends``) in the transaction the caller holds, fenced."""
        if job.update is not None:
            update = job.update
            return self._fenced_now(lambda: documents.document_append(self.workspace, update))
        rows = _event_rows(self.workspace, job.events)
        self._fenced_now(lambda: RoomEvent.objects.bulk_create(rows))
        return None

    async def compact(self, state: bytes, *, through_id: int) -> None:
        await self._write(lambda: documents.document_compact(self.workspace, state, through_id=through_id))

    async def replace_document(self, state: bytes, *, generation: int, previous: bytes | None) -> None:
        await self._write(lambda: documents.document_replace(
            self.workspace, state, generation=generation, previous=previous,
        ))

    async def previous_document(self, generation: int) -> bytes | None:
        def read() -> bytes | None:
            stored, previous = documents.document_generation(self.workspace)
            return previous if generation == stored - 1 else None

        result: bytes | None = await database_sync_to_async(read)()
        return result

    async def write_files(self, texts: Mapping[str, str], current: Callable[[], bool] = lambda: True) -> bool:
        return await self._write(lambda: documents.files_materialize(self.workspace, dict(texts), current))

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        await appends().append_events(self, events)  # with the rooms' document updates, one trip

    async def events_after(self, seq: int, *, limit: int) -> list[StoredEvent]:
        def read() -> list[StoredEvent]:
            rows = RoomEvent.objects.filter(workspace_id=self.workspace, seq__gt=seq).order_by("seq")[:limit]
            return [_stored(row) for row in rows]

        events: list[StoredEvent] = await database_sync_to_async(read)()
        return events

    async def recent_events(self, *, turns: int, deltas_of: str | None) -> list[StoredEvent]:
        def read() -> list[StoredEvent]:
            mine = RoomEvent.objects.filter(workspace_id=self.workspace)
            recent = list(mine.filter(kind="turn.started").order_by("-seq").values_list("turn", flat=True)[:turns])
            rows = mine.filter(turn__in=recent).exclude(Q(kind=TurnDelta.type) & ~Q(turn=deltas_of or ""))
            return [_stored(row) for row in rows.order_by("seq")]

        events: list[StoredEvent] = await database_sync_to_async(read)()
        return events

    async def turn_started(self, record: TurnRecord) -> None:
        await self._write(lambda: services.turn_create(record))

    async def turn_finished(self, outcome: TurnOutcome) -> None:
        await self._write(lambda: services.turn_finish(outcome))

    async def turn_reverted(self, turn: str) -> None:
        await self._write(lambda: services.turn_mark_reverted(turn))

    async def turn_restored(self, turn: str) -> None:
        await self._write(lambda: services.turn_mark_restored(turn))

    async def checkpoint_save(self, checkpoint: Checkpoint, *, keep: int) -> Saved:
        saved: Saved = await self._write(lambda: checkpoints.checkpoint_save(self.workspace, checkpoint, keep=keep))
        return saved

    async def checkpoint_load(self, checkpoint: str) -> Checkpoint | None:
        found: Checkpoint | None = await database_sync_to_async(checkpoints.checkpoint_load)(self.workspace, checkpoint)
        return found

    async def stored_past(self, *, turns: int) -> StoredPast:
        found: StoredPast = await database_sync_to_async(past.stored_past)(self.workspace, turns=turns)
        return found

    async def run_started(self, record: RunRecord) -> None:
        await self._write(lambda: services.run_create(record))

    async def run_finished(self, outcome: RunOutcome) -> None:
        await self._write(lambda: services.run_finish(outcome))

    async def ai_policy(self) -> AiPolicy:
        """The course's AI rules for this workspace (issue 14), from the classroom app; a
        workspace outside a course, or a server without the classroom app, is open."""
        if self._outside_courses:
            return AiPolicy.OPEN
        data = await database_sync_to_async(ports.classroom().ai_policy)(self.workspace)
        if data is None:
            self._outside_courses = True
        return AiPolicy.from_mapping(data)

    async def spent(self, session: str, user_id: int | None) -> Spent:
        """The session's turns and what ``user_id``'s turns cost today (``usage.spent``)."""
        found: Spent = await database_sync_to_async(usage.spent)(session, user_id)
        return found

    async def guard_mode(self) -> GuardMode:
        """The watchdog's mode: the course's for a student's copy, else the workspace's own."""
        mode = await database_sync_to_async(guard_mode_for)(self.workspace, course=not self._outside_courses)
        return GuardMode.parse(mode)

    async def auto_test(self) -> bool | None:
        """The workspace's own choice of test rounds (``Workspace.auto_test``: the live page's
        switch, the API's PATCH); None: the server's ``SPARK_AUTO_TEST`` decides."""
        choice: bool | None = await database_sync_to_async(auto_test_for)(self.workspace)
        return choice

    async def model_entry(self) -> ModelEntry:
        """The catalogue's entry the workspace's turns run on (``workspaces.catalogue.entry_for``)."""
        entry: ModelEntry = await database_sync_to_async(entry_for)(self.workspace)
        return entry

    async def close(self) -> None:
        documents.LIVE.unregister(self.workspace, self.room.files if self.room is not None else None)


def _stored(row: RoomEvent) -> StoredEvent:
    until = row.at if row.until is None else row.until
    return StoredEvent(seq=row.seq, first_seq=row.first_seq, event=turn_event_from(row.data), at=row.at, until=until)


def entry_config(entry: ModelEntry, *, api_key: str | None = None, key_label: str = "") -> ProviderConfig:
    """How to reach the catalogue's ``entry``: with ``api_key`` when given (a person's own key,
    named ``key_label`` for a refusal), else the server's, from the environment variable the
    entry names (``key_env``)."""
    config = provider_config(entry, os.environ, api_key=api_key)
    return config if api_key is None else dataclasses.replace(config, key_label=key_label)


async def connect_entry(entry: ModelEntry, instructions: str, *, workspace: str | None = None) -> ModelClient:
    """A warm client for ``entry``, with the key of ``workspace``'s owner for its provider
    when they stored one (``owner_keys``), else the server's."""
    own = None if workspace is None else await database_sync_to_async(owner_api_key)(workspace, entry.provider)
    config = entry_config(entry) if own is None else entry_config(entry, api_key=own.secret, key_label=own.label)
    return await open_client(config, warmup_instructions=instructions)


async def connect_model(instructions: str, workspace: str | None = None) -> ModelClient:
    """A warm client for the environment's model (read now: tests and operators change it),
    with the key of ``workspace``'s owner when they stored one for it."""
    return await connect_entry(environment_entry(), instructions, workspace=workspace)


async def _connect_room_model(workspace: str, instructions: str) -> ModelClient:
    return await connect_model(instructions, workspace)  # the module's, looked up now (tests replace it)


async def _connect_room_entry(workspace: str, entry: ModelEntry, instructions: str) -> ModelClient:
    return await connect_entry(entry, instructions, workspace=workspace)  # the module's, looked up now


def prompt_style(entry: ModelEntry | None = None) -> PromptStyle:
    """How turns on ``entry`` are put to the model: its context budget, output ceiling and
    dialect, each the server's (SPARK_CONTEXT_TOKENS, SPARK_MAX_OUTPUT_TOKENS,
    SPARK_EDIT_STYLE) where the entry sets none; None: the environment's model. Small local
    models get plain requests (``whole-file``); others §2's (a bad dialect: ``ConfigError``)."""
    entry = entry or environment_entry()
    tokens = entry.context_tokens or settings.SPARK_CONTEXT_TOKENS
    ceiling = entry.max_output_tokens or settings.SPARK_MAX_OUTPUT_TOKENS
    raw = entry.edit_style.value if entry.edit_style is not None else default_edit_style(entry.provider, entry.model)
    style = parse_edit_style(raw, provider=entry.provider)
    if style is EditStyle.WHOLE_FILE:
        return PromptStyle.small_model(context_tokens=tokens, max_output_tokens=ceiling)
    return PromptStyle(
        edit_style=style, context_tokens=tokens, max_output_tokens=ceiling, max_rounds=settings.SPARK_MAX_ROUNDS,
    )


RUNNER = CeleryRunner()  # this process's code runs
STEPS = Steps(settings.SPARK_STEP_MS)  # how often this process's rooms apply the model's text


def live_settings() -> LiveSettings:
    return LiveSettings(
        connect_model=connect_model,
        prompt_style=prompt_style(),
        limits=FileLimits(
            max_files=settings.SPARK_MAX_WORKSPACE_FILES, max_file_bytes=settings.SPARK_MAX_FILE_BYTES,
            max_path_length=settings.SPARK_MAX_PATH_LENGTH, max_document_bytes=settings.SPARK_MAX_DOCUMENT_BYTES,
        ),
        replay_limit=settings.SPARK_REPLAY_LIMIT, replay_bytes=settings.SPARK_REPLAY_BYTES,
        replace_check_turns=settings.SPARK_REPLACE_CHECK_TURNS, replace_ratio=settings.SPARK_REPLACE_RATIO,
        replace_slack_bytes=settings.SPARK_REPLACE_SLACK_BYTES,
        meter=METER,
        runner=RUNNER,
        guard=GuardSettings(
            halt_at=Severity.parse(settings.SPARK_GUARD_HALT_SEVERITY),
            max_corrections=settings.SPARK_GUARD_MAX_CORRECTIONS,
            full_scan=celery_full_scan,
        ),
        auto_test=settings.SPARK_AUTO_TEST,
        run_output_to_model=settings.SPARK_RUN_OUTPUT_TO_MODEL,
        checkpoints_keep=settings.SPARK_CHECKPOINTS_KEEP,
        daily_budget_usd=settings.SPARK_DAILY_BUDGET_USD,
        edit_steer_idle_ms=settings.SPARK_EDIT_STEER_IDLE_MS,
        steps=STEPS,
        connect_entry=connect_entry,
        style_for=prompt_style,
    )


def make_room(workspace: str, on_closed: Callable[[Room], None], transport: Transport | None) -> Room:
    store = DatabaseRoomStore(uuid.UUID(workspace))
    # The room's model connection uses its owner's keys, and is opened again when they change;
    # it reaches the catalogue's entry the workspace runs on (``connect_entry``, docs/models.md).
    room_settings = dataclasses.replace(
        live_settings(), connect_model=functools.partial(_connect_room_model, workspace),
        connect_entry=functools.partial(_connect_room_entry, workspace),
        model_stamp=functools.partial(owner_keys_stamp, workspace),
    )
    room = Room(workspace, store=store, settings=room_settings, transport=transport, on_closed=on_closed)
    store.room = room
    return room


ROOMS = Rooms(make_room, cluster=cluster_from_settings())


def expel_everywhere(workspace_id: uuid.UUID, user_ids: list[int]) -> None:
    """Hang up on the users' live connections, on whichever process serves them (the owner
    tells the replicas). From a request thread."""
    for user_id in user_ids:
        _tell_owner(workspace_id, functools.partial(_expel, user_id=user_id), RoomExpel(user_id))


def _expel(place: Place, *, user_id: int) -> None:
    place.expel(user_id)


def model_changed_everywhere(workspace_id: uuid.UUID) -> None:
    """The workspace's model was switched: its room, on whichever process holds it, runs the
    next turn on it and warms its socket now. From a request thread."""
    _tell_owner(workspace_id, lambda place: place.model_changed(), RoomModel())


def rejoin_everywhere(workspace_id: uuid.UUID) -> None:
    """Have every live connection of the workspace reconnect (their roles changed), on
    whichever process serves them. From a request thread."""
    _tell_owner(workspace_id, lambda place: place.rejoin(), RoomRejoin())


def settings_changed_everywhere(workspace_id: uuid.UUID, changed: Mapping[str, object], *, by: str) -> None:
    """Tell every page of the workspace that ``by`` changed its settings (``workspace.settings``),
    on whichever process serves it. From a request thread."""
    _tell_owner(workspace_id, lambda place: place.settings_changed(changed, by), RoomSettings(dict(changed), by))


def _tell_owner(workspace_id: uuid.UUID, here: Callable[[Place], None], message: Message) -> None:
    """``here`` on this process's room or replica of the workspace; else ``message`` to the
    process owning its room, if any."""
    place = ROOMS.held(str(workspace_id))
    if place is not None:
        here(place)
        return
    cluster = ROOMS.cluster
    if cluster is None:
        return
    owner = async_to_sync(cluster.lease.holder)(str(workspace_id))
    if owner is not None:
        async_to_sync(send)(cluster.bus, owner, message)
