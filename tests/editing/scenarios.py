"""Hypothesis strategies: a workspace file and a stream of blocks that edit it.

Each scenario knows what its blocks must do without asking the engine: the file's lines
are all different (even ignoring indentation), every edit replaces a run of lines the
generator picked, and new text only repeats lines of the run it replaces, so every block
has exactly one place to go. The expected files are spliced by hand as the blocks are
drawn; `states[n]` are the files once the first `n` blocks are done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

from hypothesis import strategies as st

from .support import Block, build_stream

MAIN = "a.py"
NEW_FILE = "new.py"
MISSING = "gone.py"  # never exists: an edit to it fails and changes nothing

POOL = [
    "def handler(request):",
    "    return None",
    "",
    "    value = compute(1)",
    "    name = 'çà et là 🎉'",
    "class Widget:",
    "    pass",
    "}",
    "x = 1",
    "    # note",
]

pool_line = st.sampled_from(POOL)
numbered_line = st.builds("line_{} = {}".format, st.integers(0, 60), st.integers(0, 9))


def same_ignoring_blanks(line: str) -> str:
    return " ".join(line.split())


@dataclass(frozen=True)
class Scenario:
    files: dict[str, str]
    blocks: list[Block]
    stream: str
    ends: list[int]
    states: list[dict[str, str]] = field(default_factory=list)

    @property
    def expected(self) -> dict[str, str]:
        return self.states[-1]

    def after(self, cut: int) -> dict[str, str]:
        """The files when the stream is cut at `cut`: only complete blocks count."""
        return self.states[sum(1 for end in self.ends if end <= cut)]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _splice(text: str, start: int, stop: int, new: str) -> str:
    """Replace lines [start, stop) of `text` with `new` (the last line may lack its newline)."""
    lines = _lines(text)
    offset = sum(len(line) + 1 for line in lines[:start])
    end = min(len(text), offset + sum(len(line) + 1 for line in lines[start:stop]))
    return text[:offset] + new + text[end:]


class _Drawer:
    """Draws one scenario's blocks, keeping the files as they must be after each one."""

    def __init__(self, draw: st.DrawFn, files: dict[str, str], writes_to_main: bool) -> None:
        self.draw = draw
        self.files = dict(files)
        self.writes_to_main = writes_to_main
        self.fresh = count()

    def fresh_line(self) -> str:
        return f"fresh_{next(self.fresh)} = {self.draw(st.integers(0, 9))}"

    def new_lines(self, keepable: list[str]) -> list[str]:
        """Some of `keepable`, in order, with fresh lines in between."""
        lines = [line for line in keepable if self.draw(st.booleans())]
        for _ in range(self.draw(st.integers(0, 3))):
            lines.insert(self.draw(st.integers(0, len(lines))), self.fresh_line())
        return lines

    def block(self) -> Block:
        main = _lines(self.files[MAIN])
        choice = self.draw(st.integers(0, 9))
        if choice == 0 or not main:
            return self.write()
        if choice == 1:
            old = "".join(line + "\n" for line in main[:1])
            return Block("edit", MISSING, old, "anything = 1\n")
        return self.edit(main)

    def write(self) -> Block:
        path = self.draw(st.sampled_from([MAIN, NEW_FILE] if self.writes_to_main else [NEW_FILE]))
        keepable = _lines(self.files[MAIN]) if path == MAIN else []
        content = "".join(line + "\n" for line in self.new_lines(keepable))
        self.files[path] = content
        return Block("write", path, "", content)

    def edit(self, main: list[str]) -> Block:
        draw = self.draw
        start = draw(st.integers(0, len(main) - 1))
        stop = start + draw(st.integers(1, min(4, len(main) - start)))
        old_lines = main[start:stop]
        if draw(st.integers(0, 4)) == 0:  # a model that got the indentation wrong
            old_lines = [" " + line.strip() for line in old_lines]
        old = "".join(line + "\n" for line in old_lines)
        new = "".join(line + "\n" for line in self.new_lines(main[start:stop]))
        spelling = draw(st.sampled_from(["tags", "tags", "search_replace"]))
        hint = None
        if spelling == "tags" and draw(st.booleans()):
            # Right, or anywhere: a unique match does not need it.
            hint = draw(st.sampled_from([start + 1, draw(st.integers(1, 40))]))
        if old.strip():  # an old_text of blank lines locates nothing: the block fails
            self.files[MAIN] = _splice(self.files[MAIN], start, stop, new)
        return Block("edit", MAIN, old, new, hint, spelling)


@st.composite
def scenarios(
    draw: st.DrawFn, *, writes_to_main: bool = True, newline_at_end: bool = False
) -> Scenario:
    lines = draw(
        st.lists(st.one_of(pool_line, numbered_line), min_size=3, max_size=20, unique_by=same_ignoring_blanks)
    )
    ends_with_newline = newline_at_end or draw(st.booleans())
    files = {MAIN: "\n".join(lines) + ("\n" if ends_with_newline else "")}
    drawer = _Drawer(draw, files, writes_to_main)
    blocks: list[Block] = []
    states = [dict(files)]
    for _ in range(draw(st.integers(1, 4))):
        blocks.append(drawer.block())
        states.append(dict(drawer.files))
    stream, ends = build_stream(blocks)
    return Scenario(files, blocks, stream, ends, states)
