"""Decode one string member of a JSON object while the object's text is still arriving.

A function tool call's arguments stream as JSON fragments (``{"input": "*** Begin Pa``...).
:class:`StringMemberDecoder` turns them into the decoded text of one top-level member (the
patch in ``input``) as it grows, without waiting for the closing brace: escapes split across
fragments, ``\\uXXXX`` and surrogate pairs included. Other members, whatever their values,
are skipped. Lenient where models are: a raw control character inside a string passes
through. Text that is not a JSON object stops the decoding (the whole arguments, parsed at
the end, are what counts then).
"""

from __future__ import annotations

import re
from enum import Enum, auto

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PLAIN = re.compile(r'[^"\\]+')
_WHITESPACE = " \t\r\n"


class _At(Enum):
    START = auto()  # before the object's "{"
    KEY_OR_END = auto()  # before a member's key, a ",", or "}"
    KEY = auto()  # inside a key string
    COLON = auto()
    VALUE = auto()  # before a member's value
    STRING = auto()  # inside a string value
    NESTED = auto()  # inside an object or array value (skipped)
    SCALAR = auto()  # inside a number, true, false or null (skipped)
    AFTER_VALUE = auto()
    END = auto()  # after the object, or given up


class _StringDecoder:
    """The characters of one JSON string, after its opening quote, fed in pieces."""

    def __init__(self) -> None:
        self.escape = ""  # an escape begun and not complete: "\\", "\\u", "\\u00" ...
        self.high = ""  # a high surrogate waiting for the low one that may follow

    def feed(self, text: str, start: int, out: list[str]) -> tuple[int, bool]:
        """Decode from ``text[start:]`` into ``out``; return where it stopped and whether the
        string ended there (the index is then just past the closing quote)."""
        i, n = start, len(text)
        while i < n:
            if self.escape:
                i = self._escape_char(text, i, out)
                continue
            plain = _PLAIN.match(text, i)
            if plain is not None:
                self._emit(plain.group(), out)
                i = plain.end()
                continue
            char = text[i]
            i += 1
            if char == '"':
                self._flush_high(out)
                return i, True
            self.escape = "\\"
        return i, False

    def _escape_char(self, text: str, i: int, out: list[str]) -> int:
        char = text[i]
        if self.escape == "\\":
            if char == "u":
                self.escape = "\\u"
                return i + 1
            self.escape = ""
            self._emit(_ESCAPES.get(char, char), out)
            return i + 1
        take = min(6 - len(self.escape), len(text) - i)
        self.escape += text[i : i + take]
        if len(self.escape) == 6:
            digits, self.escape = self.escape[2:], ""
            try:
                unit = int(digits, 16)
            except ValueError:
                unit = 0xFFFD  # not hex: a broken escape, shown as the replacement character
            self._unit(unit, out)
        return i + take

    def _unit(self, unit: int, out: list[str]) -> None:
        if 0xDC00 <= unit <= 0xDFFF and self.high:
            high, self.high = ord(self.high), ""
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)))
        elif 0xD800 <= unit <= 0xDBFF:
            self._flush_high(out)
            self.high = chr(unit)
        else:
            self._emit(chr(unit), out)

    def _emit(self, text: str, out: list[str]) -> None:
        self._flush_high(out)
        out.append(text)

    def _flush_high(self, out: list[str]) -> None:
        if self.high:  # a lone surrogate stays as it is, as json.loads leaves it
            out.append(self.high)
            self.high = ""


class StringMemberDecoder:
    """Feed the fragments of a JSON object's text; get back, each time, what more is known of
    the (first) top-level member named ``key`` when it is a string."""

    def __init__(self, key: str = "input") -> None:
        self.key = key
        self.found = False  # the member's value has started
        self.complete = False  # the member's closing quote was seen
        self._at = _At.START
        self._string = _StringDecoder()
        self._key: list[str] = []
        self._target = False  # the string being read is the member wanted
        self._depth = 0  # NESTED: brackets open
        self._in_string = False  # NESTED: inside a string
        self._escaped = False  # NESTED: the last character was a backslash

    def feed(self, chunk: str) -> str:
        out: list[str] = []
        i, n = 0, len(chunk)
        while i < n and self._at is not _At.END:
            in_string = self._at in (_At.KEY, _At.STRING)
            i = self._in_string_value(chunk, i, out) if in_string else self._structure(chunk, i)
        return "".join(out)

    def _in_string_value(self, chunk: str, i: int, out: list[str]) -> int:
        if self._at is _At.KEY:
            i, ended = self._string.feed(chunk, i, self._key)
            if ended:
                self._at = _At.COLON
            return i
        sink = out if self._target else []
        i, ended = self._string.feed(chunk, i, sink)
        if ended:
            self.complete = self.complete or self._target
            self._target = False
            self._at = _At.AFTER_VALUE
        return i

    def _structure(self, chunk: str, i: int) -> int:
        char = chunk[i]
        at = self._at
        if at is _At.NESTED:
            self._nested(char)
        elif at is _At.SCALAR:
            if char in ",}":
                self._at = _At.KEY_OR_END if char == "," else _At.END
        elif char in _WHITESPACE:
            pass
        elif at is _At.START:
            self._at = _At.KEY_OR_END if char == "{" else _At.END
        elif at in (_At.KEY_OR_END, _At.AFTER_VALUE):
            self._between_members(char)
        elif at is _At.COLON:
            self._at = _At.VALUE if char == ":" else _At.END
        else:  # VALUE
            self._value_starts(char)
        return i + 1

    def _between_members(self, char: str) -> None:
        if char == "}":
            self._at = _At.END
        elif char == ",":
            self._at = _At.KEY_OR_END
        elif char == '"' and self._at is _At.KEY_OR_END:
            self._key = []
            self._at = _At.KEY
        else:
            self._at = _At.END

    def _value_starts(self, char: str) -> None:
        if char == '"':
            self._target = not self.found and "".join(self._key) == self.key
            self.found = self.found or self._target
            self._at = _At.STRING
        elif char in "{[":
            self._depth, self._in_string, self._escaped = 1, False, False
            self._at = _At.NESTED
        else:
            self._at = _At.SCALAR

    def _nested(self, char: str) -> None:
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
        elif char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._at = _At.AFTER_VALUE
