"""Where a Python statement ends, found one streamed line at a time, and how a lone statement is parsed.

Python's ``tokenize`` decides that a logical line ends at a NEWLINE token: at a line break outside brackets, strings
and backslash continuations. ``tokenize.generate_tokens`` cannot be paused between lines (it pulls them itself), and
re-tokenizing the pending text on every new line is quadratic in a long literal, so ``LogicalLines`` keeps exactly the
state tokenize keeps between lines (bracket depth, the open string's quote, a trailing backslash) and updates it in
one regex pass per line. The statement it hands over is then parsed with ``ast``; a compound statement's header
(``if x:``, ``elif``, ``except E as e:``, a decorator) is parsed inside a minimal scaffold so its expressions are
checked as soon as the header is written, before its body exists.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from spark_ide.guard.python_fstrings import SPLIT_FROM, split_fstrings

_CODE = re.compile(r"""[()\[\]{}#\\]|'''|\"\"\"|'|\"""")
_STRING_END = {
    "'": re.compile(r"\\.?|'"),
    '"': re.compile(r'\\.?|"'),
    "'''": re.compile(r"\\.|'''"),
    '"""': re.compile(r'\\.|"""'),
}
# The same tokens, with a string that closes on its line and holds no backslash taken whole: one match instead of an
# opening quote and a search for its end. Anything else (a comment, a backslash, a quote that does not close so simply,
# a triple quote) is left to the exact loop, from where the fast one stopped.
_FAST = re.compile(r"""[()\[\]{}]|'''|\"\"\"|'[^'\\\n]*'|"[^"\\\n]*"|[#\\'"]""")
_TRIPLES = ("'''", '"""')
_MARKS_ONLY = str.maketrans({chr(code): None for code in range(128) if chr(code) not in "()[]{}#\\'\""})
_OPENERS = frozenset("([{")
_WHOLE: dict[str, bool] = {}  # ``LogicalLines.passes``: a line's brackets and quotes -> a whole logical line?
_WHOLE_MAX = 4096  # patterns remembered at most (a hostile file could make every line's differ)
# Only patterns this short are remembered: code repeats short ones, and a key is kept for the life of the process (a
# minified line's pattern is about as long as the line: 4,096 of those could hold gigabytes).
_WHOLE_LONGEST = 128
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*")
_SOFT_KEYWORDS = frozenset({"match", "case"})


class Statement(NamedTuple):  # one per logical line of a stream: cheaper to make than a frozen dataclass
    """One logical line: its physical lines (no line breaks) and the file line of the first."""

    first_line: int
    lines: tuple[str, ...]
    header: bool  # ends with ":" outside strings and comments: a compound statement waiting for its body

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class LogicalLines:
    """Groups completed physical lines into logical lines, as the tokenizer would."""

    def __init__(self) -> None:
        self._depth = 0
        self._quote: str | None = None
        self._continued = False
        self._last = ""  # the last significant character of the logical line so far
        self._pending: list[str] = []
        self._first_line = 0
        self.open = False  # a logical line has started and not ended (the next physical line continues it)

    def push(self, text: str, number: int) -> bool:
        """Take the next completed line. True: it completed a logical line, which the caller then either ``take``s
        or ``drop``s before the next push (most are dropped unread: no ``Statement`` is made for them). False: a
        blank line, a comment, or the logical line goes on."""
        if not self.open:
            stripped = text.lstrip(" \t\f")
            if not stripped or stripped[0] == "#":
                return False
            self._first_line = number
            self.open = True
        self._pending.append(text)
        self._scan(text)
        return not (self._depth or self._quote is not None or self._continued)

    def finish(self) -> Statement | None:
        """The stream ended: whatever logical line is still open, complete or not."""
        return self.take() if self.open else None

    def take(self) -> Statement:
        """The logical line ``push`` completed (or, from ``finish``, the open one)."""
        statement = Statement(self._first_line, tuple(self._pending), self._last == ":")
        self._depth = 0
        self._quote = None
        self._continued = False
        self.drop()
        return statement

    def drop(self) -> None:
        """Forget the logical line ``push`` completed."""
        self._pending = []
        self.open = False
        self._last = ""

    def _scan(self, text: str) -> None:
        self._continued = False
        if self._quote is not None:
            self._scan_exactly(text, 0)
            return
        if text.isascii() and self._scan_marks(text):
            return
        depth, last, end = self._depth, self._last, 0
        for match in _FAST.finditer(text):
            piece = match.group()
            first = piece[0]
            if first in _OPENERS:
                depth += 1
            elif first in ")]}":
                depth = max(0, depth - 1)
            elif len(piece) == 1 or piece in _TRIPLES:  # not a whole simple string: the exact loop goes on from here
                self._depth, self._last = depth, last
                self._scan_exactly(text, end)
                return
            last, end = first, match.end()  # a bracket, or a string's closing quote
        if end < len(text):  # the code after the last token, if any, ends the line
            tail = text[end:].rstrip()
            if tail:
                last = tail[-1]
        self._depth, self._last = depth, last

    def passes(self, line: str) -> bool:
        """Whether pushing ``line`` now would leave this lexer as it is: no logical line is open and ``line`` is
        blank, a comment, or a whole logical line by itself. A caller that would not read that logical line may then
        skip the push. Decided from the line's brackets and quotes, remembered per distinct pattern of them (code
        repeats a few: ``()``, ``('')``, ``[]``...)."""
        if self.open:
            return False
        stripped = line.lstrip(" \t\f")
        if not stripped or stripped[0] == "#":
            return True
        if not line.isascii():
            return False
        marks = line.translate(_MARKS_ONLY)
        if not marks:
            return True
        if len(marks) > _WHOLE_LONGEST:
            whole = _marks_depth(marks, 0) == 0
        elif (known := _WHOLE.get(marks)) is not None:
            whole = known
        else:
            whole = _marks_depth(marks, 0) == 0
            if len(_WHOLE) < _WHOLE_MAX:
                _WHOLE[marks] = whole
        return whole and not (("'" in marks or '"' in marks) and ("'''" in line or '"""' in line))

    def _scan_marks(self, text: str) -> bool:
        """The commonest lines, fastest: only its brackets and quotes (``str.translate`` drops the rest in C), when
        it has no comment, no backslash, no triple quote and every string closes on it. False: not such a line,
        nothing done."""
        marks = text.translate(_MARKS_ONLY)
        depth = self._depth
        if marks:
            if ("'" in marks or '"' in marks) and ("'''" in text or '"""' in text):
                return False
            after = _marks_depth(marks, depth)
            if after is None:
                return False  # a comment, a backslash or a string left open: the exact loop knows what they mean
            depth = after
        tail = text.rstrip()
        if tail:  # the last significant character: code, a bracket, or a string's closing quote
            self._last = tail[-1]
        self._depth = depth
        return True

    def _scan_exactly(self, text: str, pos: int) -> None:
        size = len(text)
        while pos < size:
            if self._quote is not None:
                pos = self._close_string(text, pos)
                if pos < 0:
                    return
                continue
            match = _CODE.search(text, pos)
            if match is None:
                self._note_code(text[pos:])
                return
            piece = match.group()
            if piece == "#":
                self._note_code(text[pos : match.start()])
                return
            if piece == "\\":
                if match.end() == size:
                    self._note_code(text[pos : match.start()])
                    self._continued = True
                    return
            elif piece in _OPENERS:
                self._depth += 1
                self._last = piece
            elif piece in ")]}":
                self._depth = max(0, self._depth - 1)  # a stray closer: tokenize would fail; do not stay stuck
                self._last = piece
            else:
                self._quote = piece
            pos = match.end()

    def _close_string(self, text: str, pos: int) -> int:
        """Past the end of the open string from ``pos``; -1 if it runs on to the next line."""
        quote = self._quote
        assert quote is not None
        for match in _STRING_END[quote].finditer(text, pos):
            piece = match.group()
            if piece[0] != "\\":
                self._quote = None
                self._last = quote[0]
                return match.end()
            if len(quote) == 1 and piece == "\\":  # backslash at the end of the line: the string goes on
                return -1
        if len(quote) == 1:
            # A one-quote string left open at a line break is a syntax error; end it here, as the tokenizer's error
            # recovery would, so one typo does not swallow the rest of the file.
            self._quote = None
            self._last = quote
        return -1

    def _note_code(self, segment: str) -> None:
        segment = segment.rstrip()
        if segment:
            self._last = segment[-1]


def _marks_depth(marks: str, depth: int) -> int | None:
    """The bracket depth after a line whose brackets and quotes are ``marks`` (in order), from ``depth``; None when
    it holds a comment or a backslash or leaves a string open (or is not so simple: the exact loop decides)."""
    if "#" in marks or "\\" in marks:
        return None
    quote = ""
    for mark in marks:
        if quote:
            if mark == quote:
                quote = ""
        elif mark in _OPENERS:
            depth += 1
        elif mark in ")]}":
            depth = depth - 1 if depth else 0  # a stray closer: as the exact loop does
        else:
            quote = mark
    return None if quote else depth


def parse_statement(statement: Statement) -> tuple[ast.Module, int] | None:
    """The statement's syntax tree and how many scaffold lines precede it; None if it does not parse."""
    first = statement.lines[0].lstrip(" \t\f")
    lines = "\n".join((first, *statement.lines[1:]))
    found = _FIRST_WORD.match(first)
    word = found.group() if found else ""
    prefix, indent, suffix = "", "", ""
    if word in ("elif", "else"):
        prefix = "if 0:\n pass\n"
    elif word in ("except", "finally"):
        prefix = "try:\n pass\n"
    elif word == "case":
        prefix, indent = "match 0:\n", " "
    if statement.header:
        suffix = f"\n{indent} case _: pass" if word == "match" else f"\n{indent} pass"
    elif first.startswith("@"):
        suffix = "\ndef _(): pass"
    tree = _parse(prefix + indent + lines + suffix)
    if tree is None and word in _SOFT_KEYWORDS and (prefix or suffix):
        return _with_offset(_parse(lines), 0)  # `match = ...`, `case(x)`: soft keywords used as names
    return _with_offset(tree, prefix.count("\n"))


def _with_offset(tree: ast.Module | None, offset: int) -> tuple[ast.Module, int] | None:
    return None if tree is None else (tree, offset)


def _parse(source: str) -> ast.Module | None:
    if len(source) >= SPLIT_FROM:
        source = split_fstrings(source)  # 3.11 parses a long f-string in quadratic time: cut it into short ones
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None  # partial or broken code: nothing to report, never an error in the stream
