"""Whole-file changes to a workspace document and the y-protocols framing of its state.

Used by the room (HTTP writes reach the live document through it) and by the workspace
storage (a document nobody holds live is changed in place).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pycrdt import Doc, Text, YMessageType, YSyncMessageType

from spark_ide.editing.files import workspace_files
from spark_ide.editing.lines import utf8_length


def replace_file_if(doc: Doc[Any], path: str, text: str | None, expected: str | None, origin: str) -> bool:
    """``set_file_text`` only if ``path`` holds ``expected`` now (None: there is no such file);
    False, changing nothing, when it holds something else. Read and write are one step on the
    document's thread: a keystroke cannot land between them."""
    files = workspace_files(doc)
    current = str(files[path]) if path in files else None
    if current != expected:
        return False
    set_file_text(doc, path, text, origin)
    return True


def document_from_texts(texts: Mapping[str, str], origin: str) -> Doc[Any]:
    """A new document holding ``texts`` (path -> content), made in one transaction: a
    workspace's first document, or the one a room replaces its own by (new item ids)."""
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction(origin=origin):
        for path, text in texts.items():
            files[path] = Text(text)
    return doc


def move_file(doc: Doc[Any], path: str, new_path: str, origin: str) -> str | None:
    """Rename ``path`` to ``new_path`` in one transaction, with the text it holds at that moment
    (the keystroke just typed included); returns that text. None, changing nothing, when there
    is no ``path`` or ``new_path`` is taken. Pages see one change: the file went and came."""
    files = workspace_files(doc)
    if path not in files or new_path in files:
        return None
    text = str(files[path])
    with doc.transaction(origin=origin):
        del files[path]
        files[new_path] = Text(text)
    return text


def set_file_text(doc: Doc[Any], path: str, text: str | None, origin: str) -> None:
    """Replace (or create, or with None delete) one file of ``doc`` as one transaction.

    Only the differing middle is replaced, so cursors and anchors elsewhere in the file
    survive, and a person typing at the other end of it loses nothing.
    """
    files = workspace_files(doc)
    with doc.transaction(origin=origin):
        if text is None:
            if path in files:
                del files[path]
            return
        if path not in files:
            files[path] = Text(text)
            return
        current = files[path]
        old = str(current)
        if old == text:
            return
        start, limit = 0, min(len(old), len(text))
        while start < limit and old[start] == text[start]:
            start += 1
        end_old, end_new = len(old), len(text)
        while end_old > start and end_new > start and old[end_old - 1] == text[end_new - 1]:
            end_old -= 1
            end_new -= 1
        # Y.Text positions are UTF-8 bytes (docs/editing.md, "pycrdt detail"), not code points.
        at = utf8_length(old[:start])
        if end_old > start:
            del current[at : at + utf8_length(old[start:end_old])]
        if end_new > start:
            current.insert(at, text[start:end_new])


def sync_step2(update: bytes) -> bytes:
    """A y-protocols sync step 2 message carrying ``update`` (the whole state, to a newcomer)."""
    return bytes([YMessageType.SYNC, YSyncMessageType.SYNC_STEP2]) + _var_uint(len(update)) + update


def _var_uint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def document_texts(doc: Doc[Any]) -> dict[str, str]:
    """Every file's text: path -> content. Read in one transaction: each read on its own is a
    transaction of its own, and each transaction's end passes by every undo manager of the
    document (a room keeps one per kept turn)."""
    with doc.transaction():
        return {path: str(text) for path, text in workspace_files(doc).items()}
