"""What the model last saw of each file, and what others changed since (issue 31, item 3).

The model sees a file whole when a request's workspace shows it (``prompting.request_showing``)
and when it writes the file itself. Anyone else may change it afterwards: a person typing, a
revert or restore, an HTTP write. ``SeenFiles`` keeps, per file, the text the model last saw;
the next request (a turn's, before "Request:"; a round's, as a message after the tool
outputs) carries for each file changed since by anyone but the model a compact unified diff
(``changes_note``), and one line for a file created or deleted by someone else. A file nobody
changed, or only the model, gets nothing.

The model's own changes are told apart from others' by the turn's editor
(``TurnEditor.take_touched``): a file its blocks touched is the model's alone when its text at
their first touch is the text the model last saw and nobody else changed it while the turn
was on it; then what the model saw becomes the file as it is. Someone else's change before
that first touch is known whole (what the model saw -> the text at the touch) and told alone,
as coming before the model's own edits. A change made while the model's blocks were on the
file cannot be told apart from theirs line by line: the diff then says it holds the model's
own edits as well.

Memory, chosen on purpose: the text itself, not a hash (a diff needs the old text). One copy
of each file the model saw whole, which is at most what fits into one request's workspace
(``PromptStyle.context_tokens``, four characters a token) plus files the model wrote whole; at
a turn's start the strings kept are the very objects of the turn's ``before`` texts, not
copies. A file left out of the workspace or cut short is not "seen" and not kept. Nothing is
kept for a small model (``PromptStyle.tell_changes``), nor across a restart.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from spark_ide.editing.runner import Touch

from .prompting import as_data, path_attribute

PER_FILE_CHARS = 3_000  # of one file's diff, at most
TOTAL_CHARS = 10_000  # of the note, at most (files past it are named, their diffs left out)
LINE_CHARS = 300  # a longer line of a diff is cut
CONTEXT_LINES = 2  # unchanged lines around each change in a diff

HEADING = "Changed by others since you last saw these files (your own edits are not shown):"


@dataclass(frozen=True, slots=True)
class Change:
    """A file changed by someone other than the model since it saw it: ``before`` what the
    model saw (None: it did not know the file), ``after`` the file now (None: deleted);
    ``mixed``: the model changed it too in the meantime (the diff holds its edits as well);
    ``earlier``: someone else's change before the model's own edits of the file, which came
    after it (``after`` is the text they left, which the model then edited)."""

    path: str
    before: str | None
    after: str | None
    mixed: bool = False
    earlier: bool = False


def _lines(text: str) -> str:
    count = text.count("\n") + (not text.endswith("\n") and text != "")
    return "1 line" if count == 1 else f"{count} lines"


def file_diff(before: str, after: str, *, limit: int = PER_FILE_CHARS) -> tuple[str, bool]:
    """A unified diff of ``before`` -> ``after`` (hunks only, no file header), at most
    ``limit`` characters, cut at a line; and whether it is whole."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), n=CONTEXT_LINES,
    )
    body = [line if line.endswith("\n") else line + "\n" for line in list(lines)[2:]]  # without ---/+++
    out: list[str] = []
    size = 0
    for index, line in enumerate(body):
        if len(line) > LINE_CHARS + 1:
            line = line[:LINE_CHARS] + "\u2026\n"
        if size + len(line) > limit:
            out.append(f"\u2026 ({len(body) - index} more lines of this diff left out)\n")
            return "".join(out), False
        out.append(line)
        size += len(line)
    return "".join(out), True


def _describe(change: Change, limit: int) -> tuple[str, bool]:
    """One change as the note tells it, and whether it told all of it."""
    path = change.path
    if change.after is None:
        return f"The user deleted {path}.\n", True
    if change.before is None:
        return f"The user created {path} ({_lines(change.after)}).\n", True
    diff, whole = file_diff(change.before, change.after, limit=limit)
    if change.mixed:
        head = (f"Since you last saw {path}, both you and someone else changed it; the whole change since then, "
                "your own edits included:")
    elif change.earlier:
        head = f"Since you last saw {path}, the user changed it (before your own edits of it, which came after):"
    else:
        head = f"Since you last saw {path}, the user changed it:"
    return f'{head}\n<diff path="{path_attribute(path)}">\n{as_data(diff)}</diff>\n', whole


