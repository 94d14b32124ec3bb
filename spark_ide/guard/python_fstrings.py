"""Long f-strings cut into shorter ones before ``ast.parse``, which on Python 3.11 is quadratic in them.

CPython 3.11's parser places each replacement field of an f-string by scanning its string token from the start (the
line breaks before it) and back to the last line break (its column): every field costs the length of the token so
far. A one-line f-string of 40 kB with 4,400 fields took 80 ms to parse, 160 kB 850 ms, a megabyte half a minute or
more, on the event loop, once the statement ended (Python 3.12 tokenizes f-strings and no longer does this).

``split_fstrings`` closes an f-string token after a top-level field once it is ``PIECE`` characters long and opens
another with the same prefix and quotes, on the same line: ``f"a{x}b{y}c"`` becomes ``f"a{x}" f"b{y}c"``. Adjacent
literals are one literal, so the tree is the same (one ``JoinedStr``, the same parts) and its nodes are on the same
lines: only columns after a cut move, and a format spec's own nodes, which 3.11 places where their string token
starts; the rules read the lines of calls and statements. A field is never cut, so one enormous field, or one with
many fields nested in its format spec, still costs what it did.

The cuts follow what 3.11's f-string parser does (``Parser/string_parser.c``): a string token ends as the tokenizer
ends it; in its text, ``{{`` and ``}}`` are braces, a backslash takes the next character along unless that is a brace
(and, outside raw strings, ``\\N{...}`` is a named character), and a field's expression ends at a ``!``, ``:``, ``=``
or ``}`` outside brackets and strings (``!=``, ``==``, ``<=``, ``>=`` are operators), followed by ``=``, a conversion
and a format spec whose fields nest one level. On anything else (code that does not parse: a backslash or ``#`` in
an expression, an unclosed bracket or string, a lone ``}``, fields nested too deeply) that string is left whole: the
parser then decides, as before.
"""

from __future__ import annotations

import re

PIECE = 256  # an f-string token is closed after the first top-level field that ends this far from its start
SPLIT_FROM = 2048  # sources shorter than this are parsed as they are (the longest token costs ~1 ms at worst)

