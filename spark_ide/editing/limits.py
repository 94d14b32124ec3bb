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
