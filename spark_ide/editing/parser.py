"""Incremental parser for the edit format of PROTOCOL.md §4.

The model's text arrives in chunks split anywhere, so the parser keeps a small buffer and
only ever holds back text that might still turn into a tag: a line start that is a prefix
of an opening tag or of the closing marker of the current section. Everything else is
passed on at once, which is what lets the applier show a line while it is being written.

Content sections (old_text, new_text, write bodies, SEARCH/REPLACE halves) are reported
verbatim: the text between the end of the opening tag's line and the start of the
closing marker's line, so a section is either empty or ends with a newline.
"""

from __future__ import annotations

import re
from enum import Enum, auto

from spark_ide.editing.grammar import (
    DIVIDER_MARKER,
    FENCE_MARKER,
    HORIZONTAL_SPACE,
    LINE_ATTR,
    MAX_TAG_LENGTH,
    OPENING_TAG,
    OPENING_TAG_START,
    REPLACE_MARKER,
    SEARCH_MARKER,
    SECTION_TAG,
    attribute_path,
    could_become,
    is_marker_line,
)
from spark_ide.editing.parse_events import (
    BlockBroken,
    BlockClosed,
    BlockKind,
    BlockOpened,
    NewTextChunk,
    OldTextChunk,
    OldTextClosed,
    ParseEvent,
    ProseText,
    WriteChunk,
)
from spark_ide.editing.preamble import (
    LineKind,
    Preamble,
    classify,
    fence_language,
    is_blank,
    may_hold,
)
from spark_ide.editing.reasons import FailureReason


class _State(Enum):
    PROSE = auto()
    EDIT_OPEN = auto()  # after <edit>, expecting <old_text>
    OLD_TEXT = auto()
    EDIT_MIDDLE = auto()  # after </old_text>, expecting <new_text>
    NEW_TEXT = auto()
    EDIT_CLOSE = auto()  # after </new_text>, an optional </edit>
    WRITE_BODY = auto()
    FENCE_BODY = auto()  # a Markdown code fence taken as code for fence_path (a fenced write)
    SEARCH_HALF = auto()
    REPLACE_HALF = auto()


# Closing marker of each content state: (marker, whole line required).
_CLOSERS: dict[_State, tuple[str, bool]] = {
    _State.OLD_TEXT: ("</old_text>", False),
    _State.NEW_TEXT: ("</new_text>", False),
    _State.WRITE_BODY: ("</write>", False),
    _State.FENCE_BODY: (FENCE_MARKER, True),
    _State.SEARCH_HALF: (DIVIDER_MARKER, True),
    _State.REPLACE_HALF: (REPLACE_MARKER, True),
}


# A run of complete lines that are prose whatever comes after them, found in one C-level scan:
# each starts with neither blank nor ``<`` (no block opens), `` ` `` nor ``*``, ends with none of
# blank, `` ` ``, ``*`` and ``:``, and has a space or tab inside. Such a line is its own stripped
# text, holds a blank, so ``classify`` says OTHER: a subset of what ``_plain_lines`` takes, which
# reads every other line itself. Possessive quantifiers and a lookbehind: no backtracking, so a
# line costs its length once however long it is.
_PLAIN_RUN = re.compile(r"(?:[^\s<`*](?=[^ \t\n]*+[ \t])[^\n]*+(?<=[^\s`*:])\n)+")


def _plain_lines(buffer: str, newline: int) -> int:
    """How much of ``buffer`` (from a line start; ``newline``: its first newline) is complete
    lines that ``EditStreamParser._line_start`` would take for plain prose with nothing held
    and no fence due: no ``<`` at the start (no block opens) and ``classify`` says OTHER (no
    line to hold). What a line start does for each of them, in one step for a run of them: a
    paragraph of short lines cost a chain of calls and a copy of the rest per line; most prose
    lines pass in one regex scan (``_PLAIN_RUN``), the rest line by line."""
    start = 0
    while newline >= 0:
        run = _PLAIN_RUN.match(buffer, start)
        if run is not None:
            start = run.end()
            newline = buffer.find("\n", start)
            if newline < 0:
                break
        line = buffer[start:newline]
        if line.startswith("<") or classify(line) is not LineKind.OTHER:
            break
        start = newline + 1
        newline = buffer.find("\n", start)
    return start


