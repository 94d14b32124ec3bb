"""Which lines of a small model's Python fence the preview shows (``FenceLines``), decided
line by line as they stream, from the top level of the file they go into (``read_existing``).

The preview never shows a copy of what the file already has: a top-level item of the code
that defines a name the file defines (`def is_prime`, `class A`, `X = 1`) is held back, since
the merge will put it in place of the file's one (or find it unchanged); an item whose lines
so far are those of one of the file's statements (`print(is_prime(7))`) is held until it
differs from it, and dropped if it turns out the same. The preview (``fence.FencePreview``)
holds what is left; the merge at the end places everything.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from spark_ide.editing.pystructure import ItemKind, continues_statement, head_name, is_complete, parse_python

# An item of the code longer than this is not looked into any more for where the next one
# starts (each line at column 0 asks whether the item is whole, by parsing it): the rest of
# the fence goes with it. Code a small model writes is far shorter.
MAX_ITEM_CHARS = 100_000
# A line at column 0 is shown before it ends once its first words tell (`_new_item_shown`);
# past this many characters it waits for its end.
MAX_HEAD_CHARS = 256
_FIRST_TOKEN = re.compile(r"([^\W\d]\w*)(?=\W)")
_DEFINITION_NAME = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+([^\W\d]\w*)(?=\W)")


class _Mode(Enum):
    SHOW = "show"  # the item goes into the preview
    HOLD = "hold"  # a definition the file has: never previewed, the merge places it
    MATCHING = "matching"  # so far the same lines as one of the file's statements
    UNDECIDED = "undecided"  # decorators, before the line that names what they decorate


@dataclass(frozen=True, slots=True)
class TopLevel:
    """The file's top level, as the preview needs it: the 1-based lines of each definition
    (its last binding) and the lines of each other statement (without their ends)."""

    definitions: dict[str, tuple[int, int]]
    statements: tuple[tuple[str, ...], ...]


class FenceLines:
    """Which lines of a Python fence the preview shows, decided line by line as they come.

    `feed` takes the code as it streams and returns what to write into the preview: whole
    lines, and the start of the line being written once it is sure to be shown (an
    indented line of a shown item), so that its ghost shows. The code is cut into top-level
    items: a line at column 0 starts one when the item above is whole (`is_complete`) and
    the line does not continue it; blank lines and comments at column 0 between items go
    with the next. `existing()` reads the file's top level when an item starts.
    """

    def __init__(self, existing: Callable[[], TopLevel | None]) -> None:
        self._existing = existing  # None: the file is not valid Python now
        self._mode: _Mode | None = None  # the current item's (None: none started)
        self._item: list[str] = []  # its lines so far
        self._item_chars = 0
        self._whole: bool | None = None  # whether the item so far is whole (cached)
        self._pending: list[str] = []  # blank and comment lines after a whole item
        self._waiting: list[str] = []  # lines of a MATCHING or UNDECIDED item, not shown yet
        self._matched: list[str] = []  # MATCHING: its lines from the first on (no blank ones)
        self._candidates: tuple[tuple[str, ...], ...] = ()  # MATCHING: the statements it may be
        self._partial: list[str] = []  # the line being written
        self._partial_chars = 0
        self._forwarding = False  # its start went into the preview already
        self._held: list[str] = []  # every piece not shown, in order
        self.shown: list[str] = []  # every piece shown, in order
        self.held_lines: tuple[int, int] | None = None  # the file's definition a HOLD item will replace

    @property
    def held(self) -> str:
        """The code not shown in the preview."""
        return "".join(self._held)

    def feed(self, chunk: str) -> str:
        out: list[str] = []
        at = 0
        while at < len(chunk):
            end = chunk.find("\n", at)
            piece = chunk[at:] if end < 0 else chunk[at : end + 1]
            at += len(piece)
            self._partial.append(piece)
            self._partial_chars += len(piece)
            if self._forwarding:
                out.append(piece)
            elif (place := self._early_place()) is not None:
                self._forwarding = True
                if place == "start":  # the next item begins with this line, and is shown
                    self._end_item(out)
                    lead, self._pending = self._pending, []
                    self._item, self._item_chars, self._whole = [], 0, None
                    self._mode, self.held_lines = _Mode.SHOW, None
                else:  # a line of the current (shown) item: blank lines above it are too
                    lead, self._pending = self._pending, []
                for line in lead:
                    self._add(line)
                out += lead
                out.append("".join(self._partial))
            if end >= 0:
                line = "".join(self._partial)
                forwarded, self._partial, self._forwarding = self._forwarding, [], False
                self._partial_chars = 0
                if forwarded:
                    self._add(line)
                else:
                    self._line(line, out)
        self.shown += out
        return "".join(out)

    def finish(self) -> None:
        """The fence closed: what is still undecided was not shown (the merge places it)."""
        if self._partial and not self._forwarding:
            self._held.append("".join(self._partial))
        self._partial, self._partial_chars = [], 0
        self._held += self._pending + self._waiting
        self._pending, self._waiting = [], []
        self.held_lines = None

    def _early_place(self) -> str | None:
        """Whether the line being written is sure to be shown before it ends, so that its
        start goes into the preview now (its ghost shows): "join" for a line of the current
        item, which is shown; "start" for the first line of a next item sure to be shown;
        None while that is not known yet (it is decided when the line ends)."""
        first = self._partial[0][:1]
        if first in (" ", "\t"):  # indented: a line of the current item
            shown = self._mode is _Mode.SHOW and any(part.strip() for part in self._partial)
            return "join" if shown else None
        if self._partial_chars > MAX_HEAD_CHARS:
            return None
        sure = self._new_item_shown("".join(self._partial))
        if self._mode is not None and not self._whole_item():  # inside the item above, as far as can be told
            return "join" if sure and self._mode is _Mode.SHOW else None
        return "start" if sure else None

    def _new_item_shown(self, text: str) -> bool:
        """Whether an item beginning with ``text`` (a line still being written) will be shown
        whatever the rest of the line: not the head of a definition the file has, not the
        beginning of one of its statements, not a decorator, a comment or `else:`."""
        token = _FIRST_TOKEN.match(text)
        if token is None:
            return False  # the first word is not written yet, or the line starts otherwise
        word, rest = token.group(1), text[token.end() :].lstrip(" \t")
        name: str | None = None
        if word in ("def", "class", "async"):
            head = _DEFINITION_NAME.match(text)
            if head is None:
                return False
            name = head.group(1)
        elif keyword.iskeyword(word):  # `import ...`, `for ...`: a statement
            if word in ("else", "elif", "except", "finally") or not rest:
                return False
        elif not rest or rest == "=":
            return False  # `NAME =` or `NAME ==`: the next character tells
        elif rest[0] == ":" or (rest[0] == "=" and rest[1] != "="):
            name = word
        existing = self._existing()
        if existing is None:
            return True
        if name is not None:
            return name not in existing.definitions
        return not any(lines[0].startswith(text.rstrip()) for lines in existing.statements)

    def _line(self, line: str, out: list[str]) -> None:
        blank = not line.strip()
        at_column_0 = not blank and line[:1] not in (" ", "\t")
        comment = at_column_0 and line.startswith("#")
        if self._mode is None:
            if blank or comment:
                self._pending.append(line)
            else:
                self._start_item(line, out)
        elif (blank or comment) and self._whole_item():
            self._pending.append(line)
        elif at_column_0 and not continues_statement(line) and (
            self._whole_item() or (self._mode is _Mode.SHOW and self._would_hold(line))
        ):
            self._end_item(out)
            self._start_item(line, out)
        else:
            lines, self._pending = [*self._pending, line], []
            for one in lines:
                self._add(one)
                self._route(one, out)

    def _would_hold(self, line: str) -> bool:
        """Whether a line at column 0 would start an item the preview holds. Inside a shown
        item that is not whole (an open bracket or string, or code that does not parse) it
        starts one all the same: a line that reads as a copy of the file's is not shown,
        whatever it turns out to be (the merge, at the end, reads the whole code)."""
        existing = self._existing()
        if existing is None or line.startswith("@"):
            return False
        name = head_name(line)
        first = line.rstrip()
        return (name is not None and name in existing.definitions) or any(
            lines[0] == first for lines in existing.statements
        )

    def _start_item(self, line: str, out: list[str]) -> None:
        lead, self._pending = self._pending, []
        self._item, self._item_chars, self._whole = [], 0, None
        existing = self._existing()
        name = head_name(line)
        if line.startswith("@"):
            self._mode = _Mode.UNDECIDED
        elif existing is not None and name is not None and name in existing.definitions:
            self._mode, self.held_lines = _Mode.HOLD, existing.definitions[name]
        else:
            self._matched = [line.rstrip()]
            statements = existing.statements if existing is not None else ()
            self._candidates = tuple(lines for lines in statements if lines[0] == self._matched[0])
            self._mode = _Mode.MATCHING if self._candidates else _Mode.SHOW
        for one in [*lead, line]:
            self._add(one)
            self._place(one, out)

    def _place(self, line: str, out: list[str]) -> None:
        if self._mode is _Mode.SHOW:
            out.append(line)
        elif self._mode is _Mode.HOLD:
            self._held.append(line)
        else:
            self._waiting.append(line)

    def _route(self, line: str, out: list[str]) -> None:
        """A further line of the current item: placed by the item's mode, which it may decide."""
        self._place(line, out)
        if self._mode is _Mode.UNDECIDED and line[:1] not in (" ", "\t") and head_name(line) is not None:
            self._decide(line, out)
        elif self._mode is _Mode.MATCHING and line.strip():
            self._matched.append(line.rstrip())
            seen = len(self._matched)
            self._candidates = tuple(
                lines for lines in self._candidates if len(lines) >= seen and lines[seen - 1] == self._matched[-1]
            )
            if not self._candidates:
                self._release(out)

    def _decide(self, line: str, out: list[str]) -> None:
        """The line a decorated item defines: held if the file defines that name, else shown."""
        existing = self._existing()
        name = head_name(line)
        if existing is not None and name is not None and name in existing.definitions:
            self._mode, self.held_lines = _Mode.HOLD, existing.definitions[name]
            self._held += self._waiting
            self._waiting = []
        else:
            self._release(out)

    def _release(self, out: list[str]) -> None:
        self._mode = _Mode.SHOW
        out += self._waiting
        self._waiting = []

    def _end_item(self, out: list[str]) -> None:
        """The item is over (the next one starts): a MATCHING item that is one of the file's
        statements is dropped; one that stopped short of it is shown after all."""
        if self._mode is _Mode.MATCHING and tuple(self._matched) in self._candidates:
            self._held += self._waiting
            self._waiting = []
        elif self._mode in (_Mode.MATCHING, _Mode.UNDECIDED):
            self._release(out)
        self.held_lines = None

    def _add(self, line: str) -> None:
        self._item.append(line)
        self._item_chars += len(line)
        self._whole = None

    def _whole_item(self) -> bool:
        if self._item_chars > MAX_ITEM_CHARS:
            return False
        if self._whole is None:
            self._whole = is_complete("".join(self._item))
        return self._whole


def read_existing(text: str) -> TopLevel | None:
    """The top level of ``text`` for `FenceLines` (None: not valid Python)."""
    parsed = parse_python(text)
    if parsed is None:
        return None
    definitions: dict[str, tuple[int, int]] = {}
    statements: list[tuple[str, ...]] = []
    for item in parsed.items:
        if item.kind is ItemKind.DEFINITION:
            definitions[item.key] = (item.start + 1, item.stop)
        elif item.kind is ItemKind.STATEMENT:
            lines = tuple(line.rstrip() for line in parsed.lines[item.start : item.stop] if line.strip())
            if lines:
                statements.append(lines)
    return TopLevel(definitions, tuple(statements))
