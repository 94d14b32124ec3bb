"""Merging a small model's code into a file that already has content (a plan, no document).

Python (both sides valid): a top-level definition of the code replaces the file's one of
the same name in place (the last one, if the file binds the name several times), or is
added after the file's last top-level definition (at the end when it has none). Imports
the file lacks go after its leading imports. Any other statement of the code (a usage
example such as `print(is_prime(7))`) is added at the end unless the file already has the
same statement. The code's module docstring is left out. Everything else of the file
stays. A definition a person changed while the code streamed (its text is no longer in the
file as it was when the block opened, `original`) is kept as they left it and reported as
a conflict. Otherwise (another language, or either side not valid Python) the code is inserted
at the end, after a blank line, unless the file already contains it.

A plan is a list of `Splice`s on the file's text; the engine applies them as document
changes, so only the changed ranges are touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_ide.editing.pystructure import ImportedName, Item, ItemKind, PythonFile, parse_python

PYTHON_EXTENSIONS = (".py", ".pyi")
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3"})


def is_python(path: str, language: str | None) -> bool:
    """Whether a fence into `path` (opened as ```language) is merged as Python."""
    return path.endswith(PYTHON_EXTENSIONS) or language in PYTHON_LANGUAGES


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What a merge did: by structure (`replaced`, `added`) or by insertion (`inserted`).

    `added` names definitions; imports and other statements are named by their first line.
    `inserted` is False when the file already contained the code, so nothing was inserted.
    """

    replaced: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    inserted: bool | None = None

    @property
    def changed(self) -> bool:
        return bool(self.replaced or self.added or self.inserted)

    def as_dict(self) -> dict[str, object]:
        """The `merge` object of the block's final `edit.status` detail."""
        if self.inserted is not None:
            return {"inserted": self.inserted}
        return {"replaced": list(self.replaced), "added": list(self.added)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MergeReport:
        """A report back from ``as_dict``."""
        if "inserted" in data:
            return cls(inserted=bool(data["inserted"]))
        return cls(
            replaced=tuple(str(name) for name in data.get("replaced") or ()),
            added=tuple(str(name) for name in data.get("added") or ()),
        )

    def describe(self) -> str:
        """A few words for the model's next prompt."""
        if self.inserted is not None:
            return "inserted at the end of the file" if self.inserted else "the file already had this code"
        if not self.changed:
            return "the file already had this code"
        parts = []
        if self.replaced:
            parts.append("replaced " + ", ".join(self.replaced))
        if self.added:
            parts.append("added " + ", ".join(self.added))
        return "merged: " + "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Splice:
    """Replace `text[start:stop]` (code points) of the file with `text`."""

    start: int
    stop: int
    text: str


@dataclass(frozen=True, slots=True)
class MergePlan:
    splices: tuple[Splice, ...]  # ascending, not overlapping
    report: MergeReport
    lines: tuple[int, int] | None  # 1-based lines of the result where the code is
    conflicts: tuple[int, ...] = ()  # 1-based lines of definitions kept because a person changed them


def separator(text: str) -> str:
    """What goes between a file's text and code added at its end: a blank line."""
    if not text or text.endswith("\n\n"):
        return ""
    return "\n" if text.endswith("\n") else "\n\n"


def plan_merge(base: str, code: str, *, python: bool, original: str | None = None) -> MergePlan:
    """How `code` merges into the file text `base` (see the module docstring); `original`:
    the file when the code started, if people may have changed it since."""
    if code and not code.endswith("\n"):
        code += "\n"
    new = parse_python(code) if python else None
    if not base.strip():
        report = _describe(new) if new is not None else MergeReport(inserted=bool(code.strip()))
        lines = (1, code.count("\n")) if code.strip() else None
        return MergePlan((Splice(0, len(base), code),), report, lines)
    old = parse_python(base) if new is not None else None
    if new is None or old is None:
        return _insert(base, code)
    return _Merge(old, new, original).plan()


def _describe(code: PythonFile) -> MergeReport:
    return MergeReport(added=tuple(item.label for item in code.items if item is not code.docstring))


def _insert(base: str, code: str) -> MergePlan:
    body = code.strip("\n")
    at = f"\n{base}\n".find(f"\n{body}\n") if body.strip() else 0  # whole lines only
    if at >= 0:
        first = base.count("\n", 0, at) + 1
        lines = (first, first + body.count("\n")) if body.strip() else None
        return MergePlan((), MergeReport(inserted=False), lines)
    gap = separator(base)
    first = (base + gap).count("\n") + 1
    lines = (first, first + body.count("\n"))
    return MergePlan((Splice(len(base), len(base), gap + code),), MergeReport(inserted=True), lines)


@dataclass(slots=True)
class _Insertion:
    """Items of the code to be inserted together at one line of the file."""

    line: int
    items: list[Item]


class _Merge:
    def __init__(self, old: PythonFile, new: PythonFile, original: str | None) -> None:
        self.old = old
        self.new = new
        self.original = original
        self.offsets = [0]
        for line in old.lines:
            self.offsets.append(self.offsets[-1] + len(line))

    def plan(self) -> MergePlan:
        old, new = self.old, self.new
        defined = {item.key: item for item in old.items if item.kind is ItemKind.DEFINITION}
        statements = {item.key for item in old.items if item.kind is ItemKind.STATEMENT}
        imported: frozenset[ImportedName] = frozenset().union(*(item.imports for item in old.items))
        latest = {item.key: item for item in new.items if item.kind is ItemKind.DEFINITION}
        replaced: list[tuple[Item, Item]] = []
        kept: list[Item] = []  # the file's items that already are what the code has
        changed: list[Item] = []  # the file's definitions a person changed meanwhile
        imports = _Insertion(self._imports_line(), [])
        definitions = _Insertion(self._definitions_line(), [])
        others = _Insertion(len(old.lines), [])
        for item in new.items:
            if item is new.docstring:
                continue
            if item.kind is ItemKind.DEFINITION:
                if latest[item.key] is not item:
                    continue  # the code binds the name again later; that one counts
                current = defined.get(item.key)
                old_text = self._span_text(*self._old_span(current, item)) if current is not None else ""
                if current is None:
                    definitions.items.append(item)
                elif old_text == self._replacement(current, item):
                    kept.append(current)
                elif self.original is not None and old_text not in self.original:
                    changed.append(current)
                else:
                    replaced.append((current, item))
            elif item.kind is ItemKind.IMPORT:
                if not item.imports <= imported:
                    imports.items.append(item)
                    imported |= item.imports
            elif item.key in statements:
                kept.append(next(old_item for old_item in old.items if old_item.key == item.key))
            elif item.key not in {other.key for other in others.items}:
                others.items.append(item)
        return self._assemble(replaced, [imports, definitions, others], kept, changed)

    def _imports_line(self) -> int:
        """After the leading imports; without any, after the docstring or before the first item."""
        items = [item for item in self.old.items if item is not self.old.docstring]
        leading = 0
        while leading < len(items) and items[leading].kind is ItemKind.IMPORT:
            leading += 1
        if leading:
            return items[leading - 1].stop
        if self.old.docstring is not None:
            return self.old.docstring.stop
        return items[0].lead if items else len(self.old.lines)

    def _definitions_line(self) -> int:
        stops = [item.stop for item in self.old.items if item.kind is ItemKind.DEFINITION]
        return stops[-1] if stops else len(self.old.lines)

    def _old_span(self, old: Item, new: Item) -> tuple[int, int]:
        """The lines a new version replaces: with its comment block if the new one brings one."""
        return (old.lead if new.lead < new.start else old.start), old.stop

    def _replacement(self, old: Item, new: Item) -> str:
        text = self._new_text(new)
        if old.stop == len(self.old.lines) and not self.old.lines[-1].endswith("\n"):
            text = text.removesuffix("\n")  # the file ended without a newline; it still does
        return text

    def _new_text(self, item: Item) -> str:
        return "".join(self.new.lines[item.lead : item.stop])

    def _span_text(self, start: int, stop: int) -> str:
        return "".join(self.old.lines[start:stop])

    def _assemble(
        self, replaced: list[tuple[Item, Item]], groups: list[_Insertion], kept: list[Item], changed: list[Item]
    ) -> MergePlan:
        pieces: list[tuple[int, int, str, bool]] = []  # start line, stop line, text, holds more than imports
        for old_item, new_item in replaced:
            start, stop = self._old_span(old_item, new_item)
            pieces.append((start, stop, self._replacement(old_item, new_item), True))
        for group in groups:
            if group.items:
                line = group.line
                text = self._insertion_text(line, group.items)
                pieces.append((line, line, text, group.items[0].kind is not ItemKind.IMPORT))
        pieces.sort(key=lambda piece: (piece[0], piece[1]))
        splices: list[Splice | None] = []
        spans: list[tuple[tuple[int, int], bool]] = []
        shifts: list[tuple[int, int]] = []  # (line of the file, lines the result gains there)
        for start, stop, text, main in pieces:
            body = text.lstrip("\n")
            first = start + sum(shift for _, shift in shifts) + 1 + (len(text) - len(body))
            if start == len(self.old.lines) and not self.old.lines[-1].endswith("\n"):
                first -= 1  # the first newline ends the file's last line
            spans.append(((first, first + body.rstrip("\n").count("\n")), main))
            shifts.append((start, text.count("\n") - self._span_text(start, stop).count("\n")))
            splices.append(narrowed(self._span_text(start, stop), self.offsets[start], text))
        report = MergeReport(
            replaced=tuple(new.key for _, new in replaced),
            added=tuple(item.label for group in groups for item in group.items),
        )
        conflicts: list[int] = []
        for item in changed:
            shift = sum(lines for line, lines in shifts if line <= item.start)
            conflicts.extend(range(item.start + shift + 1, item.stop + shift + 1))
        splices_made = tuple(splice for splice in splices if splice is not None)
        return MergePlan(splices_made, report, _cover(spans, kept), tuple(sorted(conflicts)))

    def _insertion_text(self, line: int, items: list[Item]) -> str:
        """The items' text with blank lines around, as they sit at `line` of the file."""
        lines = self.old.lines
        before: ItemKind | None = None
        if line > 0 and lines[line - 1].strip():
            after_import = any(item.kind is ItemKind.IMPORT and item.stop == line for item in self.old.items)
            before = ItemKind.IMPORT if after_import else ItemKind.DEFINITION
        text = "\n" if line == len(lines) and not lines[-1].endswith("\n") else ""
        for item in items:
            together = before is item.kind and item.kind is not ItemKind.DEFINITION
            if before is not None and not together:
                text += "\n"
            text += self._new_text(item)
            before = item.kind
        if line < len(lines) and lines[line].strip():
            text += "\n"
        return text


def narrowed(old: str, offset: int, new: str) -> Splice | None:
    """The splice without the text both sides share at either end (None: nothing changes)."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return Splice(offset + head, offset + len(old) - tail, new[head : len(new) - tail])


def _cover(spans: list[tuple[tuple[int, int], bool]], kept: list[Item]) -> tuple[int, int] | None:
    """The lines spanning where the code is: what changed (imports only if nothing else did),
    else the file's items that already were the code."""
    chosen = [span for span, main in spans if main] or [span for span, _ in spans]
    if not chosen:
        chosen = [(item.start + 1, item.stop) for item in kept]
    if not chosen:
        return None
    return min(first for first, _ in chosen), max(last for _, last in chosen)
