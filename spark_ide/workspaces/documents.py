"""The live document of a workspace (pycrdt, the server's Yjs peer) and its persistence.

Once a workspace has been opened live, its document is the truth: ``Workspace.ydoc`` holds
a compacted state and ``DocumentUpdate`` rows the updates since, appended before they are
sent to anyone (so a restart loses no edit a client saw acknowledged). ``File`` rows are the
materialised text, refreshed from the document, for listings, the HTTP API and export.

Changes made over HTTP while a process holds the document live are handed to that holder
(``LIVE``), which applies them on its event loop, or, when another process owns the room
(``spark_ide.pairing.cluster``), sent to that process; otherwise they are applied to the
stored document directly.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from django.db import transaction
from pycrdt import Doc

from spark_ide.editing.document import document_from_texts, move_file, replace_file_if, set_file_text

from . import ports
from .languages import language_for
from .models import DocumentUpdate, File, Workspace


class LiveHolder(Protocol):
    """What a process holding a document live offers to other threads."""

    def apply_file(self, path: str, text: str | None) -> None:
        """Apply (path, text or None to delete) on the holder's loop; returns at once."""

    def read_files(self) -> dict[str, str]:
        """Every file's current text, read on the holder's loop."""

    def replace_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        """Apply (path, text or None) on the holder's loop only if the file holds ``expected``
        (None: no such file) there and then; waits for the answer."""

    def rename_file(self, path: str, new_path: str) -> str | None:
        """Move ``path`` to ``new_path`` with its live text, on the holder's loop, as one change;
        waits for that text (None: no ``path`` there, or ``new_path`` taken)."""

    async def store_events(self) -> None:
        """Store every turn event the room has sent (they are written in batches); returns
        once they are in the database. Awaited from an async view, never from the database
        thread (the holder's write needs it)."""


class LiveDocuments:
    """Which workspace documents this process holds live, and how to reach them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[uuid.UUID, LiveHolder] = {}
        # The holder in another process, if any (set when rooms are shared by processes).
        self.elsewhere: Callable[[uuid.UUID], LiveHolder | None] = lambda workspace_id: None

    def register(self, workspace_id: uuid.UUID, holder: LiveHolder) -> None:
        with self._lock:
            self._holders[workspace_id] = holder

    def unregister(self, workspace_id: uuid.UUID, holder: LiveHolder | None) -> None:
        """Forget ``holder`` (only that one: a newer holder may have taken its place)."""
        with self._lock:
            if self._holders.get(workspace_id) is holder:
                del self._holders[workspace_id]

    def holder(self, workspace_id: uuid.UUID) -> LiveHolder | None:
        with self._lock:
            holder = self._holders.get(workspace_id)
        return holder if holder is not None else self.elsewhere(workspace_id)


LIVE = LiveDocuments()


def document_load(workspace_id: uuid.UUID) -> Doc[Any]:
    """The workspace's document: stored state plus updates, or built from its files."""
    with transaction.atomic():
        workspace = Workspace.objects.select_for_update().defer(None).get(pk=workspace_id)
        through = 0  # the id of the last stored update the document holds
        if workspace.ydoc is None:
            doc = document_from_texts(dict(workspace.files.values_list("path", "text")), "load")
            workspace.ydoc = doc.get_update()
            workspace.save(update_fields=["ydoc"])
        else:
            doc = Doc()
            doc.apply_update(bytes(workspace.ydoc))
            for pk, data in workspace.doc_updates.order_by("id").values_list("id", "data"):
                doc.apply_update(bytes(data))
                through = pk
        ports.history().begin(workspace_id, doc, through=through)  # replay: the document's history starts
    return doc


def document_append(workspace_id: uuid.UUID, update: bytes) -> int:
    """Persist one update; returns its row id (compaction deletes up to an id)."""
    return document_append_many([(workspace_id, update)])[0]


def document_append_many(updates: Sequence[tuple[uuid.UUID, bytes]]) -> list[int]:
    """Persist updates (of one or several workspaces) in one INSERT, in order; their row ids."""
    rows = DocumentUpdate.objects.bulk_create(
        [DocumentUpdate(workspace_id=workspace_id, data=update) for workspace_id, update in updates]
    )
    return [int(row.pk) for row in rows]


def document_compact(workspace_id: uuid.UUID, state: bytes, *, through_id: int, **fields: Any) -> None:
    """Replace the stored state by ``state``, which includes every update up to ``through_id``;
    the updates move into the document's history (replay), not away. ``fields``: more of the
    workspace's row to write with it."""
    with transaction.atomic():
        ports.history().keep(workspace_id, through_id=through_id, state=state)
        Workspace.objects.filter(pk=workspace_id).update(ydoc=state, **fields)
        DocumentUpdate.objects.filter(workspace_id=workspace_id, id__lte=through_id).delete()


