"""The room's files as other threads reach them: HTTP requests (``workspaces.documents.LiveHolder``)
and the owner's desk for other processes' requests (``live.owner``).

The document is the room loop's alone: a request thread hands its change to the loop and,
when it needs an answer, waits for it there (``READ_TIMEOUT_S`` at most). The plain methods
(``set_file``, ``set_file_if``, ``move_file``) are for callers already on the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from spark_ide.editing.document import move_file, replace_file_if, set_file_text

from .doc_rules import LiveDocument

T = TypeVar("T")

READ_TIMEOUT_S = 5.0
ORIGIN = "http"  # the transactions' origin: a change that came over HTTP


class RoomFiles:
    """``document``: the room's (whichever Yjs document it holds now); ``store_log``: stores
    every turn event the room has sent. Made on the room's loop."""

    def __init__(self, document: LiveDocument, *, store_log: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._document = document
        self._store_log = store_log
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        # Changes over HTTP, counted when they begin (a request thread: its file row may be
        # written before the document changes) and when the document has them (``http_changes``).
        self._count_lock = threading.Lock()
        self._begun = 0
        self._done = 0

    def http_changes(self) -> tuple[int, int]:
        """(begun, done): changes over HTTP begun so far, and those the document has. From any
        thread. The file rows' refresh reads the document's texts only when the two are equal
        (none on its way) and keeps what it wrote only if none began since: a change over HTTP
        writes its row itself, and texts read before it would undo that row."""
        with self._count_lock:
            return self._begun, self._done

    def _count(self, begun: int = 0, done: int = 0) -> None:
        with self._count_lock:
            self._begun += begun
            self._done += done

    def _counted(self, change: Callable[[], T]) -> T:
        """``change()`` on the loop, counted as begun and done around it."""
        return self._begun_here(change)()

    def _begun_here(self, change: Callable[[], T]) -> Callable[[], T]:
        """A change asked for by a request thread: counted as begun now (its row may be written
        before the loop runs it), and as done by the returned callable, on the loop, once the
        document has it."""
        self._count(begun=1)

        def run() -> T:
            try:
                return change()
            finally:
                self._count(done=1)

        return run

    def apply_file(self, path: str, text: str | None) -> None:
        """Apply (path, text, or None to delete) on the room's loop; returns at once."""
        self._loop.call_soon_threadsafe(self._begun_here(lambda: self.set_file(path, text)))

    def set_file(self, path: str, text: str | None) -> None:
        """A file changed over HTTP (on the room's loop)."""
        self._counted(lambda: set_file_text(self._document.doc, path, text, ORIGIN))

    def read_files(self) -> dict[str, str]:
        """Every file's current text, read on the room's loop (the document is not shared)."""
        return self._on_loop(self._document.texts)

    def replace_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        """``editing.document.replace_file_if`` on the room's loop: False when ``path`` no longer
        holds ``expected`` (someone typed since it was read)."""
        return self._on_loop(self._begun_here(lambda: self.set_file_if(path, text, expected)))

    def set_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        """A conditional change over HTTP (on the room's loop)."""
        return self._counted(lambda: replace_file_if(self._document.doc, path, text, expected, ORIGIN))

    def rename_file(self, path: str, new_path: str) -> str | None:
        """``editing.document.move_file`` on the room's loop: the live text moves, as it is."""
        return self._on_loop(self._begun_here(lambda: self.move_file(path, new_path)))

    def move_file(self, path: str, new_path: str) -> str | None:
        """A rename over HTTP (on the room's loop)."""
        return self._counted(lambda: move_file(self._document.doc, path, new_path, ORIGIN))

    async def store_events(self) -> None:
        """Every turn event sent so far, stored before this returns (from any loop: a replay's
        request waits for it without holding a thread)."""
        if asyncio.get_running_loop() is self._loop:
            await self._store_log()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._store_log(), self._loop))

    def _on_loop(self, work: Callable[[], T]) -> T:
        """``work()`` run on the room's loop, from any thread; waits for its result."""
        if threading.get_ident() == self._loop_thread:
            return work()

        async def run() -> T:
            return work()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=READ_TIMEOUT_S)