class EditStreamParser:
    """Feed chunks, get `ParseEvent`s; `finish()` closes the stream.

    ``fence_path``: small models answer with a Markdown code fence however they are asked
    for a `<write>` block. With a path set, the first fenced block of an answer that has no
    edit block before it is taken as a write to that path (unless the fence only wraps an
    edit block); the engine merges it into the file's content (fence.py).

    Prose is what a reader should see: a path line naming a SEARCH/REPLACE block's file
    and a code fence wrapping a block belong to the block (see `Preamble`).
    """

    def __init__(self, *, fence_path: str | None = None) -> None:
        self._fence_path = fence_path
        self._buffer = ""
        self._state = _State.PROSE
        self._at_line_start = True
        self._skip_line_end = False
        self._block = -1
        self._blocks_opened = 0
        self._line_hint: int | None = None
        self._preamble = Preamble()
        self._wrapped = False  # the block in flight sits inside a code fence
        self._closing_fence_due = False  # ...which closes on the line after the block
        self._out: list[ParseEvent] = []
        self._final = False

    def feed(self, chunk: str) -> list[ParseEvent]:
        self._out = []
        mid_line = not (self._buffer or self._at_line_start or self._skip_line_end)
        if mid_line and "\n" not in chunk:
            # Hot path: the middle of a line can hold no tag, so it passes straight on.
            if self._state is _State.PROSE:
                self._emit_prose(chunk)
                return self._out
            if self._state in _CLOSERS:
                self._emit_content(chunk)
                return self._out
        self._buffer += chunk
        while self._step():
            pass
        return self._out

    def finish(self) -> list[ParseEvent]:
        """End of stream: flush held text; an open block becomes `unterminated_block`."""
        self._out = []
        self._final = True
        while self._step():
            pass
        if self._state is _State.PROSE:
            self._emit_prose(self._preamble.release() + self._buffer)
        elif self._state is not _State.EDIT_CLOSE:
            self._break(FailureReason.UNTERMINATED_BLOCK, "stream ended inside the block")
        elif self._buffer.strip():
            self._emit_prose(self._buffer)
        self._buffer = ""
        self._state = _State.PROSE
        return self._out

    # -- one step: consume some buffered text, or return False to wait for more --

    def _step(self) -> bool:
        if not self._buffer:
            return False
        if self._skip_line_end:
            return self._skip_rest_of_tag_line()
        state = self._state
        if state is _State.PROSE:
            return self._step_prose()
        if state in (_State.EDIT_OPEN, _State.EDIT_MIDDLE):
            return self._step_expect_section()
        if state is _State.EDIT_CLOSE:
            return self._step_edit_close()
        return self._step_content()

    def _skip_rest_of_tag_line(self) -> bool:
        """After a tag, drop blanks up to the newline; other text on the line is content."""
        rest = self._buffer.lstrip(HORIZONTAL_SPACE)
        self._buffer = rest  # blanks are dropped as they come, so none pile up
        if not rest:
            return False
        if rest.startswith("\n"):
            self._buffer = rest[1:]
        self._skip_line_end = False
        self._at_line_start = True
        return True

    def _step_prose(self) -> bool:
        buffer = self._buffer
        newline = buffer.find("\n")
        if self._at_line_start and newline >= 0 and self._preamble.empty and not self._closing_fence_due:
            plain = _plain_lines(buffer, newline)
            if plain:  # complete lines that can be nothing but prose, passed on in one piece
                self._emit_prose(buffer[:plain])
                self._buffer = buffer[plain:]
                return True
        if self._at_line_start:
            line = buffer if newline < 0 else buffer[:newline]
            verdict = self._line_start(line, complete=newline >= 0 or self._final)
            if verdict is None:
                return False
            if verdict:
                return True
            self._emit_prose(self._preamble.release())
        if newline < 0:
            self._emit_prose(buffer)
            self._buffer = ""
            self._at_line_start = False
        else:
            self._emit_prose(buffer[: newline + 1])
            self._buffer = buffer[newline + 1 :]
            self._at_line_start = True
        return True

    def _line_start(self, line: str, *, complete: bool) -> bool | None:
        """A line start in prose: True taken (a block opened, a line held or dropped),
        False plain prose, None wait for more of the line."""
        opened = self._open_from_line(line, complete=complete)
        if opened is not False:
            return opened
        if self._closing_fence_due:
            if not complete and could_become(line, FENCE_MARKER):
                return None
            self._closing_fence_due = False
            if complete and is_marker_line(line, FENCE_MARKER):
                self._buffer = self._buffer[len(line) + 1 :]
                return True
        # A fence opens a file at its first line that is neither blank nor a block's start.
        fence_path = self._fence_path
        if fence_path is not None and self._preamble.ends_with_fence and not is_blank(line):
            self._open_fence_write(fence_path)
            return True
        if not complete:
            return None if may_hold(line) else False
        kind = classify(line)
        if kind is LineKind.OTHER:
            return False
        held = self._buffer[: len(line) + 1]
        self._buffer = self._buffer[len(held) :]
        self._emit_prose(self._preamble.hold(held, kind))
        return True

    def _open_from_line(self, line: str, *, complete: bool) -> bool | None:
        """Try to open a block at a line start: True opened, False not a block, None wait."""
        if line.startswith("<<") or line == "<":
            if not complete and could_become(line, SEARCH_MARKER):
                return None
            if is_marker_line(line, SEARCH_MARKER):
                self._open_search_replace(len(line))
                return True
        if not line.startswith("<"):
            return False
        if not complete and ("<edit".startswith(line) or "<write".startswith(line)):
            return None
        tag = OPENING_TAG.match(line)
        if tag is not None:
            prose, wrapped = self._preamble.take_for_tag()
            self._emit_prose(prose)
            self._buffer = self._buffer[tag.end() :]
            self._open_block(BlockKind(tag.group(1)), attribute_path(tag.group(2)), wrapped=wrapped)
            return True
        waiting = OPENING_TAG_START.match(line) is not None
        if waiting and not complete and len(line) < MAX_TAG_LENGTH:
            return None
        return False

    def _open_block(
        self,
        kind: BlockKind,
        path: str | None,
        *,
        wrapped: bool = False,
        fenced: bool = False,
        language: str | None = None,
    ) -> None:
        self._block = self._blocks_opened
        self._blocks_opened += 1
        self._fence_path = None  # a fence is a file only before any block
        self._wrapped = wrapped
        self._closing_fence_due = False
        self._out.append(BlockOpened(self._block, kind, path, fenced, language))
        self._state = _State.EDIT_OPEN if kind is BlockKind.EDIT else _State.WRITE_BODY
        self._skip_line_end = True

    def _open_search_replace(self, line_length: int) -> None:
        path, wrapped = self._preamble.take_for_search()
        self._buffer = self._buffer[line_length + 1 :]
        self._open_block(BlockKind.EDIT, path, wrapped=wrapped)
        self._state = _State.SEARCH_HALF
        self._skip_line_end = False
        self._at_line_start = True

    def _open_fence_write(self, path: str) -> None:
        """The held fence opens the file; the current line is its first line."""
        prose, fence, first_lines = self._preamble.take_for_fence_write()
        self._emit_prose(prose)
        self._open_block(BlockKind.WRITE, path, fenced=True, language=fence_language(fence.text))
        self._state = _State.FENCE_BODY
        self._skip_line_end = False
        if first_lines:
            self._emit_content(first_lines)

    def _step_expect_section(self) -> bool:
        expected = "old_text" if self._state is _State.EDIT_OPEN else "new_text"
        buffer = self._buffer.lstrip()
        self._buffer = buffer
        if not buffer:
            return False
        tag = SECTION_TAG.match(buffer)
        if tag is not None and tag.group(1) == expected:
            self._buffer = buffer[tag.end() :]
            if expected == "old_text":
                hint = LINE_ATTR.search(tag.group(2))
                self._line_hint = int(hint.group(1)) if hint else None
                self._state = _State.OLD_TEXT
            else:
                self._state = _State.NEW_TEXT
            self._skip_line_end = True
            return True
        opener = "<" + expected
        head = buffer.split("\n", 1)[0]
        still_possible = opener.startswith(head) or (
            head.startswith(opener) and len(head) < MAX_TAG_LENGTH and "\n" not in buffer
        )
        if still_possible:
            return False  # at stream end, finish() reports the block as unterminated
        self._break(FailureReason.MALFORMED_BLOCK, f"expected <{expected}>")
        self._state = _State.PROSE
        self._at_line_start = True
        return True

    def _step_edit_close(self) -> bool:
        buffer = self._buffer.lstrip()
        if not buffer:
            self._buffer = ""
            return False
        if buffer.startswith("</edit>"):
            self._buffer = buffer[len("</edit>") :]
            self._skip_line_end = True
            self._state = _State.PROSE
            return True
        if "</edit>".startswith(buffer) and not self._final:
            self._buffer = buffer
            return False
        self._state = _State.PROSE
        self._at_line_start = True
        return True

    def _step_content(self) -> bool:
        marker, whole_line = _CLOSERS[self._state]
        buffer = self._buffer
        newline = buffer.find("\n")
        if self._at_line_start:
            if whole_line:
                line = buffer if newline < 0 else buffer[:newline]
                complete = newline >= 0 or self._final
                if complete and is_marker_line(line, marker):
                    self._buffer = buffer[len(line) + 1 :]
                    self._close_section()
                    return True
                if not complete and could_become(line, marker):
                    return False
            elif buffer.startswith(marker):
                self._buffer = buffer[len(marker) :]
                self._skip_line_end = True
                self._close_section()
                return True
            elif marker.startswith(buffer) and not self._final:
                return False
        if newline < 0:
            self._emit_content(buffer)
            self._buffer = ""
            self._at_line_start = False
        else:
            self._emit_content(buffer[: newline + 1])
            self._buffer = buffer[newline + 1 :]
            self._at_line_start = True
        return True

    def _close_section(self) -> None:
        state = self._state
        self._at_line_start = True
        if state in (_State.OLD_TEXT, _State.SEARCH_HALF):
            self._out.append(OldTextClosed(self._block, self._line_hint))
            self._line_hint = None
            self._state = _State.EDIT_MIDDLE if state is _State.OLD_TEXT else _State.REPLACE_HALF
            return
        self._out.append(BlockClosed(self._block))
        self._closing_fence_due = self._wrapped
        self._state = _State.EDIT_CLOSE if state is _State.NEW_TEXT else _State.PROSE

    # -- output --

    def _break(self, reason: FailureReason, message: str) -> None:
        self._out.append(BlockBroken(self._block, reason, message))
        self._line_hint = None

    def _emit_prose(self, text: str) -> None:
        if not text:
            return
        out = self._out
        if out and isinstance(out[-1], ProseText):
            out[-1] = ProseText(out[-1].text + text)
        else:
            out.append(ProseText(text))

    def _emit_content(self, text: str) -> None:
        state = self._state
        index = self._block
        out = self._out
        last = out[-1] if out else None
        if state in (_State.OLD_TEXT, _State.SEARCH_HALF):
            if isinstance(last, OldTextChunk):
                out[-1] = OldTextChunk(index, last.text + text)
            else:
                out.append(OldTextChunk(index, text))
        elif state in (_State.NEW_TEXT, _State.REPLACE_HALF):
            if isinstance(last, NewTextChunk):
                out[-1] = NewTextChunk(index, last.text + text)
            else:
                out.append(NewTextChunk(index, text))
        elif isinstance(last, WriteChunk):
            out[-1] = WriteChunk(index, last.text + text)
        else:
            out.append(WriteChunk(index, text))
