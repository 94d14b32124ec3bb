"""Where a workspace document keeps its files (PROTOCOL.md §2)."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Map, Text

FILES_KEY = "files"


def workspace_files(doc: Doc[Any], key: str = FILES_KEY) -> Map[Text]:
    """The document's path -> Y.Text map (PROTOCOL.md §2), created if missing."""
    files: Map[Text] = doc.get(key, type=Map)
    return files
