from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing import EditStreamParser
from spark_ide.editing.parse_events import BlockBroken, BlockClosed, BlockOpened, ParseEvent

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
    "```",
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


def run(chunks: list[str]) -> list[ParseEvent]:
    parser = EditStreamParser()
    events: list[ParseEvent] = []
    for piece in chunks:
        events += parser.feed(piece)
    events += parser.finish()
    return merged(events)


@pytest.mark.timeout(120)
@settings(max_examples=400, deadline=None)
@given(text=random_text, cut_points=cuts)
def test_it_never_raises_and_ignores_how_the_text_is_chunked(
    text: str, cut_points: list[int]
) -> None:
    whole = run([text])
    assert run(chunk(text, cut_points)) == whole


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(text=random_text)
def test_it_ends_every_opened_block_exactly_once(text: str) -> None:
    events = run(list(text))
    opened = [e.index for e in events if isinstance(e, BlockOpened)]
    ended = [e.index for e in events if isinstance(e, (BlockClosed, BlockBroken))]
    assert opened == ended
    assert opened == list(range(len(opened)))
