"""The lines a prompt at the cursor is about, and a range of lines kept within a file.

Lines are counted as the editor counts them: 1-based, and a text ending with a line break
has one more (empty) line after it, so a file of ``n`` line breaks has ``n + 1`` lines.

``enclosing_lines``: for Python (valid as it stands) the innermost function or class around
the cursor (``pystructure.enclosing_definition``); for other languages, or Python that does
not parse (half typed), the block around it by indentation: the nearest line above indented
less (its header) and every line after it indented more, with a closing line at the header's
depth (``}``, ``)``, ``]``, ``end``, ``</...>``). A cursor in no block (at the top level, between
definitions) gives its own line: the prompt is about that spot (write something here).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .pystructure import enclosing_definition

TAB_WIDTH = 4
_CLOSER = re.compile(r"[})\]]|end\b|</")  # a line that closes the block above it

__all__ = ["clamp_lines", "enclosing_lines", "indented_block", "line_count"]


def line_count(text: str) -> int:
    """How many lines the editor shows for ``text`` (at least 1)."""
    return text.count("\n") + 1


def clamp_lines(text: str, from_line: int, to_line: int) -> tuple[int, int]:
    """``from_line``..``to_line`` (1-based, inclusive, ``from_line <= to_line``) kept within
    the text's lines: a range past the end ends at the last line, one wholly past it is the
    last line."""
    last = line_count(text)
    return min(max(from_line, 1), last), min(max(to_line, 1), last)


def enclosing_lines(text: str, line: int, *, python: bool) -> tuple[int, int]:
    """The first and last line (1-based, inclusive) of the block around 1-based ``line``
    (clamped to the text first): see the module's doc."""
    line = clamp_lines(text, line, line)[0]
    if python:
        found = enclosing_definition(text, line)
        if found is not None:
            return found
    lines = text.split("\n")
    block = indented_block(lines, line - 1)
    return (line, line) if block is None else (block[0] + 1, block[1] + 1)


def _depth(line: str) -> int | None:
    """The indentation of a line (tabs to the next multiple of ``TAB_WIDTH``); None when blank."""
    expanded = line.rstrip("\r").expandtabs(TAB_WIDTH)
    stripped = expanded.lstrip(" ")
    return None if not stripped.strip() else len(expanded) - len(stripped)


def _next_depth(depths: Sequence[int | None], index: int, step: int) -> int | None:
    index += step
    while 0 <= index < len(depths):
        if depths[index] is not None:
            return depths[index]
        index += step
    return None


def indented_block(lines: Sequence[str], index: int) -> tuple[int, int] | None:
    """The block around 0-based ``index`` by indentation, as 0-based first and last line;
    None when the line is in none (top level). A blank line is as deep as the deeper of the
    lines around it; a line followed by deeper ones heads the block itself."""
    depths = [_depth(line) for line in lines]
    depth = depths[index]
    if depth is None:
        around = [d for d in (_next_depth(depths, index, -1), _next_depth(depths, index, 1)) if d is not None]
        depth = max(around, default=0)
    after = _next_depth(depths, index, 1)
    header: int | None = None
    if depths[index] is not None and after is not None and after > depth:
        header = index
    else:
        for above in range(index - 1, -1, -1):
            found = depths[above]
            if found is not None and found < depth:
                header = above
                break
    if header is None:
        return None
    head = depths[header]
    assert head is not None
    last = header
    for below in range(header + 1, len(lines)):
        found = depths[below]
        if found is None:
            continue
        if found <= head:
            if found == head and _CLOSER.match(lines[below].strip()):
                last = below
            break
        last = below
    return header, last
