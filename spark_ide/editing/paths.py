"""Workspace file paths: the one set of rules for every write (HTTP, model, collaborator).

A workspace path is relative POSIX (``src/app.py``), stored in Unicode NFC. The HTTP API
checks it with `clean_path`; a model's edit block with `block_path`, which applies the
same rules and reports a named `FailureReason` instead of raising.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection
from pathlib import PurePosixPath

from spark_ide.editing.reasons import FailureReason

MAX_PATH_LENGTH = 512  # characters; a deployment may lower or raise it (SPARK_MAX_PATH_LENGTH)
MAX_SEGMENT_LENGTH = 255  # one file or folder name, as most file systems allow


class BadPath(ValueError):
    """The path cannot name a file inside a workspace; the message says why."""


def clean_path(raw: str, *, max_length: int = MAX_PATH_LENGTH) -> str:
    """Return ``raw`` as a canonical workspace path (NFC), or raise `BadPath`.

    Refused: empty, absolute, ``.`` or ``..`` segments, empty segments (``a//b``, a
    trailing ``/``), backslashes, NUL and other control characters, blanks at either end,
    and paths or names over the length limits.
    """
    if not raw:
        raise BadPath("the path is empty")
    if len(raw) > max_length:
        raise BadPath(f"the path is longer than {max_length} characters")
    if "\x00" in raw:
        raise BadPath("the path contains a NUL character")
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise BadPath("the path contains a control character")
    if raw != raw.strip():
        raise BadPath("the path starts or ends with a blank")
    if "\\" in raw:
        raise BadPath("use '/' to separate folders, not '\\'")
    if raw.startswith("/"):
        raise BadPath("the path must be relative to the workspace, not absolute")
    for segment in raw.split("/"):
        if segment == "":
            raise BadPath("the path has an empty folder name ('//' or a trailing '/')")
        if segment in {".", ".."}:
            raise BadPath(f"'{segment}' is not allowed in a workspace path")
        if len(segment) > MAX_SEGMENT_LENGTH:
            raise BadPath(f"a file or folder name is longer than {MAX_SEGMENT_LENGTH} characters")
    return unicodedata.normalize("NFC", raw)


def block_path(raw: str | None, *, max_length: int = MAX_PATH_LENGTH) -> str | FailureReason:
    """The canonical path a model's block names, or why the block cannot use it."""
    if raw is None or not raw.strip():
        return FailureReason.MISSING_PATH
    try:
        return clean_path(raw, max_length=max_length)
    except BadPath:
        return FailureReason.BAD_PATH


def path_conflict(path: str, existing: Collection[str]) -> str | None:
    """Why a new file at ``path`` cannot sit beside the ``existing`` files, or None.

    A file cannot also be a folder: ``a`` and ``a/b`` cannot both exist.
    """
    parts = path.split("/")
    for end in range(1, len(parts)):
        parent = "/".join(parts[:end])
        if parent in existing:
            return f"a parent folder of {path} is a file ({parent})"
    folder = path + "/"
    if any(other.startswith(folder) for other in existing):
        return f"{path} is a folder"
    return None


def beside_path(path: str, tag: str) -> str:
    """Where a second version of ``path`` goes, beside it: ``src/main.py`` -> ``src/main.<tag>.py``;
    ``Makefile`` -> ``Makefile.<tag>`` (a teacher's push over a student's change, a page's
    edit that clashed with one made meanwhile)."""
    pure = PurePosixPath(path)
    if pure.suffix and pure.stem:
        return str(pure.with_name(f"{pure.stem}.{tag}{pure.suffix}"))
    return f"{path}.{tag}"