_START = re.compile(r"""#|'''|\"\"\"|'|\"""")  # outside strings: a comment, or a string's opening quotes
_END = {  # from after the opening quotes, the rest of the string token (None: unterminated), as the tokenizer reads it
    "'": re.compile(r"(?:[^'\\\n]|\\.)*+'", re.DOTALL),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*+"', re.DOTALL),
    "'''": re.compile(r"(?:[^'\\]|\\.|'(?!''))*+'''", re.DOTALL),
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*+"""', re.DOTALL),
}
_F_PREFIXES = frozenset({"f", "rf", "fr"})
# Where an f-string's prefix meets its quote (it ends in f or r): without one of these, a source holds no f-string.
_PREFIX_ENDS = tuple(letter + quote for letter in "fFrR" for quote in "'\"")
_LITERAL_STOP = re.compile(r"[{}\\]")  # in an f-string's literal text: the characters that matter
_EXPRESSION_STOP = re.compile(r"""[\\'"()\[\]{}#!:=<>]""")  # in a field's expression
_PAIRS = {")": "(", "]": "[", "}": "{"}


class _Unsure(Exception):
    """The f-string is not one the cuts are sure of (most likely it does not parse): it stays whole."""


def split_fstrings(source: str) -> str:
    """``source`` with every f-string token longer than ``PIECE`` cut into tokens of about that length (the same
    syntax tree, the same lines); ``source`` itself when there is nothing to cut."""
    if not any(mark in source for mark in _PREFIX_ENDS):
        return source  # no f-string at all (most long statements: a literal, a table): a few fast searches
    out: list[str] = []
    done = pos = 0
    while (start := _START.search(source, pos)) is not None:
        quote = start.group()
        if quote == "#":
            pos = source.find("\n", start.end())
            if pos < 0:
                break
            continue
        body = start.end()
        end = _END[quote].match(source, body)
        if end is None:
            break  # unterminated: the parser says so
        pos = end.end()
        stop = pos - len(quote)
        if stop - body <= PIECE:
            continue
        prefix = _prefix(source, start.start())
        if prefix is None or prefix.lower() not in _F_PREFIXES:
            continue
        try:
            cuts = _cuts(source, body, stop, raw="r" in prefix.lower())
        except _Unsure:
            continue
        reopen = f"{quote} {prefix}{quote}"
        for cut in cuts:
            out += (source[done:cut], reopen)
            done = cut
    if not out:
        return source
    out.append(source[done:])
    return "".join(out)


def _prefix(source: str, quote: int) -> str | None:
    """The string prefix before the quote at ``quote`` ("" for none); None when the letters there are a name's
    (``if"..."`` is the keyword and a plain string)."""
    at = quote
    while at > 0 and quote - at < 3 and _name_char(source[at - 1]):
        at -= 1
    if at > 0 and _name_char(source[at - 1]):
        return None
    return source[at:quote]


def _name_char(char: str) -> bool:
    return char.isalnum() or char == "_" or not char.isascii()


def _cuts(source: str, start: int, stop: int, *, raw: bool) -> list[int]:
    """Where to cut the f-string whose text is ``source[start:stop]``: after a top-level field, every ``PIECE``
    characters or so (never at its end)."""
    cuts: list[int] = []
    last = pos = start
    while (found := _LITERAL_STOP.search(source, pos, stop)) is not None:
        char, at = found.group(), found.start()
        if char == "\\":
            pos = _after_backslash(source, at, stop, raw)
        elif at + 1 < stop and source[at + 1] == char:
            pos = at + 2  # "{{" or "}}": a brace in the text
        elif char == "}":
            raise _Unsure  # a lone "}"
        else:
            pos = _field_end(source, at + 1, stop, raw, 0)
            if pos - last >= PIECE and pos < stop:
                cuts.append(pos)
                last = pos
    return cuts


def _after_backslash(source: str, at: int, stop: int, raw: bool) -> int:
    """Past the escape starting at the backslash at ``at`` in an f-string's text."""
    following = source[at + 1] if at + 1 < stop else ""
    if not raw and following == "N":
        if not source.startswith("{", at + 2, stop):
            raise _Unsure
        close = source.find("}", at + 3, stop)
        if close < 0:
            raise _Unsure
        return close + 1  # a named character, "\N{EM DASH}": its braces are not a field's
    if following in ("{", "}"):
        return at + 1  # the brace is a brace: it may start a field ("\{x}" is a backslash and a field)
    return at + 2


def _field_end(source: str, pos: int, stop: int, raw: bool, level: int) -> int:
    """Past the "}" ending the field whose expression starts at ``pos`` (just after its "{"); ``level``: 0 for a
    field of the f-string, 1 for one in a field's format spec."""
    if level >= 2:
        raise _Unsure  # "f-string: expressions nested too deeply"
    brackets: list[str] = []
    while True:
        found = _EXPRESSION_STOP.search(source, pos, stop)
        if found is None:
            raise _Unsure
        char, at = found.group(), found.start()
        pos = at + 1
        if char in "\\#":
            raise _Unsure  # not allowed in an expression (3.11)
        if char in "'\"":
            pos = _string_end(source, at, stop)
        elif char in "([{":
            brackets.append(char)
        elif not brackets and char in "!:}=<>":
            following = source[pos] if pos < stop else ""
            if following == "=" and char in "!=<>":
                pos += 1  # an operator: != == <= >=
            elif char not in "<>":
                break  # the expression ends here
        elif char in ")]}" and (not brackets or brackets.pop() != _PAIRS[char]):
            raise _Unsure  # a closer that closes nothing, or not what is open
    if char == "=":  # "{x=}": the expression's text, then maybe a conversion and a spec
        while at + 1 < stop and source[at + 1] in " \t\n\r\x0b\x0c":
            at += 1
        at += 1
        char = source[at] if at < stop else ""
    if char == "!":
        if at + 2 >= stop or source[at + 1] not in "sra":
            raise _Unsure
        at += 2
        char = source[at]
    if char == ":":
        at = _spec_end(source, at + 1, stop, raw, level + 1)
        char = "}"
    if char != "}":
        raise _Unsure
    return at + 1


def _string_end(source: str, at: int, stop: int) -> int:
    """Past the string starting at the quote at ``at`` inside an expression (no backslash may be in it)."""
    quote = source[at] * 3 if source.startswith(source[at] * 3, at, stop) else source[at]
    close = source.find(quote, at + len(quote), stop)
    if close < 0 or "\\" in source[at:close]:
        raise _Unsure
    return close + len(quote)


def _spec_end(source: str, pos: int, stop: int, raw: bool, level: int) -> int:
    """The "}" ending the format spec from ``pos`` (its fields one level down)."""
    while (found := _LITERAL_STOP.search(source, pos, stop)) is not None:
        char, at = found.group(), found.start()
        if char == "\\":
            pos = _after_backslash(source, at, stop, raw)
        elif char == "}":
            return at
        else:
            pos = _field_end(source, at + 1, stop, raw, level)
    raise _Unsure
