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
from spark_ide.editing.reasons import FailureReason

# A line that starts like a tag but runs this long without closing is prose.
MAX_TAG_LENGTH = 500
PROSE_TAIL_LENGTH = 2000

SEARCH_MARKER = "<<<<<<< SEARCH"
DIVIDER_MARKER = "======="
REPLACE_MARKER = ">>>>>>> REPLACE"
FENCE_MARKER = "```"

# Attributes are bounded so that whether a line is a tag never depends on chunking: by
# the time a held line reaches MAX_TAG_LENGTH, any tag in it has been seen.
_ATTRIBUTES = rf"(?=[\s>/])([^>\n]{{0,{MAX_TAG_LENGTH - 20}}})>"
_OPENING_TAG = re.compile(r"<(edit|write)" + _ATTRIBUTES)
_SECTION_TAG = re.compile(r"<(old_text|new_text)" + _ATTRIBUTES)
_PATH_ATTR = re.compile(r"""\bpath\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""")
_LINE_ATTR = re.compile(r"""\bline\s*=\s*["']?(\d{1,9})""")
_HORIZONTAL_SPACE = " \t\r"


class _State(Enum):
    PROSE = auto()
    EDIT_OPEN = auto()  # after <edit>, expecting <old_text>
    OLD_TEXT = auto()
    EDIT_MIDDLE = auto()  # after </old_text>, expecting <new_text>
    NEW_TEXT = auto()
    EDIT_CLOSE = auto()  # after </new_text>, an optional </edit>
    WRITE_BODY = auto()
    FENCE_BODY = auto()  # a Markdown code fence taken as a whole-file write (see fence_path)
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


def _could_become(partial: str, marker: str) -> bool:
    """True when the partial line may still turn into `marker` plus trailing blanks."""
    if len(partial) > MAX_TAG_LENGTH:
        return False
    if marker.startswith(partial):
        return True
    return partial.startswith(marker) and not partial[len(marker) :].strip(_HORIZONTAL_SPACE)


def _is_marker_line(line: str, marker: str) -> bool:
    """A whole-line marker; overlong lines never are, so holding back stays bounded."""
    return len(line) <= MAX_TAG_LENGTH and line.rstrip(_HORIZONTAL_SPACE) == marker


def _attribute_path(attributes: str) -> str | None:
    found = _PATH_ATTR.search(attributes)
    if found is None:
        return None
    return next(group for group in found.groups() if group is not None)


def _path_from_prose(tail: str) -> str | None:
    """The path written on the line before a SEARCH marker (a code fence may sit between)."""
    lines = [line.strip() for line in tail.split("\n")[:-1]]
    lines = [line for line in lines if line]
    if lines and lines[-1].startswith("```"):
        lines.pop()
    if not lines:
        return None
    candidate = lines[-1].strip("`*").rstrip(":").strip("`*")
    if not candidate or any(ch.isspace() for ch in candidate):
        return None
    return candidate


class EditStreamParser:
    """Feed chunks, get `ParseEvent`s; `finish()` closes the stream.

    ``fence_path``: small models answer with a Markdown code fence however they are asked
    for a `<write>` block. With a path set, the first fenced block of an answer that has no
    edit block before it is taken as a whole-file write to that path.
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
        self._prose_tail = ""
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
            if self._buffer:
                self._emit_prose(self._buffer)
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
        rest = self._buffer.lstrip(_HORIZONTAL_SPACE)
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
        if self._at_line_start:
            line = buffer if newline < 0 else buffer[:newline]
            verdict = self._open_from_line(line, complete=newline >= 0 or self._final)
            if verdict is None:
                return False
            if verdict:
                return True
        if newline < 0:
            self._emit_prose(buffer)
            self._buffer = ""
            self._at_line_start = False
        else:
            self._emit_prose(buffer[: newline + 1])
            self._buffer = buffer[newline + 1 :]
            self._at_line_start = True
        return True

    def _open_from_line(self, line: str, *, complete: bool) -> bool | None:
        """Try to open a block at a line start: True opened, False prose, None wait."""
        if self._fence_path is not None and self._blocks_opened == 0 and line.startswith("`"):
            if not complete and (FENCE_MARKER.startswith(line) or line.startswith(FENCE_MARKER)):
                return None  # wait for the whole line: ```python is one opening fence
            if line.startswith(FENCE_MARKER) and complete:
                self._buffer = self._buffer[len(line) :]
                self._open_block(BlockKind.WRITE, self._fence_path)
                self._state = _State.FENCE_BODY
                return True
        if line.startswith("<<") or line == "<":
            if not complete and _could_become(line, SEARCH_MARKER):
                return None
            if _is_marker_line(line, SEARCH_MARKER):
                self._open_search_replace(len(line))
                return True
        if not line.startswith("<"):
            return False
        if not complete and ("<edit".startswith(line) or "<write".startswith(line)):
            return None
        tag = _OPENING_TAG.match(line)
        if tag is not None:
            kind = BlockKind(tag.group(1))
            self._buffer = self._buffer[tag.end() :]
            self._open_block(kind, _attribute_path(tag.group(2)))
            return True
        waiting = re.match(r"<(edit|write)[\s/]", line) is not None
        if waiting and not complete and len(line) < MAX_TAG_LENGTH:
            return None
        return False

    def _open_block(self, kind: BlockKind, path: str | None) -> None:
        self._block = self._blocks_opened
        self._blocks_opened += 1
        self._out.append(BlockOpened(self._block, kind, path))
        self._state = _State.EDIT_OPEN if kind is BlockKind.EDIT else _State.WRITE_BODY
        self._skip_line_end = True

    def _open_search_replace(self, line_length: int) -> None:
        path = _path_from_prose(self._prose_tail)
        self._buffer = self._buffer[line_length + 1 :]
        self._open_block(BlockKind.EDIT, path)
        self._state = _State.SEARCH_HALF
        self._skip_line_end = False
        self._at_line_start = True

    def _step_expect_section(self) -> bool:
        expected = "old_text" if self._state is _State.EDIT_OPEN else "new_text"
        buffer = self._buffer.lstrip()
        self._buffer = buffer
        if not buffer:
            return False
        tag = _SECTION_TAG.match(buffer)
        if tag is not None and tag.group(1) == expected:
            self._buffer = buffer[tag.end() :]
            if expected == "old_text":
                hint = _LINE_ATTR.search(tag.group(2))
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
                if complete and _is_marker_line(line, marker):
                    self._buffer = buffer[len(line) + 1 :]
                    self._close_section()
                    return True
                if not complete and _could_become(line, marker):
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
        self._prose_tail = ""
        self._state = _State.EDIT_CLOSE if state is _State.NEW_TEXT else _State.PROSE
        if state is _State.FENCE_BODY:
            self._fence_path = None  # only the first fence is the file

    # -- output --

    def _break(self, reason: FailureReason, message: str) -> None:
        self._out.append(BlockBroken(self._block, reason, message))
        self._prose_tail = ""
        self._line_hint = None

    def _emit_prose(self, text: str) -> None:
        self._prose_tail = (self._prose_tail + text)[-PROSE_TAIL_LENGTH:]
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
