"""Checkpoints: the workspace's files and the model's conversation at a moment, to go back to.

The Pilot records one before every turn it starts (not before a steer: a steering chain is
one step of the conversation, and the checkpoint before its first turn covers it), one on
request (``checkpoint.create``, named) and one before every restore (so a restore is undone
by restoring that one). Restoring (``checkpoint.restore``) puts back the files (every file in
one document transaction: the files made since go), the conversation (the next request
carries the past turns the checkpoint holds, and nothing of the turns after it), or both.
A restore waits for no turn: while one runs it is refused (stop the turn first).

Storage is content-addressed (``addressed``): every text is a blob kept once per workspace
under the sha256 of its UTF-8: each file's, each past turn's, and the checkpoint's buckets
(about sqrt(n) small JSON maps path -> file key, a path's bucket fixed by its name). A
checkpoint row lists its buckets' and past turns' keys. After one file of 200 changed, a
checkpoint stores that file, one bucket of about 14 entries and a row of about 14 keys.
The store keeps the newest ``keep`` checkpoints and drops the blobs none of them uses without
scanning them (``plan_save``). Both stores (the database's, the memory one of the tests)
follow these functions; the live engine hands them whole ``Checkpoint`` values.

The conversation is the checkpoint's own copy of the past turns (``TurnMaker.history``), not
a pointer into the turn records: a restore gives back exactly what the request carried then,
and a room that reopens after a restore of one starts from it (``live.reopen``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
import uuid
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from pycrdt import Doc

from spark_ide.editing.document import set_file_text
from spark_ide.editing.files import workspace_files

from .events import CheckpointCreated, CheckpointRestored, ErrorCode, ErrorEvent, Event, TurnEvent
from .prompting import PastTurn
from .records import Records
from .turns import Command

log = logging.getLogger(__name__)

KEEP = 200  # SPARK_CHECKPOINTS_KEEP: checkpoints kept per workspace, the newest
PROMPT_EXCERPT = 200  # characters of the turn's prompt a checkpoint keeps, for the history panel
ORIGIN = "checkpoint"  # the document transaction of a restore


class CheckpointKind(StrEnum):
    TURN = "turn"  # before a turn started
    NAMED = "named"  # asked for (``checkpoint.create``)
    RESTORE = "restore"  # before a restore: restoring it undoes the restore


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The files and the conversation at a moment. ``turn``: the turn it was taken before (""
    for the others); ``prompt``: the start of that turn's prompt; ``at``: ms since the epoch."""

    id: str
    kind: CheckpointKind
    files: Mapping[str, str]
    history: tuple[PastTurn, ...]
    ledger: str = ""  # what the turn before it did to the files, as the next request tells the model
    turn: str = ""
    prompt: str = ""
    name: str = ""
    author: str = ""
    author_id: int | None = None
    at: int = 0


@dataclass(frozen=True, slots=True)
class Addressed:
    """A checkpoint as stored. ``manifest``: the keys of its buckets (each a blob: the JSON map
    path -> file key of the files whose path falls in it); ``history``: its past turns' keys;
    ``blobs``: every text it refers to by key (files, buckets, past turns; a past turn's text
    is made when it is read: ``Blobs``)."""

    manifest: list[str]
    history: list[str]
    blobs: Blobs


class Blobs(Mapping[str, str]):
    """Key -> text of a checkpoint's blobs. The past turns' texts (their JSON) are made only
    when read: a store reads the texts of the blobs it does not hold yet (``plan_save``), and
    it holds every past turn but the newest (each checkpoint carries up to the last 20 turns,
    each maybe megabytes of answer)."""

    __slots__ = ("_past", "_texts")

    def __init__(self, texts: dict[str, str], past: dict[str, PastTurn]) -> None:
        self._texts = texts
        self._past = past

    def __getitem__(self, key: str) -> str:
        text = self._texts.get(key)
        if text is not None:
            return text
        return _past_text(self._past[key])

    def __iter__(self) -> Iterator[str]:
        yield from self._texts
        yield from (key for key in self._past if key not in self._texts)

    def __len__(self) -> int:
        return len(self._texts) + sum(key not in self._texts for key in self._past)

    def __contains__(self, key: object) -> bool:
        return key in self._texts or key in self._past


@dataclass(frozen=True, slots=True)
class Saved:
    """What storing a checkpoint cost: the blobs (and their UTF-8 bytes) that were new."""

    blobs: int
    bytes: int


def new_checkpoint_id() -> str:
    return "cp" + uuid.uuid4().hex[:14]


def blob_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _past_text(turn: PastTurn) -> str:
    return _json({"prompt": turn.prompt, "output": turn.output})


# A past turn's key, kept while the turn is (the TurnMaker's history, the conversations of
# the checkpoints not yet written): the next checkpoint carries the same turns again, and its
# key would be their whole text encoded and hashed again, turn after turn.
_past_keys: weakref.WeakKeyDictionary[PastTurn, str] = weakref.WeakKeyDictionary()
_past_keys_lock = threading.Lock()  # a store addresses on its database thread


