"""The workspace as files on disk: written into a fresh directory, never outside it.

The workspace rules for paths live in ``spark_ide.editing.paths`` and are applied where files
are stored; this module only guarantees what the sandbox needs — no write can leave the
directory, whatever the mapping holds — without importing the editing engine, so the sandbox
core runs on the standard library alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from spark_ide.sandbox.core.limits import Limits


class BadRun(ValueError):
    """The run cannot start as asked (a bad path, a file too large, no such file); the message says why."""


def checked_parts(path: str) -> tuple[str, ...]:
    """The segments of a relative workspace path, or `BadRun` if it could escape."""
    if not path or "\x00" in path or "\\" in path:
        raise BadRun(f"bad path {path[:80]!r}: empty, or contains NUL or '\\'")
    pure = PurePosixPath(path)
    if pure.is_absolute() or any(part in {"..", "."} for part in path.split("/")) or "" in path.split("/"):
        raise BadRun(f"bad path {path[:80]!r}: must be relative, without '.', '..' or empty segments")
    return pure.parts


def materialise(files: Mapping[str, str], root: Path, *, limits: Limits, owner: int | None = None) -> int:
    """Write ``files`` under ``root`` (an empty directory); return the bytes written.

    Each file is created new (``O_EXCL``) relative to an open directory with ``O_NOFOLLOW``,
    so nothing in the mapping can name a file outside ``root``. ``owner`` (a uid, as root)
    gets every file and folder, so the run's own uid can read them and no other can.
    """
    total = 0
    encoded: dict[tuple[str, ...], bytes] = {}
    for path, text in files.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise BadRun("workspace files must map text paths to text")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRun(f"{path[:80]!r} is not valid Unicode text") from None
        if len(data) > limits.file_bytes:
            raise BadRun(f"{path} is larger than the sandbox's file limit of {limits.file_bytes} bytes")
        total += len(data)
        encoded[checked_parts(path)] = data
    if total > limits.disk_bytes:
        raise BadRun(f"the workspace ({total} bytes) does not fit the sandbox's disk of {limits.disk_bytes} bytes")
    folders = {parts[:end] for parts in encoded for end in range(1, len(parts))}
    clash = folders & encoded.keys()
    if clash:
        raise BadRun(f"{'/'.join(min(clash))} is both a file and a folder")
    for parts in sorted(folders, key=len):
        target = root.joinpath(*parts)
        os.mkdir(target, 0o755)
        if owner is not None:
            os.chown(target, owner, owner, follow_symlinks=False)
    for parts, data in encoded.items():
        folder = os.open(root.joinpath(*parts[:-1]), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            handle = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        finally:
            os.close(folder)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            if owner is not None:
                os.fchown(out.fileno(), owner, owner)
    return total
