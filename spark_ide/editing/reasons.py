"""Named failure reasons for edit blocks, and the engine's own errors.

A block that cannot be applied never raises: it ends in the `failed` state with one of
these codes, which travel to the browser (`edit.status` detail) and to the model (the
ledger in the next prompt).
"""

from __future__ import annotations

from enum import StrEnum


class FailureReason(StrEnum):
    """Why a block ended `failed`."""

    UNTERMINATED_BLOCK = "unterminated_block"
    MALFORMED_BLOCK = "malformed_block"
    MISSING_PATH = "missing_path"
    BAD_PATH = "bad_path"
    FILE_NOT_FOUND = "file_not_found"
    EMPTY_OLD_TEXT = "empty_old_text"
    NO_MATCH = "no_match"
    AMBIGUOUS_MATCH = "ambiguous_match"
    TOO_MANY_FILES = "too_many_files"
    FILE_TOO_LARGE = "file_too_large"
    PATH_CONFLICT = "path_conflict"

    @property
    def explanation(self) -> str:
        return _EXPLANATIONS[self]


_EXPLANATIONS: dict[FailureReason, str] = {
    FailureReason.UNTERMINATED_BLOCK: "the stream ended before the block was closed",
    FailureReason.MALFORMED_BLOCK: "the block's tags were not in the expected order",
    FailureReason.MISSING_PATH: "the block names no file path",
    FailureReason.BAD_PATH: "the path is not a relative POSIX path inside the workspace",
    FailureReason.FILE_NOT_FOUND: "the file does not exist (use <write> to create it)",
    FailureReason.EMPTY_OLD_TEXT: "old_text is empty, so there is nothing to locate",
    FailureReason.NO_MATCH: "old_text does not match the current file",
    FailureReason.AMBIGUOUS_MATCH: "old_text matches several places equally well",
    FailureReason.TOO_MANY_FILES: "the workspace already holds as many files as it may",
    FailureReason.FILE_TOO_LARGE: "the file would grow past the size a workspace file may have",
    FailureReason.PATH_CONFLICT: "a file cannot also be a folder (a and a/b cannot both exist)",
}


class RollbackReason(StrEnum):
    """Why a block ended `rolled_back`."""

    CANCELLED = "cancelled"
    REVERTED = "reverted"
    UNDONE = "undone"  # a person undid this one block after it applied (hunk review)


class EditorClosedError(RuntimeError):
    """`feed()`/`finish()`/`cancel()` called on a turn that already ended."""

    code = "editor_closed"


class ReviewRefused(RuntimeError):
    """A block cannot be kept or undone (the message says why, for the person who asked).
    ``conflict``: its lines, or those beside them, were changed since it applied."""

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


class RevertUnavailable(RuntimeError):
    """A turn cannot be taken back (the message says why, for the person who asked)."""
