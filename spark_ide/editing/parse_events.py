"""What the streaming parser reports: prose, and the pieces of each edit block in order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spark_ide.editing.reasons import FailureReason


class BlockKind(StrEnum):
    EDIT = "edit"
    WRITE = "write"


@dataclass(frozen=True, slots=True)
class ProseText:
    text: str


@dataclass(frozen=True, slots=True)
class BlockOpened:
    """A block starts. ``fenced``: a small model's Markdown code fence taken as a write,
    with the language its opening line names (```python), if any."""

    index: int
    kind: BlockKind
    path: str | None
    fenced: bool = False
    language: str | None = None


@dataclass(frozen=True, slots=True)
class OldTextChunk:
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class OldTextClosed:
    index: int
    line_hint: int | None


@dataclass(frozen=True, slots=True)
class NewTextChunk:
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class WriteChunk:
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class BlockClosed:
    index: int


@dataclass(frozen=True, slots=True)
class BlockBroken:
    index: int
    reason: FailureReason
    message: str


ParseEvent = (
    ProseText
    | BlockOpened
    | OldTextChunk
    | OldTextClosed
    | NewTextChunk
    | WriteChunk
    | BlockClosed
    | BlockBroken
)
