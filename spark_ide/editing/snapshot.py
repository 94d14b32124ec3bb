"""A file's text at one moment, and a cheap test of whether it is still current."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Text


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    text: str
    state: bytes  # the document's state vector when the text was read
    size: int  # Y.Text length (UTF-8 bytes)

    @classmethod
    def take(cls, doc: Doc[Any], ytext: Text) -> FileSnapshot:
        return cls(str(ytext), doc.get_state(), len(ytext))

    @classmethod
    def current(cls, doc: Doc[Any], ytext: Text, known: FileSnapshot | None) -> FileSnapshot:
        """`known` if it still holds, else a fresh read (a large file costs ~1 µs/KB)."""
        if known is not None and known.is_current(doc, ytext):
            return known
        return cls.take(doc, ytext)

    @classmethod
    def after_own_edit(cls, doc: Doc[Any], ytext: Text, text: str) -> FileSnapshot:
        """The snapshot after an edit whose result we computed ourselves."""
        return cls(text, doc.get_state(), len(ytext))

    def is_current(self, doc: Doc[Any], ytext: Text) -> bool:
        """True when nobody changed the text since it was read.

        Every insertion anywhere advances the state vector; deletions do not, but any
        deletion in this text shortens it. Together they catch every change, and both
        are far cheaper than reading a large file again.
        """
        return len(ytext) == self.size and doc.get_state() == self.state
