"""Replacing the room's document, and merging what pages still send of the replaced one
(docs/pairing.md, "Replacing the document").

Every turn rewrites lines in place, and Yjs keeps each replaced line as a deleted item
between live ones, which it can neither merge nor free: a room open for thousands of turns
held them all, every join was sent them and every insert walked them. A new document (new
item ids) holds the text alone. Pages adopt it (``document.replaced``); what they sent of the
old one meanwhile is merged into the new one as text (``Replacements.receive_stale``). The
kept turns revert as text from then on (``TurnEditor.detach``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from pycrdt import Doc, YMessageType, YSyncMessageType, handle_sync_message

from spark_ide.editing import workspace_files
from spark_ide.editing.document import document_from_texts, document_texts, set_file_text
from spark_ide.editing.limits import FileLimits
from spark_ide.editing.paths import beside_path
from spark_ide.editing.threeway import take_back

from .doc_rules import LiveDocument, bad_binary, enforce_file_rules, malformed_yjs, text_bytes
from .events import DRIVER_ROLES, ErrorCode, ErrorEvent
from .pipeline import Replacement
from .transport import Connection

log = logging.getLogger(__name__)

PREVIOUS_KEPT_S = 120.0  # a replaced document is kept in memory this long for what pages still send of it
# A page's edit of a replaced document is merged line by line (difflib, on the room's loop) in
# files up to this size; in a larger one it goes beside the file instead (a merge of 20,000
# equal lines took 50 s).
MERGE_MAX_CHARS = 64 * 1024


class PreviousDocuments(Protocol):
    """Where the replaced document is kept (``RoomStore.previous_document``)."""

    async def previous_document(self, generation: int) -> bytes | None: ...


def unmerged() -> ErrorEvent:
    return ErrorEvent(ErrorCode.DOCUMENT_REPLACED, "the document was replaced more than once since this page "
                      "loaded it: anything typed into the old copy while disconnected could not be merged")


class Replacements:
    """The room's document replaced by a new one rebuilt from its files' text, and the one it
    replaced kept a while for what pages still send of it.

    ``may_replace()`` says whether it may happen now (not while a turn writes, nor once the
    room closes); ``replaced(doc)`` hears of the new document before it is the room's (the
    Pilot's kept turns revert as text from then on)."""

    def __init__(
        self, document: LiveDocument, *, workspace: str, store: PreviousDocuments, limits: FileLimits,
        may_replace: Callable[[], bool], replaced: Callable[[Doc[Any]], None],
    ) -> None:
        self._document = document
        self._workspace = workspace
        self._store = store
        self._limits = limits
        self._may_replace = may_replace
        self._replaced = replaced
        self._loop = asyncio.get_running_loop()
        # The document before the last replacement, while pages may still send what they
        # typed into it (merged as text): (its generation, it); and when it is let go.
        self.previous: tuple[int, Doc[Any]] | None = None
        self._forget_previous: asyncio.TimerHandle | None = None

    # -- the pipeline's two steps (``Pipeline.put_replace``) ----------------------------------

    def prepare(self) -> Replacement | None:
        if not self._may_replace():
            return None
        texts = self._document.texts()
        fresh = document_from_texts(texts, "replace")
        return Replacement(
            generation=self._document.generation + 1, state=fresh.get_update(),
            previous=self._document.doc.get_update(), doc=fresh, texts=texts,
        )

    def take(self, replacement: Replacement) -> bool:
        """The new document, saved, becomes the room's (False: a turn began meanwhile). What
        changed in the old one while it was saved is carried into it as text."""
        if not self._may_replace():
            return False
        fresh = replacement.doc
        since = document_texts(self._document.doc)
        self._replaced(fresh)
        old = self._document.swap(fresh, replacement.generation)
        self._keep_previous(replacement.generation - 1, old)
        for path in sorted(set(since) | set(replacement.texts)):
            if since.get(path) != replacement.texts.get(path):
                set_file_text(fresh, path, since.get(path), "merge")
        log.info("replaced the document of workspace %s (generation %d): %d -> %d bytes", self._workspace,
                 replacement.generation, len(replacement.previous), len(replacement.state))
        return True

    # -- the replaced document ------------------------------------------------------------

    def _keep_previous(self, generation: int, doc: Doc[Any]) -> None:
        self.let_go()
        self.previous = (generation, doc)
        self._forget_previous = self._loop.call_later(PREVIOUS_KEPT_S, self.let_go)

    def let_go(self) -> None:
        if self._forget_previous is not None:
            self._forget_previous.cancel()
        self.previous = self._forget_previous = None

    def kept(self, doc: Doc[Any]) -> bool:
        """``doc`` is the replaced document still kept (not let go since it was read)."""
        return self.previous is not None and self.previous[1] is doc

    async def previous_for(self, generation: int) -> Doc[Any] | None:
        """The document of ``generation`` if it is the one before the room's: in memory for a
        while after the replacement, else from storage (None: older, or not kept)."""
        if self.previous is not None and self.previous[0] == generation:
            return self.previous[1]
        if generation != self._document.generation - 1:
            return None
        try:
            state = await self._store.previous_document(generation)
        except Exception:
            log.warning("could not read the replaced document of workspace %s", self._workspace, exc_info=True)
            return None
        if state is None or generation != self._document.generation - 1:
            return None
        doc: Doc[Any] = Doc()
        doc.apply_update(state)
        self._keep_previous(generation, doc)
        return doc

    # -- what pages still send of it ------------------------------------------------------

    def receive_stale(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """A frame of a page that still holds a replaced document: what it typed there is
        merged into the room's document as text (a line-based three-way merge; where it
        clashes with a change made since, the page's version of the file goes beside it).
        A step 1 of the old document needs no answer; its cursors point into the old one."""
        previous = self.previous[1] if self.previous is not None and self.previous[0] == conn.generation else None
        refused = malformed_yjs(message, conn.username, state=None if previous is None else previous.get_state)
        if refused is not None:
            return refused
        if message[0] == YMessageType.AWARENESS or message[1] == YSyncMessageType.SYNC_STEP1:
            return None
        if conn.role not in DRIVER_ROLES:
            return None  # a viewer's step 2 of the old document: a viewer writes nothing
        if previous is None:
            return unmerged()
        limit = self._limits.max_document_bytes
        if limit is not None and text_bytes(workspace_files(previous)) + len(message) > limit:
            return ErrorEvent(ErrorCode.TOO_LARGE, f"a workspace's files may hold {limit} bytes together")
        before = document_texts(previous)
        try:
            handle_sync_message(message[1:], previous)
        except (ValueError, RuntimeError) as exc:
            return bad_binary(conn.username, str(exc))
        after = document_texts(previous)
        return self.merge_texts(before, after)

    def merge_texts(self, base: dict[str, str], mine: dict[str, str]) -> ErrorEvent | None:
        """Carry the change ``base`` -> ``mine`` (a page's edits of a replaced document) into
        the room's document, under the same rules as a person's update."""
        doc = self._document.doc
        files = workspace_files(doc)
        existing = set(files.keys())
        theirs = self._document.texts()
        changes = _merged_changes(base, mine, theirs)
        if not changes:
            return None
        limit = self._limits.max_document_bytes
        grown = text_bytes(files) + sum(len((text or "").encode()) - len(theirs.get(path, "").encode())
                                        for path, text in changes.items())
        if limit is not None and grown > limit:
            return ErrorEvent(ErrorCode.TOO_LARGE, f"a workspace's files may hold {limit} bytes together; "
                              f"the edits made before the document was replaced would make them {grown}")
        with doc.transaction(origin="merge"):
            for path, text in changes.items():
                set_file_text(doc, path, text, "merge")
        return enforce_file_rules(doc, files, existing, self._limits)


def _merged_changes(base: dict[str, str], mine: dict[str, str], theirs: dict[str, str]) -> dict[str, str | None]:
    """The files to write so that the room's texts (``theirs``) carry the change ``base`` ->
    ``mine``: merged line by line, or the page's version beside the file where both changed
    the same lines (or the file is too large to merge on the room's loop)."""
    changes: dict[str, str | None] = {}
    for path in sorted(set(base) | set(mine)):
        was, now, current = base.get(path), mine.get(path), theirs.get(path)
        if was == now or now == current:
            continue
        if current == was:
            changes[path] = now
        elif now is None:
            continue  # deleted there, changed here since: the change stays
        elif (
            was is not None and current is not None and max(len(was), len(now), len(current)) <= MERGE_MAX_CHARS
            and (merged := take_back(now, was, current)) is not None
        ):
            changes[path] = merged
        else:
            changes[beside_path(path, "mine")] = now  # both changed the same lines: both kept
    return changes
