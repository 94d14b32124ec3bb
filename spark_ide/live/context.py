"""What a request carries of the workspace, named: @-mentions, symbols, and the report of a
packing (docs/pairing.md "Mentions and the context strip").

A mention is ``path`` (the whole file) or ``path:name`` (a Python top-level definition of it,
as ``editing.pystructure`` reads the file: its source only). The packer (``prompting._pack``)
puts mentions first; what it did is a ``Packing``: the files shown whole, the one cut short,
those left out for the budget, the symbols shown, the mentions skipped (no such file, no such
symbol) and the files the person took out (``exclude``). ``context_payload`` makes it the
``context`` object of the ``context`` and ``turn.context`` events: paths and line numbers,
never the files' text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spark_ide.editing.pystructure import ItemKind, parse_python

__all__ = [
    "MAX_EXCLUDED",
    "MAX_MENTIONS",
    "Mention",
    "Packing",
    "Symbol",
    "context_payload",
    "read_mention",
    "symbol_source",
    "symbols_of",
]

MAX_MENTIONS = 20  # mentions in one prompt, at most
MAX_EXCLUDED = 200  # files taken out of one prompt's context, at most


@dataclass(frozen=True, slots=True)
class Symbol:
    """A Python top-level definition: ``kind`` class / function / name; lines 1-based,
    ``last`` included (decorators are part of it)."""

    name: str
    kind: str
    first: int
    last: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "first": self.first, "last": self.last}


def symbols_of(text: str) -> tuple[Symbol, ...]:
    """The top-level definitions of a Python file (none when it is not valid Python)."""
    parsed = parse_python(text)
    if parsed is None:
        return ()
    symbols = []
    for item in parsed.items:
        if item.kind is not ItemKind.DEFINITION:
            continue
        head = next((line.lstrip() for line in parsed.lines[item.start : item.stop] if not line.startswith("@")), "")
        kind = "class" if head.startswith("class") else "function" if head.startswith(("def", "async")) else "name"
        symbols.append(Symbol(item.key, kind, item.start + 1, item.stop))
    return tuple(symbols)


def symbol_source(text: str, name: str) -> tuple[Symbol, str] | None:
    """The definition ``name`` of a Python file and its source (None: no such one)."""
    for symbol in symbols_of(text):
        if symbol.name == name:
            lines = text.splitlines(keepends=True)[symbol.first - 1 : symbol.last]
            return symbol, "".join(lines)
    return None


@dataclass(frozen=True, slots=True)
class Mention:
    """``text`` as the person wrote it (without the ``@``); ``symbol`` None: the whole file."""

    text: str
    path: str
    symbol: str | None


def read_mention(text: str, files: Any) -> Mention:
    """``text`` as a mention of the workspace ``files`` (a mapping or set of paths): a file's
    path as it is, else ``path:name`` when ``name`` is an identifier (a path may hold a colon)."""
    if text not in files and ":" in text:
        path, _, name = text.rpartition(":")
        if path and name.isidentifier():
            return Mention(text, path, name)
    return Mention(text, text, None)


@dataclass(frozen=True, slots=True)
class Packing:
    """What a packing of the workspace did (``prompting._pack``)."""

    whole: tuple[str, ...] = ()  # files shown whole, in priority order
    cut: tuple[tuple[str, int, int], ...] = ()  # (path, lines shown, lines in all): its head only
    left_out: tuple[str, ...] = ()  # files (and symbol mentions) not shown: the context budget
    symbols: tuple[tuple[str, str, int, int], ...] = ()  # (mention, path, first, last line) shown
    missing: tuple[tuple[str, str], ...] = ()  # (mention, why): skipped
    excluded: tuple[str, ...] = ()  # files the person took out of the context


def context_payload(
    packing: Packing, *, active: str, mentions: tuple[str, ...], tokens: int, budget: int,
) -> dict[str, Any]:
    """The ``context`` object of the ``context`` and ``turn.context`` events."""
    return {
        "active": active,
        "mentions": list(mentions),
        "whole": list(packing.whole),
        "cut": [{"path": path, "lines": shown, "of": total} for path, shown, total in packing.cut],
        "left_out": list(packing.left_out),
        "symbols": [
            {"mention": mention, "path": path, "first": first, "last": last}
            for mention, path, first, last in packing.symbols
        ],
        "missing": [{"mention": mention, "why": why} for mention, why in packing.missing],
        "excluded": list(packing.excluded),
        "tokens": tokens,
        "budget": budget,
    }
