"""Hypothesis strategies: a workspace file and a stream of blocks that edit it."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from .support import Block, build_stream

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


@dataclass(frozen=True)
class Scenario:
    files: dict[str, str]
    blocks: list[Block]
    stream: str
    ends: list[int]


def _line(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(POOL))
    return f"line_{draw(st.integers(0, 60))} = {draw(st.integers(0, 9))}"


@st.composite
def scenarios(
    draw: st.DrawFn, *, writes_to_main: bool = True, newline_at_end: bool = False
) -> Scenario:
    lines = [_line(draw) for _ in range(draw(st.integers(3, 20)))]
    ends_with_newline = newline_at_end or draw(st.booleans())
    text = "\n".join(lines) + ("\n" if ends_with_newline else "")
    blocks: list[Block] = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)) == 0:
            path = draw(st.sampled_from(["a.py", "new.py"] if writes_to_main else ["new.py"]))
            content = "".join(_line(draw) + "\n" for _ in range(draw(st.integers(0, 5))))
            blocks.append(Block("write", path, "", content))
            continue
        start = draw(st.integers(0, len(lines) - 1))
        count = draw(st.integers(1, min(4, len(lines) - start)))
        old_lines = lines[start : start + count]
        if draw(st.integers(0, 4)) == 0:  # a model that got the indentation wrong
            old_lines = [" " + line.strip() for line in old_lines]
        old = "".join(line + "\n" for line in old_lines)
        new_lines = [
            draw(st.sampled_from(lines[start : start + count]))
            if draw(st.booleans())
            else _line(draw)
            for _ in range(draw(st.integers(0, 5)))
        ]
        spelling = draw(st.sampled_from(["tags", "tags", "search_replace"]))
        with_hint = spelling == "tags" and draw(st.booleans())
        hint = start + 1 if with_hint else None
        blocks.append(
            Block("edit", "a.py", old, "".join(line + "\n" for line in new_lines), hint, spelling)
        )
    stream, ends = build_stream(blocks)
    return Scenario({"a.py": text}, blocks, stream, ends)
