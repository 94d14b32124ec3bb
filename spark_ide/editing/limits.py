"""How big a workspace may grow: the limits every write respects, the model's included."""

from __future__ import annotations

from dataclasses import dataclass

from spark_ide.editing.paths import MAX_PATH_LENGTH


@dataclass(frozen=True, slots=True)
class FileLimits:
    """``None`` means no limit. The server builds one from its settings (SPARK_MAX_*)."""

    max_files: int | None = None  # files in the workspace
    max_file_bytes: int | None = None  # UTF-8 size of one file
    max_document_bytes: int | None = None  # UTF-8 size of all files together (a person's edit past it is undone)
    max_path_length: int = MAX_PATH_LENGTH


NO_LIMITS = FileLimits()


def too_many_files(limit: int | None, holding: int, adding: int = 1) -> str | None:
    """The one file-count rule every write obeys (the model's blocks, a person's new files in
    the live document, HTTP writes, imports): None when a workspace that holds ``holding``
    files may take ``adding`` more under ``limit`` (None: no limit), else why it may not."""
    if limit is None or holding + adding <= limit:
        return None
    if holding == 0:
        return f"a workspace holds at most {limit} files, not {adding}"
    return f"the workspace already holds {holding} files (at most {limit})"
