from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing import EditStreamParser
from spark_ide.editing.parse_events import BlockBroken, BlockClosed, BlockOpened, ParseEvent, ProseText
from spark_ide.editing.parser import _plain_lines
from spark_ide.editing.preamble import LineKind, classify

from .support import chunk, merged

FRAGMENTS = [
    "<edit",
    ' path="a.py">',
    " path=b>",
    "<edit>",
    "<old_text>",
    '<old_text line="3">',
    "</old_text>",
    "<new_text>",
    "</new_text>",
    "</edit>",
    "<write path='c.txt'>",
    "</write>",
    "<<<<<<< SEARCH",
    "=======",
    ">>>>>>> REPLACE",
    "a.py",
    "`src/b.py`:",
    "```",
    "```python",
    "\n",
    "\n",
    "\r\n",
    " ",
    "\t",
    "<",
    ">",
    "/",
    "x = 1",
    " " * 40,
    "=======" + " " * 30,
    "é",
    "🎉",
]

tag_soup = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join)
random_text = st.one_of(
    tag_soup,
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda raw: raw.decode("utf-8", errors="replace")),
)
cuts = st.lists(st.integers(min_value=0, max_value=10_000), max_size=40)


def run(chunks: list[str], fence_path: str | None = None) -> list[ParseEvent]:
    parser = EditStreamParser(fence_path=fence_path)
    events: list[ParseEvent] = []
    for piece in chunks:
        events += parser.feed(piece)
    events += parser.finish()
    return merged(events)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fence_path", [None, "main.py"])
@settings(max_examples=400, deadline=None)
@given(text=random_text, cut_points=cuts)
def test_it_never_raises_and_ignores_how_the_text_is_chunked(
    fence_path: str | None, text: str, cut_points: list[int]
) -> None:
    whole = run([text], fence_path)
    assert run(chunk(text, cut_points), fence_path) == whole


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@pytest.mark.parametrize("fence_path", [None, "main.py"])
@given(text=random_text)
def test_it_ends_every_opened_block_exactly_once(fence_path: str | None, text: str) -> None:
    events = run(list(text), fence_path)
    opened = [e.index for e in events if isinstance(e, BlockOpened)]
    ended = [e.index for e in events if isinstance(e, (BlockClosed, BlockBroken))]
    assert opened == ended
    assert opened == list(range(len(opened)))


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(text=random_text, cut_points=cuts)
def test_text_that_opens_no_block_is_all_prose_unchanged(text: str, cut_points: list[int]) -> None:
    events = run(chunk(text, cut_points))
    if not any(isinstance(e, BlockOpened) for e in events):
        assert "".join(e.text for e in events if isinstance(e, ProseText)) == text


def plain_lines_one_by_one(buffer: str) -> int:
    """How much of ``buffer`` is complete prose lines, asked of each line as the parser's line
    start does (no ``<`` at its start, ``classify`` says OTHER): the definition ``_plain_lines``
    must keep, however it finds them."""
    start = 0
    newline = buffer.find("\n")
    while newline >= 0:
        line = buffer[start:newline]
        if line.startswith("<") or classify(line) is not LineKind.OTHER:
            break
        start = newline + 1
        newline = buffer.find("\n", start)
    return start


LINE_PIECES = ["a", "bc", " ", "\t", "\r", "\u00a0", "\x0b", "<", "`", "```", "*", "**", ":", "/", ".", "é", "\n", "\n"]


@settings(max_examples=600, deadline=None)
@given(text=st.one_of(st.lists(st.sampled_from(LINE_PIECES), max_size=60).map("".join), st.text(max_size=200)))
def test_plain_lines_are_what_the_line_by_line_test_takes(text: str) -> None:
    assert _plain_lines(text, text.find("\n")) == plain_lines_one_by_one(text)


def test_a_long_line_that_is_no_plain_prose_costs_one_scan() -> None:
    """A line of 10^6 characters with blanks all over that ends with ':' (so the line-by-line
    test reads it): the fast scan gives it up in linear time, not per blank."""
    line = "word " * 200_000 + "end:"
    text = line + "\nnext one\n`held.py`\n"
    assert _plain_lines(text, len(line)) == text.index("`")  # (classify: too long to hold), then a path line
