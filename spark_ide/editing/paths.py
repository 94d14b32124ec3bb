"""Which paths a model may name in a block (PROTOCOL.md §1 rules for workspace paths)."""

from __future__ import annotations

from spark_ide.editing.reasons import FailureReason

MAX_PATH_LENGTH = 255


def path_problem(path: str | None) -> FailureReason | None:
    """Return why `path` cannot be edited, or None when it is a fine workspace path."""
    if path is None or not path.strip():
        return FailureReason.MISSING_PATH
    if (
        len(path) > MAX_PATH_LENGTH
        or "\x00" in path
        or "\\" in path
        or path.startswith("/")
        or path != path.strip()
        or any(ch in path for ch in "\r\n\t")
    ):
        return FailureReason.BAD_PATH
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return FailureReason.BAD_PATH
    return None