def past_key(turn: PastTurn) -> str:
    """The blob key of ``turn`` (``blob_key`` of its JSON), made once per turn."""
    with _past_keys_lock:
        key = _past_keys.get(turn)
    if key is None:
        key = blob_key(_past_text(turn))
        with _past_keys_lock:
            _past_keys[turn] = key
    return key


def _bucket_count(files: int) -> int:
    """About the square root of the number of files: a change rewrites one bucket of about that
    many entries, and the row lists about that many buckets."""
    return max(1, math.isqrt(files))


def addressed(checkpoint: Checkpoint) -> Addressed:
    """``checkpoint`` content-addressed (``Addressed``). A path's bucket depends on the path and
    the number of buckets only, so a checkpoint after one file changed shares every bucket but
    one with the one before."""
    blobs: dict[str, str] = {}
    count = _bucket_count(len(checkpoint.files))
    buckets: list[dict[str, str]] = [{} for _ in range(count)]
    for path, text in checkpoint.files.items():
        key = blob_key(text)
        blobs[key] = text
        buckets[zlib.crc32(path.encode()) % count][path] = key
    manifest = []
    for bucket in buckets:
        if bucket:
            text = _json(bucket)
            manifest.append(key := blob_key(text))
            blobs[key] = text
    history = [past_key(turn) for turn in checkpoint.history]
    return Addressed(
        manifest=manifest, history=history, blobs=Blobs(blobs, dict(zip(history, checkpoint.history, strict=True))),
    )


def file_keys(buckets: Iterable[str]) -> dict[str, str]:
    """Path -> file key, from the texts of a checkpoint's buckets."""
    keys: dict[str, str] = {}
    for text in buckets:
        keys.update(json.loads(text))
    return keys


def rebuilt(files: Mapping[str, str], history: Iterable[str], blobs: Mapping[str, str]) -> tuple[
    dict[str, str], tuple[PastTurn, ...]
]:
    """The texts and past turns of a stored checkpoint: ``files`` path -> key (``file_keys``),
    ``history`` its past turns' keys, ``blobs`` the texts of those keys."""
    turns = []
    for key in history:
        data = json.loads(blobs[key])
        turns.append(PastTurn(prompt=str(data["prompt"]), output=str(data["output"])))
    return {path: blobs[key] for path, key in files.items()}, tuple(turns)


@dataclass(frozen=True, slots=True)
class SavePlan:
    """What storing checkpoint number ``number`` of a workspace does (both stores follow it).

    Each blob notes ``used``: the number of a checkpoint that uses it, kept at most ``slack``
    behind the newest that does (a save marks the blobs it uses whose mark is further behind:
    each unchanged blob is rewritten once every ``slack`` checkpoints, not at every one).
    Pruning then needs no scan: the checkpoints numbered ``drop_through`` and below go, and
    the blobs whose ``used`` is below ``drop_blobs_below``: no kept checkpoint uses those (one
    that did would have marked it at or above its own number minus ``slack``). An unused blob
    may stay up to ``slack`` checkpoints longer."""

    number: int
    new: dict[str, str]  # key -> text, to insert with ``used`` = ``number``
    mark: list[str]  # keys held already whose ``used`` becomes ``number``
    drop_through: int
    drop_blobs_below: int

    @property
    def saved(self) -> Saved:
        return Saved(blobs=len(self.new), bytes=sum(len(text.encode()) for text in self.new.values()))