def changes_note(
    changes: Iterable[Change], *, per_file: int = PER_FILE_CHARS, total: int = TOTAL_CHARS,
) -> tuple[str, tuple[Change, ...]]:
    """What a request says of ``changes`` ("" for none): a heading, then each file by path (an
    ``earlier`` change first); within ``total`` characters (a file past it is named only). And
    the changes it tells whole (what the model knows of the others is still what it saw)."""
    told: list[Change] = []
    parts: list[str] = []
    left_out: list[str] = []
    budget = total
    for change in sorted(changes, key=lambda change: (change.path, not change.earlier)):
        text, whole = _describe(change, min(per_file, budget))
        if len(text) > budget:
            left_out.append(change.path)
            continue
        parts.append(text)
        budget -= len(text)
        if whole:
            told.append(change)
    if left_out:
        parts.append("Also changed by others since you last saw them (too long to show here): "
                     + ", ".join(dict.fromkeys(left_out)) + "\n")
    if not parts:
        return "", ()
    return HEADING + "\n" + "".join(parts), tuple(told)


class SeenFiles:
    """What the model of one room's conversation last saw of each file (see the module
    docstring). ``showed`` after a turn's request, ``absorb`` the model's own changes (a
    turn's end), ``note`` before a request: what others changed since."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}  # path -> the text the model last saw of it
        self._known: set[str] = set()  # paths the model was told of (shown, or named as left out)
        self._mixed: set[str] = set()  # seen files both the model and someone else changed since
        self._earlier: dict[str, list[Change]] = {}  # others' changes the model's edits followed, not told yet
        self._began = False  # a request showed the workspace (before it, nothing changed "since")

    def text(self, path: str) -> str | None:
        """The text the model last saw of ``path`` (None: it did not see it whole)."""
        return self._texts.get(path)

    def showed(self, files: Mapping[str, str], shown: Iterable[str]) -> None:
        """A request went out over the workspace ``files``, showing ``shown`` of them whole."""
        self._known = set(files)
        self._began = True
        for path in shown:
            self._texts[path] = files[path]
            self._mixed.discard(path)

    def absorb(self, now: Mapping[str, str], touched: Mapping[str, Touch]) -> None:
        """The model's blocks ``touched`` these files since the last call (``take_touched``);
        ``now``: the files as they are. A file only the model changed is seen as it is now."""
        for path, touch in touched.items():
            after = now.get(path)
            seen = self._texts.get(path)
            if touch.first != seen and seen is not None and touch.first is not None and not touch.others:
                # Someone else changed it, then the model's blocks touched it: their change is
                # known whole (what the model saw -> the text at its first touch).
                self._earlier.setdefault(path, []).append(Change(path, seen, touch.first, earlier=True))
            elif touch.others or touch.first != seen:  # someone else changed it while the model did
                if path in self._texts:
                    self._mixed.add(path)
                if touch.first is None and after is not None:
                    self._known.add(path)  # the model created it: not someone else's new file
                continue
            if after is None:
                self._texts.pop(path, None)
                self._known.discard(path)
            else:
                self._texts[path] = after
                self._known.add(path)

    def note(self, now: Mapping[str, str], touched: Mapping[str, Touch]) -> str:
        """What the next request says of the files others changed since the model saw them
        ("" for none; ``changes_note``), the model's own changes ``touched`` absorbed first;
        what the model saw is then what it was told."""
        if not self._began:
            return ""
        self.absorb(now, touched)
        changes = [change for earlier in self._earlier.values() for change in earlier]
        for path in sorted(self._known | set(now) | set(self._texts)):
            before, after = self._texts.get(path), now.get(path)
            if path in self._texts:
                if after != before:
                    changes.append(Change(path, before, after, mixed=path in self._mixed))
            elif after is None:
                if path in self._known:
                    changes.append(Change(path, None, None))
            elif path not in self._known:
                changes.append(Change(path, None, after))
        text, told = changes_note(changes)
        for change in changes:
            if change.earlier:
                continue
            if change.after is None:
                self._texts.pop(change.path, None)
            elif change in told and change.before is not None:
                self._texts[change.path] = change.after
            if change in told or change.after is None:
                self._mixed.discard(change.path)
        self._earlier = {
            path: kept for path, earlier in self._earlier.items() if (kept := [c for c in earlier if c not in told])
        }
        self._known = set(now)
        return text
