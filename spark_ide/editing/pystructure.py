"""The top level of a Python file as line spans: what a small model's code merges into.

Each top-level statement becomes an `Item` covering whole lines (decorators included).
Definitions (`def`, `async def`, `class`, a simple `NAME = ...` or `NAME: type = ...`) are
keyed by their name, imports by the names they bind, anything else by its syntax tree, so
two spellings of the same statement compare equal. A comment block right above an item
(column 0, no blank line in between) is its `lead`.

For code still arriving line by line (a fence's preview, `fence.py`): `head_name` reads the
name a top-level line begins to define, `is_complete` whether the text so far is whole
statements, and `continues_statement` whether a line at column 0 still belongs to the
statement above (`else:`, `except:`, ...).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import StrEnum

from spark_ide.editing.lines import split_lines_keeping_ends

# A statement's label in reports is its first line, cut to this many characters.
MAX_LABEL_LENGTH = 60

ImportedName = tuple[str, str, str]  # (module, name, alias); `import a` gives ("a", "", "")


class ItemKind(StrEnum):
    DEFINITION = "definition"
    IMPORT = "import"
    STATEMENT = "statement"


@dataclass(frozen=True, slots=True)
class Item:
    kind: ItemKind
    start: int  # 0-based first line (its first decorator for a decorated definition)
    stop: int  # 0-based line after its last one
    lead: int  # first line of the comment block right above it (`start` when none)
    key: str  # the name of a definition; the dumped tree of anything else
    label: str  # how reports name it
    imports: frozenset[ImportedName] = frozenset()


@dataclass(frozen=True, slots=True)
class PythonFile:
    lines: tuple[str, ...]  # with their line ends
    items: tuple[Item, ...]
    docstring: Item | None  # the module docstring (also the first item)


# `def NAME` / `async def NAME` / `class NAME`, or `NAME = ...` / `NAME: T = ...` (not `==`).
_HEAD = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+([^\W\d]\w*)|([^\W\d]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
# Column-0 lines that go on the compound statement above rather than start one.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")


def head_name(line: str) -> str | None:
    """The name a top-level line starts to define (`def f(`, `class A`, `X = `), if any.
    A guess from the line alone: `parse_python` has the last word once the code is whole."""
    found = _HEAD.match(line)
    if found is None:
        return None
    return found.group(1) or found.group(2)


def continues_statement(line: str) -> bool:
    """Whether a line at column 0 belongs to the statement above (`else:`, `except ...:`)."""
    return _CONTINUATION.match(line) is not None


def is_complete(text: str) -> bool:
    """Whether ``text`` is whole statements (no open bracket, string or block without body)."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def parse_python(text: str) -> PythonFile | None:
    """The file's top-level items, or None when it is not valid Python."""
    if "\r" in text.replace("\r\n", ""):
        return None  # a lone CR ends a line for Python but not for our line numbers
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = tuple(split_lines_keeping_ends(text))
    items: list[Item] = []
    for node in module.body:
        start = min([node.lineno, *(d.lineno for d in _decorators(node))]) - 1
        stop = node.end_lineno or node.lineno
        if items and start < items[-1].stop:
            # Shares a line with the previous statement (`a = 1; b = 2`): one statement.
            last = items.pop()
            items.append(_statement(lines, last.start, stop, last.lead, last.key + ast.dump(node)))
            continue
        lead = _lead(lines, start, items[-1].stop if items else 0)
        items.append(_item(node, lines, start, stop, lead))
    first = module.body[0] if module.body else None
    is_docstring = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    docstring = items[0] if is_docstring and items[0].kind is ItemKind.STATEMENT else None
    return PythonFile(lines, tuple(items), docstring)


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.decorator_list
    return []


def _lead(lines: tuple[str, ...], start: int, floor: int) -> int:
    """Where the comment block right above line `start` begins (a `#!` first line is not one)."""
    lead = start
    while lead > floor and lines[lead - 1].startswith("#") and not (lead == 1 and lines[0].startswith("#!")):
        lead -= 1
    return lead


def _item(node: ast.stmt, lines: tuple[str, ...], start: int, stop: int, lead: int) -> Item:
    name = _defined_name(node)
    if name is not None:
        return Item(ItemKind.DEFINITION, start, stop, lead, name, name)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        label = lines[start].strip()
        return Item(ItemKind.IMPORT, start, stop, lead, ast.dump(node), label, _imported(node))
    return _statement(lines, start, stop, lead, ast.dump(node))


def _statement(lines: tuple[str, ...], start: int, stop: int, lead: int, key: str) -> Item:
    label = lines[start].strip()
    if len(label) > MAX_LABEL_LENGTH:
        label = label[: MAX_LABEL_LENGTH - 1] + "…"
    return Item(ItemKind.STATEMENT, start, stop, lead, key, label)


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.simple:
        return node.target.id
    return None


def _imported(node: ast.Import | ast.ImportFrom) -> frozenset[ImportedName]:
    if isinstance(node, ast.Import):
        return frozenset((alias.name, "", alias.asname or "") for alias in node.names)
    module = "." * node.level + (node.module or "")
    return frozenset((module, alias.name, alias.asname or "") for alias in node.names)


def enclosing_definition(text: str, line: int) -> tuple[int, int] | None:
    """The first and last line (1-based) of the innermost `def` or `class` that holds 1-based
    ``line`` (its decorators included); else of the top-level statement that holds it (a
    multi-line assignment, an `if` block); else ``(line, line)``: the line alone (a blank
    line between statements). None when the text is not valid Python."""
    if "\r" in text.replace("\r\n", ""):
        return None
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    best: tuple[int, int] | None = None
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            stop = node.end_lineno or node.lineno
            if start <= line <= stop and (best is None or start > best[0]):
                best = (start, stop)  # nested definitions start after those around them
    if best is not None:
        return best
    for node in module.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            return (node.lineno, node.end_lineno or node.lineno)
    return (line, line)