def plan_save(stored: Addressed, *, number: int, keep: int, used: Mapping[str, int]) -> SavePlan:
    """The plan for saving ``stored`` as checkpoint ``number`` (one more than the workspace's
    newest), keeping the newest ``keep``; ``used``: the marks of its blobs the store holds."""
    slack = max(1, keep // 2)
    drop_through = number - keep
    return SavePlan(
        number=number, new={key: stored.blobs[key] for key in stored.blobs if key not in used},
        mark=[key for key, mark in used.items() if mark < number - slack],
        drop_through=drop_through, drop_blobs_below=drop_through + 1 - slack,
    )


class CheckpointStore(Protocol):
    """Where a room's checkpoints are kept (``RoomStore``)."""

    async def checkpoint_save(self, checkpoint: Checkpoint, *, keep: int) -> Saved:
        """Store ``checkpoint``; then keep only the newest ``keep`` and the blobs they use."""

    async def checkpoint_load(self, checkpoint: str) -> Checkpoint | None:
        """The checkpoint of this workspace with that id; None when there is none (another
        workspace's is none)."""


def restore_files(doc: Doc[Any], texts: Mapping[str, str]) -> None:
    """Every file of ``doc`` back to ``texts`` in one transaction: changed files take the text
    (only their differing middle is rewritten), missing ones come back, others go. Pages see
    one change."""
    files = workspace_files(doc)
    with doc.transaction(origin=ORIGIN):
        for path in set(files.keys()) - set(texts):
            del files[path]
        for path, text in texts.items():
            set_file_text(doc, path, text, ORIGIN)


@dataclass
class Conversation:
    """What the next request carries of the past: the Pilot's ``TurnMaker`` keeps it."""

    history: tuple[PastTurn, ...]
    ledger: str


@dataclass
class Checkpoints:
    """The Pilot's checkpoints. ``store``: where they go; ``records``: the Pilot's ordered
    writes (a turn's checkpoint is written before its record); ``document`` and ``texts``: the
    room's document and files now; ``conversation``/``set_conversation``: the TurnMaker's
    history; ``announce``: an event for everyone now; ``publish``: one kept in the event log
    (a restore: the replay shows it); ``files_restored``: called after the files were put
    back; ``keep``: SPARK_CHECKPOINTS_KEEP."""

    store: CheckpointStore
    records: Records
    document: Callable[[], Doc[Any]]
    texts: Callable[[], dict[str, str]]
    conversation: Callable[[], Conversation]
    set_conversation: Callable[[Conversation], None]
    announce: Callable[[Event], None]
    publish: Callable[[TurnEvent], None]
    files_restored: Callable[[], None] = lambda: None  # after a code restore (the turns' reverts)
    keep: int = KEEP

    def _make(self, kind: CheckpointKind, files: Mapping[str, str], command: Command, **rest: Any) -> Checkpoint:
        now = self.conversation()
        return Checkpoint(
            id=new_checkpoint_id(), kind=kind, files=dict(files), history=now.history, ledger=now.ledger,
            author=command.author, author_id=command.user_id, at=round(time.time() * 1000), **rest,
        )

    def before_turn(self, turn: str, command: Command, files: Mapping[str, str]) -> None:
        """A turn starts with ``files`` (what its request shows): recorded in the background,
        in order with the turn's records."""
        checkpoint = self._make(
            CheckpointKind.TURN, files, command, turn=turn, prompt=command.text[:PROMPT_EXCERPT],
        )
        self.records.put("checkpoint", lambda: self._save(checkpoint))

    async def _save(self, checkpoint: Checkpoint) -> None:
        await self.store.checkpoint_save(checkpoint, keep=self.keep)

    async def create(self, command: Command) -> None:
        """A named checkpoint of now (``checkpoint.create``)."""
        checkpoint = self._make(CheckpointKind.NAMED, self.texts(), command, name=command.text)
        if not await self._saved(command, checkpoint):
            return
        self.announce(CheckpointCreated(checkpoint=checkpoint.id, name=checkpoint.name, by=command.author))

    async def restore(self, command: Command, *, busy: bool) -> None:
        """Restore ``command.checkpoint``'s code and/or conversation (``command.code``,
        ``command.conversation``). Refused, changing nothing, while a turn runs (``busy``), for
        an id that is not this workspace's, or when the checkpoint of now cannot be stored."""
        wanted = command.checkpoint
        if busy:
            return self._refuse(command, ErrorCode.CHECKPOINT_BUSY, "a turn is running: stop it, then restore")
        await self.records.drain()  # the checkpoint of a turn that just started is stored
        try:
            checkpoint = await self.store.checkpoint_load(wanted)
        except Exception:
            log.exception("could not read checkpoint %s", wanted)
            return self._refuse(command, ErrorCode.STORAGE_FAILED, "the checkpoint could not be read; nothing changed")
        if checkpoint is None:
            return self._refuse(
                command, ErrorCode.NO_SUCH_CHECKPOINT, f"there is no checkpoint {wanted[:64]!r} in this workspace",
            )
        undo = self._make(CheckpointKind.RESTORE, self.texts(), command, name=f"before restoring {_label(checkpoint)}")
        if not await self._saved(command, undo):
            return
        if command.code:
            restore_files(self.document(), checkpoint.files)
            self.files_restored()
        if command.conversation:
            self.set_conversation(Conversation(history=checkpoint.history, ledger=checkpoint.ledger))
        self.publish(CheckpointRestored(
            turn=checkpoint.turn, checkpoint=checkpoint.id, code=command.code, conversation=command.conversation,
            by=command.author, undo=undo.id,
        ))
        return None

    async def _saved(self, command: Command, checkpoint: Checkpoint) -> bool:
        try:
            await self._save(checkpoint)
        except Exception:
            log.exception("could not store checkpoint %s", checkpoint.id)
            self._refuse(command, ErrorCode.STORAGE_FAILED, "the checkpoint could not be stored; nothing changed")
            return False
        return True

    def _refuse(self, command: Command, code: ErrorCode, message: str) -> None:
        if command.reply is not None:
            command.reply(ErrorEvent(code, message, ref=command.checkpoint or None))


def _label(checkpoint: Checkpoint) -> str:
    if checkpoint.name:
        return f"'{checkpoint.name}'"
    if checkpoint.prompt:
        return f"the turn '{checkpoint.prompt[:40]}'"
    return checkpoint.id
