"""Shared helpers for the edit-engine tests: documents and stream builders."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing import workspace_files
from spark_ide.editing.parse_events import (
    BlockClosed,
    NewTextChunk,
    OldTextChunk,
    ParseEvent,
    ProseText,
    WriteChunk,
)


def make_doc(files: dict[str, str], client_id: int | None = None) -> Doc[Any]:
    doc: Doc[Any] = Doc(client_id=client_id)
    texts = workspace_files(doc)
    with doc.transaction():
        for path, text in files.items():
            texts[path] = Text(text)
    return doc


def read_files(doc: Doc[Any]) -> dict[str, str]:
    return {path: str(text) for path, text in workspace_files(doc).items()}


def read(doc: Doc[Any], path: str) -> str:
    return str(workspace_files(doc)[path])


@dataclass(frozen=True)
class Block:
    """One block of a test stream, with where it ends in the stream."""

    kind: str  # "edit" | "write"
    path: str
    old: str
    new: str
    hint: int | None = None
    spelling: str = "tags"  # "tags" | "search_replace"

    def render(self) -> str:
        if self.kind == "write":
            return f'<write path="{self.path}">\n{self.new}</write>\n'
        if self.spelling == "search_replace":
            return (
                f"{self.path}\n```python\n<<<<<<< SEARCH\n{self.old}=======\n{self.new}"
                ">>>>>>> REPLACE\n```\n"
            )
        hint = f' line="{self.hint}"' if self.hint is not None else ""
        return (
            f'<edit path="{self.path}">\n<old_text{hint}>\n{self.old}</old_text>\n'
            f"<new_text>\n{self.new}</new_text>\n</edit>\n"
        )

    @property
    def closing_marker(self) -> str:
        """What completes the block (SEARCH/REPLACE markers need their whole line)."""
        if self.kind == "write":
            return "</write>"
        return ">>>>>>> REPLACE\n" if self.spelling == "search_replace" else "</new_text>"


def build_stream(blocks: Sequence[Block], prose: str = "Some words.\n") -> tuple[str, list[int]]:
    """The model text, and for each block the stream offset where it is complete."""
    parts: list[str] = []
    ends: list[int] = []
    length = 0
    for block in blocks:
        rendered = block.render()
        parts += [prose, rendered]
        length += len(prose)
        ends.append(length + rendered.index(block.closing_marker) + len(block.closing_marker))
        length += len(rendered)
    parts.append("Done.\n")
    return "".join(parts), ends


def chunk(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    return [text[a:b] for a, b in pairwise(points) if b > a]


def merged(events: Iterable[ParseEvent]) -> list[ParseEvent]:
    """Parser events with adjacent text pieces of one kind joined (chunking-independent)."""
    out: list[ParseEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, ProseText) and isinstance(last, ProseText):
            out[-1] = ProseText(last.text + event.text)
        elif isinstance(event, OldTextChunk) and isinstance(last, OldTextChunk):
            out[-1] = OldTextChunk(event.index, last.text + event.text)
        elif isinstance(event, NewTextChunk) and isinstance(last, NewTextChunk):
            out[-1] = NewTextChunk(event.index, last.text + event.text)
        elif isinstance(event, WriteChunk) and isinstance(last, WriteChunk):
            out[-1] = WriteChunk(event.index, last.text + event.text)
        else:
            out.append(event)
    return out


def closed_blocks(events: Iterable[ParseEvent]) -> list[int]:
    return [event.index for event in events if isinstance(event, BlockClosed)]


def sync(a: Doc[Any], b: Doc[Any]) -> None:
    """Exchange updates both ways, as two y-websocket peers would."""
    b.apply_update(a.get_update(b.get_state()))
    a.apply_update(b.get_update(a.get_state()))
