"""The room's document and what comes into it: the Yjs frames of pages, checked before
anything decodes them, and the rules a person's changes obey (the ones HTTP and the model
obey: paths, the file count, the size of all files together).

``LiveDocument`` holds the document (and which one it is: ``replacement``); ``YjsIntake``
takes a page's binary frames into it; ``malformed_yjs`` is the structural check a replica
runs too, before a frame crosses the bus.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pycrdt import (
    Doc,
    Map,
    Subscription,
    Text,
    TransactionEvent,
    UndoManager,
    YMessageType,
    YSyncMessageType,
    create_sync_message,
    handle_sync_message,
)

from spark_ide.editing import workspace_files
from spark_ide.editing.document import document_texts, sync_step2
from spark_ide.editing.limits import FileLimits, too_many_files
from spark_ide.editing.paths import BadPath, clean_path, path_conflict

from .events import DRIVER_ROLES, ErrorCode, ErrorEvent
from .transport import Connection
from .yjs_check import BadFrames, BadUpdate, check_awareness, check_sync

log = logging.getLogger(__name__)

BAD_BINARY = "the binary message is not a valid Yjs sync or awareness message"
BAD_FRAMES = BadFrames(log)  # refused binary frames of this process: a counter, a warning now and then
ASK_EVERY_S = 1.0  # a connection whose update was refused is asked for what it has at most this often
SIZE_CHECK = "size-check"  # the origin of a person's update applied where it may cross the size limit


def bad_binary(who: str = "", reason: str = "") -> ErrorEvent:
    """The answer to a refused binary frame; the refusal is counted and, rate-limited, logged
    (``BadFrames``): bad input from a client is no fault of ours and earns no traceback."""
    BAD_FRAMES.note(who, reason or BAD_BINARY)
    return ErrorEvent(ErrorCode.MALFORMED_BINARY, BAD_BINARY)


def malformed_yjs(message: bytes, who: str = "", state: Callable[[], bytes] | None = None) -> ErrorEvent | None:
    """The error for a binary frame that is neither a Yjs sync message nor an awareness
    message, or a sync message whose lengths do not fit in it (``yjs_check``: pycrdt would
    allocate what a crafted count claims), or an awareness message whose lengths do not
    fit, checked before anything decodes or relays it (room and replica alike). The room
    also gives its document's ``state`` vector: an update with a gap in a client's changes
    is refused too (``yjs_check.check_sync``)."""
    kind = message[0] if message else None
    if kind not in (YMessageType.SYNC, YMessageType.AWARENESS):
        return bad_binary(who, f"unknown message type {kind}")
    try:
        if kind == YMessageType.SYNC:
            check_sync(message, state=state)
        else:
            check_awareness(message)
    except BadUpdate as exc:
        return bad_binary(who, str(exc))
    return None


def text_bytes(files: Map[Text]) -> int:
    """The UTF-8 size of every file together (pycrdt counts a text's length in UTF-8 bytes)."""
    return sum(len(text) for text in files.values())


def enforce_file_rules(doc: Doc[Any], files: Map[Text], before: set[str], limits: FileLimits) -> ErrorEvent | None:
    """A collaborator's files obey the rules HTTP and the model obey: a new file with a bad
    path, or past the file limit, is removed again (every peer converges on that)."""
    added = set(files.keys()) - before
    if not added:
        return None
    refused: list[tuple[str, ErrorEvent]] = []
    kept = len(before)
    for path in sorted(added):
        try:
            ok = clean_path(path, max_length=limits.max_path_length) == path
        except BadPath as exc:
            refused.append((path, ErrorEvent(ErrorCode.BAD_PATH, f"bad path {path[:80]!r}: {exc}", ref=path)))
            continue
        if not ok:
            refused.append((path, ErrorEvent(ErrorCode.BAD_PATH, f"{path[:80]!r} is not in normal form (NFC)")))
        elif (conflict := path_conflict(path, before | (added - {path}))) is not None:
            refused.append((path, ErrorEvent(ErrorCode.PATH_CONFLICT, conflict, ref=path)))
        elif (too_many := too_many_files(limits.max_files, kept)) is not None:
            message = f"{too_many}; {path[:80]!r} was not kept"
            refused.append((path, ErrorEvent(ErrorCode.TOO_MANY_FILES, message, ref=path)))
        else:
            kept += 1
    if not refused:
        return None
    with doc.transaction(origin="rules"):
        for path, _ in refused:
            del files[path]
    return refused[0][1]


class LiveDocument:
    """The room's Yjs document: which one it is (``generation``: a replacement makes a new
    one), its whole state as a join's sync step 2 (encoded once until it changes: the pages
    of a reconnect storm come faster than a turn changes it), its files' texts (read once until
    it changes: a steer reads them before its re-prompt, 0.14 ms for a small workspace with a
    room's undo managers), and each change's update, handed to ``on_change``. Both are made
    again after any transaction that changed the document: a change shows in them once its
    transaction has ended (the room reads neither inside a transaction of its own)."""

    def __init__(self, on_change: Callable[[bytes], None]) -> None:
        self.doc: Doc[Any] = Doc()
        self.generation = 0
        self._on_change = on_change
        self._watch: Subscription | None = None
        self._state_message: bytes | None = None
        self._texts: dict[str, str] | None = None

    def load(self, state: bytes, generation: int) -> None:
        """The stored document becomes this one."""
        doc: Doc[Any] = Doc()
        doc.apply_update(state)
        workspace_files(doc)
        self.swap(doc, generation)

    def swap(self, fresh: Doc[Any], generation: int) -> Doc[Any]:
        """``fresh`` becomes the document; returns the one it replaces, unwatched: it goes once
        nothing holds it (pycrdt's observer holds the document it observes, a cycle through
        Rust that Python's collector cannot see)."""
        old = self.doc
        if self._watch is not None:
            old.unobserve(self._watch)
        self.doc = fresh
        self._watch = fresh.observe(self._changed)
        self._state_message = self._texts = None
        self.generation = generation
        return old

    def texts(self) -> dict[str, str]:
        """Every file's text (a dict of the caller's own)."""
        if self._texts is None:
            self._texts = document_texts(self.doc)
        return dict(self._texts)

    def state_message(self) -> bytes:
        """The whole document as a sync step 2."""
        if self._state_message is None:
            self._state_message = sync_step2(self.doc.get_update())
        return self._state_message

    def _changed(self, event: TransactionEvent) -> None:
        self._state_message = self._texts = None
        self._on_change(bytes(event.update))


class YjsIntake:
    """A page's binary frames into the document: checked, applied within the size limit,
    answered, awareness relayed (``relay``: to everyone but its sender)."""

    def __init__(
        self, document: LiveDocument, *, limits: FileLimits, relay: Callable[[bytes, Connection], None],
    ) -> None:
        self._document = document
        self._limits = limits
        self._relay = relay
        # The document's size (UTF-8 bytes of all files) when last measured, and an upper bound
        # of what it grew by since: the length of every update the document made (its text is
        # in them; ``grew``).
        self._measured: int | None = None
        self._grown = 0

    def grew(self, update: bytes) -> None:
        """The document made ``update`` (a person's, the model's, HTTP's, a merge's)."""
        self._grown += len(update)

    def receive(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """A binary frame of the room's document from ``conn``; the error to answer when it is
        refused."""
        doc = self._document.doc
        refused = malformed_yjs(message, conn.username, state=doc.get_state)
        if refused is not None:
            self._ask_for_missing(conn, message)
            return refused
        if message[0] == YMessageType.AWARENESS:
            self._relay(message, conn)
            return None
        writes = message[1] in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE)
        if writes and conn.role not in DRIVER_ROLES:
            if message[2:] in (b"\x02\x00\x00", b"\x00"):
                return None  # a viewer's step 2 with nothing new: nothing to refuse
            return ErrorEvent(ErrorCode.FORBIDDEN, f"a {conn.role} cannot edit the document")
        files = workspace_files(doc)
        before = set(files.keys()) if writes else set()
        try:
            if writes:
                reply, too_large = None, self._apply_within_size(message[1:], files)
            else:
                reply, too_large = handle_sync_message(message[1:], doc), None
        except (ValueError, RuntimeError) as exc:  # pycrdt could not decode or integrate it: the client's fault
            self._ask_for_missing(conn, message)
            return bad_binary(conn.username, str(exc))
        except Exception:  # anything else is a bug (ours or pycrdt's): a traceback, and the room goes on
            log.exception("a Yjs message from %s failed", conn.username)
            return bad_binary(conn.username, "failed while applying it")
        if too_large is not None:
            return too_large
        if reply is not None:
            conn.outbox.put_raw(reply)  # pycrdt's reply already starts with the SYNC byte
        return enforce_file_rules(doc, files, before, self._limits) if writes else None

    def _ask_for_missing(self, conn: Connection, message: bytes) -> None:
        """A driver's update was refused (it skipped one the room never got, say): send it the
        room's state vector (sync step 1), so its page answers with everything the room lacks
        and the two converge again. At most once a second per connection: a hostile socket's
        garbage is not answered with a stream of them."""
        writes = len(message) > 1 and message[0] == YMessageType.SYNC and message[1] in (
            YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE,
        )
        now = time.monotonic()
        if writes and conn.role in DRIVER_ROLES and now - conn.asked_at >= ASK_EVERY_S:
            conn.asked_at = now
            conn.outbox.put_raw(create_sync_message(self._document.doc))

    def _apply_within_size(self, message: bytes, files: Map[Text]) -> ErrorEvent | None:
        """Apply a person's update (sync step 2 or update, without the SYNC byte) unless it grows
        the files past ``limits.max_document_bytes`` together: such an update is undone at once
        in a transaction of its own, which reaches every peer, so all converge on the document
        as it was (the sender's copy too), as with ``enforce_file_rules``.

        Measuring (a length per file) on every keystroke would cost ~2.6 µs a file, so it is
        measured only near the limit: an update adds at most its own length of text, and
        since the last measurement the files grew by at most the length of the updates the
        document made (``grew``). Only an update that could cross the limit is applied under
        an undo manager."""
        doc, limit = self._document.doc, self._limits.max_document_bytes
        if limit is None:
            handle_sync_message(message, doc)
            return None
        if self._measured is None or self._measured + self._grown + len(message) > limit:
            self._measured, self._grown = text_bytes(files), 0
        if self._measured + self._grown + len(message) <= limit:
            handle_sync_message(message, doc)
            return None
        undo = UndoManager(scopes=[files], capture_timeout_millis=0)
        undo.include_origin(SIZE_CHECK)
        with doc.transaction(origin=SIZE_CHECK):
            handle_sync_message(message, doc)
        grown = text_bytes(files)
        if grown > limit:
            undo.undo()  # a transaction of the undo manager's own: the room sends it like any change
        self._measured, self._grown = text_bytes(files), 0
        if grown <= limit:
            return None
        return ErrorEvent(
            ErrorCode.TOO_LARGE,
            f"a workspace's files may hold {limit} bytes together; this edit would make them {grown}: it was undone",
        )
