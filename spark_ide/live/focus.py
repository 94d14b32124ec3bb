"""A prompt on a selection or at the cursor (Ctrl+K in the editor): the lines it is about.

The page sends the lines it names (``AskedRange``: a selection's first and last line, or the
cursor's line); the server settles them on the file's text as it is when the turn starts
(``settle``): a selection reaching past the file's end is cut at its last line, and the
person is told; the cursor's line widens to the function, class or block around it
(``editing.enclosing``). The settled lines and their text (``Focus``) go into the turn's
request (``prompting.focus_section``) and its ``turn.started`` (the transcript shows
``a.py:12-14``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_ide.editing.enclosing import clamp_lines, enclosing_lines, line_count
from spark_ide.editing.merge import is_python

from .events import LineSpan

__all__ = ["AskedRange", "Focus", "settle"]


@dataclass(frozen=True, slots=True)
class AskedRange:
    """Lines ``from_line`` to ``to_line`` (1-based, inclusive; ``from_line <= to_line``) of
    ``path`` as the page named them; ``cursor``: no selection, the cursor is on ``from_line``
    (the server takes the block around it)."""

    path: str
    from_line: int
    to_line: int
    cursor: bool = False


@dataclass(frozen=True, slots=True)
class Focus:
    """The lines a turn's request is about, and their text (line breaks kept)."""

    span: LineSpan
    text: str


def settle(asked: AskedRange, texts: Mapping[str, str]) -> tuple[Focus | None, str]:
    """``asked`` on the files as they are: the focus, and what the person is told about it
    ("" when it is as asked). A file that is not there (deleted meanwhile) gives no focus:
    the prompt goes about the workspace, saying so."""
    text = texts.get(asked.path)
    if text is None:
        return None, f"({asked.path} is not in the workspace: the prompt goes without its lines.)"
    if asked.cursor:
        first, last = enclosing_lines(text, asked.from_line, python=is_python(asked.path, None))
    else:
        first, last = clamp_lines(text, asked.from_line, asked.to_line)
    span = LineSpan(asked.path, first, last)
    note = ""
    if not asked.cursor and (first, last) != (asked.from_line, asked.to_line):
        asked_lines = LineSpan(asked.path, asked.from_line, asked.to_line).label()
        note = (f"({asked_lines} is past the end of the file ({line_count(text)} lines): "
                f"the prompt is about {span.label()}.)")
    lines = text.split("\n")[first - 1 : last]
    return Focus(span, "\n".join(lines)), note