def document_replace(workspace_id: uuid.UUID, state: bytes, *, generation: int, previous: bytes | None) -> None:
    """The room replaced its document by ``state``, a new one (fresh item ids) of
    ``generation``; ``previous`` is the whole document it replaced. In the history the new
    document is one update marked ``fresh``: a replay starts over from it."""
    with transaction.atomic():
        row = DocumentUpdate.objects.create(workspace_id=workspace_id, data=state, fresh=True)
        document_compact(workspace_id, state, through_id=row.pk, generation=generation, previous_ydoc=previous)


def document_generation(workspace_id: uuid.UUID) -> tuple[int, bytes | None]:
    """The stored document's generation and the whole document of the generation before
    (None: there was none, or it is no longer kept)."""
    generation, previous = Workspace.objects.filter(pk=workspace_id).values_list("generation", "previous_ydoc").get()
    return int(generation), None if previous is None else bytes(previous)


class _Older(Exception):
    """The texts being written are older than a row written meanwhile: nothing is kept."""


def files_materialize(
    workspace_id: uuid.UUID, texts: dict[str, str], current: Callable[[], bool] = lambda: True
) -> bool:
    """Bring the ``File`` rows in line with the document's texts. ``current()`` is asked with
    the rows written and locked, before they are kept: False (a change over HTTP wrote its row
    after ``texts`` were read) keeps nothing and returns False."""
    try:
        with transaction.atomic():
            _materialize(workspace_id, texts)
            if not current():
                raise _Older
    except _Older:
        return False
    return True


def _materialize(workspace_id: uuid.UUID, texts: dict[str, str]) -> None:
    rows = {f.path: f for f in File.objects.select_for_update().filter(workspace_id=workspace_id)}
    for path, text in texts.items():
        row = rows.pop(path, None)
        size = len(text.encode())
        if row is None:
            File.objects.create(workspace_id=workspace_id, path=path, text=text, size=size, language=language_for(path))
        elif row.text != text:
            row.text, row.size = text, size
            row.save(update_fields=["text", "size", "updated_at"])
    if rows:
        File.objects.filter(pk__in=[row.pk for row in rows.values()]).delete()


def document_file_changed(workspace: Workspace, path: str, text: str | None) -> None:
    """Carry a change made to the ``File`` rows (HTTP, tree) into the document."""
    holder = LIVE.holder(workspace.id)
    if holder is not None:
        holder.apply_file(path, text)
        return

    def change(doc: Doc[Any]) -> bool:
        set_file_text(doc, path, text, "http")
        return True

    _change_stored(workspace.id, change)  # never opened live: the document will be built from the files


def document_file_replace_if(workspace: Workspace, path: str, text: str | None, expected: str | None) -> bool | None:
    """``document_file_changed`` only if the document's ``path`` holds ``expected`` (None: no
    such file) at the moment of the write; False when it holds something else. None: the
    workspace was never opened live, and its ``File`` rows are the truth to compare with."""
    holder = LIVE.holder(workspace.id)
    if holder is not None:
        return holder.replace_file_if(path, text, expected)
    return _change_stored(workspace.id, lambda doc: replace_file_if(doc, path, text, expected, "http"))


class NotLive:
    """``document_file_rename``'s answer for a workspace never opened live: the rows are the truth."""


NOT_LIVE = NotLive()


def document_file_rename(workspace: Workspace, path: str, new_path: str) -> str | NotLive | None:
    """Rename a file in the document as one change, with the text the document holds at that
    moment (the ``File`` row may lag a keystroke behind a live one); returns that text. None:
    the document has no ``path`` or already has ``new_path``."""
    holder = LIVE.holder(workspace.id)
    if holder is not None:
        return holder.rename_file(path, new_path)
    moved: list[str | None] = [None]

    def change(doc: Doc[Any]) -> bool:
        moved[0] = move_file(doc, path, new_path, "http")
        return moved[0] is not None

    if _change_stored(workspace.id, change) is None:
        return NOT_LIVE
    return moved[0]


def _change_stored(workspace_id: uuid.UUID, change: Callable[[Doc[Any]], bool]) -> bool | None:
    """``change`` (True: it changed the document) on the stored document of a workspace no
    process holds live, its update appended; None when the workspace was never opened live."""
    if not Workspace.objects.filter(pk=workspace_id, ydoc__isnull=False).exists():
        return None
    doc = document_load(workspace_id)
    before = doc.get_state()
    if not change(doc):
        return False
    document_append(workspace_id, doc.get_update(before))
    return True


def live_texts(workspace_id: uuid.UUID) -> dict[str, str] | None:
    """The files of the live document when this process holds it, else None (read the rows)."""
    holder = LIVE.holder(workspace_id)
    return None if holder is None else holder.read_files()
