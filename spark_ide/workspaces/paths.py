"""Workspace file paths: relative POSIX paths inside the workspace, checked before any use."""

from __future__ import annotations

import unicodedata


class BadPath(ValueError):
    """The path cannot name a file inside a workspace; the message says why."""


MAX_SEGMENT = 255


def clean_path(raw: str, *, max_length: int) -> str:
    """Return ``raw`` as a canonical workspace path, or raise ``BadPath``.

    Accepted: ``src/app.py``. Refused: empty, absolute, ``..`` or ``.`` segments, empty
    segments (``a//b``, trailing ``/``), backslashes, NUL and other control characters,
    over-long paths or segments.
    """
    if not raw:
        raise BadPath("the path is empty")
    if len(raw) > max_length:
        raise BadPath(f"the path is longer than {max_length} characters")
    if "\x00" in raw:
        raise BadPath("the path contains a NUL character")
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise BadPath("the path contains a control character")
    if "\\" in raw:
        raise BadPath("use '/' to separate folders, not '\\'")
    if raw.startswith("/"):
        raise BadPath("the path must be relative to the workspace, not absolute")
    segments = raw.split("/")
    for segment in segments:
        if segment == "":
            raise BadPath("the path has an empty folder name ('//' or a trailing '/')")
        if segment in {".", ".."}:
            raise BadPath(f"'{segment}' is not allowed in a workspace path")
        if len(segment) > MAX_SEGMENT:
            raise BadPath(f"a file or folder name is longer than {MAX_SEGMENT} characters")
    return unicodedata.normalize("NFC", raw)
