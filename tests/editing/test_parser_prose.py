"""The prose the parser reports is what a reader should see: no block scaffolding.

A SEARCH/REPLACE block's path line and a code fence wrapping a block belong to the block;
a small model's fenced answer (with a fence path) is a write, flagged `fenced`.
"""

from __future__ import annotations

import pytest

from spark_ide.editing import EditStreamParser
from spark_ide.editing.parse_events import (
    BlockClosed,
    BlockKind,
    BlockOpened,
    ParseEvent,
    ProseText,
    WriteChunk,
)
from spark_ide.editing.preamble import LineKind, classify, fence_language, may_hold, path_in_line

from .support import merged

SIZES = (1, 2, 5, 10_000)

SEARCH_REPLACE = (
    "Change it:\n"
    "src/app.py\n"
    "```python\n"
    "<<<<<<< SEARCH\n"
    "old line\n"
    "=======\n"
    "new line\n"
    ">>>>>>> REPLACE\n"
    "```\n"
    "Done.\n"
)
WRAPPED_EDIT = (
    "Here:\n"
    "```xml\n"
    "\n"
    '<edit path="a.py">\n'
    "<old_text>\nx = 1\n</old_text>\n"
    "<new_text>\nx = 2\n</new_text>\n"
    "</edit>\n"
    "```\n"
    "That is all.\n"
)
SMALL_MODEL = (
    "Here's a function that checks if a number is prime:\n"
    "```python\n"
    "def is_prime(n):\n"
    "    return n > 1\n"
    "```\n"
    "You can use it like this:\n"
    "```python\n"
    "print(is_prime(7))\n"
    "```\n"
)


def parse(text: str, size: int, fence_path: str | None = None) -> list[ParseEvent]:
    parser = EditStreamParser(fence_path=fence_path)
    events: list[ParseEvent] = []
    for at in range(0, len(text), size):
        events += parser.feed(text[at : at + size])
    return merged(events + parser.finish())


def prose(events: list[ParseEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, ProseText)]


@pytest.mark.parametrize("size", SIZES)
def test_a_search_replace_path_line_and_its_fence_are_not_prose(size: int) -> None:
    events = parse(SEARCH_REPLACE, size)
    assert prose(events) == ["Change it:\n", "Done.\n"]
    assert BlockOpened(0, BlockKind.EDIT, "src/app.py") in events


@pytest.mark.parametrize("size", SIZES)
def test_a_fence_around_an_edit_block_is_not_prose(size: int) -> None:
    events = parse(WRAPPED_EDIT, size)
    assert prose(events) == ["Here:\n", "That is all.\n"]
    assert BlockOpened(0, BlockKind.EDIT, "a.py") in events


def test_a_fence_around_a_write_block_is_not_prose() -> None:
    text = '```\n<write path="b.py">\nb = 1\n</write>\n```\nok\n'
    assert prose(parse(text, 3)) == ["ok\n"]


@pytest.mark.parametrize("size", SIZES)
def test_a_code_sample_that_wraps_no_block_stays_prose_exactly(size: int) -> None:
    text = "Example:\n```python\nprint(1)\n```\n\nsrc/app.py\nis the file.\n"
    assert prose(parse(text, size)) == [text]


def test_a_fence_after_an_unwrapped_block_is_prose() -> None:
    block = '<write path="b.py">\nb = 1\n</write>\n'
    events = parse(block + "```python\nb()\n```\n", 4)
    assert prose(events) == ["```python\nb()\n```\n"]


def test_a_path_line_before_an_edit_tag_stays_prose() -> None:
    text = 'src/app.py\n```\n<edit path="src/app.py">\n<old_text>\na\n</old_text>\n<new_text>\nb\n</new_text>\n```\n'
    assert prose(parse(text, 1)) == ["src/app.py\n"]


def test_a_one_word_line_waits_for_the_next_line_then_shows() -> None:
    parser = EditStreamParser()
    assert parser.feed("Done.\n") == []  # may name the file of a SEARCH block
    assert parser.feed("More") == []  # one word so far: it may still be a path line
    assert parser.feed(" words") == [ProseText("Done.\nMore words")]


def test_a_held_line_is_shown_at_the_end_of_the_stream() -> None:
    parser = EditStreamParser()
    assert parser.feed("Bye.\n```") == []
    assert parser.finish() == [ProseText("Bye.\n```")]


def test_the_path_closest_to_the_marker_names_the_file() -> None:
    text = "first.py\n\nsecond.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
    events = parse(text, 3)
    assert BlockOpened(0, BlockKind.EDIT, "second.py") in events
    assert prose(events) == ["first.py\n\n"]


@pytest.mark.parametrize("size", SIZES)
def test_a_small_models_fence_is_a_fenced_write_and_the_rest_is_prose(size: int) -> None:
    events = parse(SMALL_MODEL, size, fence_path="main.py")
    assert events[1] == BlockOpened(0, BlockKind.WRITE, "main.py", fenced=True, language="python")
    assert WriteChunk(0, "def is_prime(n):\n    return n > 1\n") in events
    assert BlockClosed(0) in events
    assert prose(events) == [
        "Here's a function that checks if a number is prime:\n",
        "You can use it like this:\n```python\nprint(is_prime(7))\n```\n",
    ]


def test_with_a_fence_path_a_fence_around_an_edit_block_is_still_only_a_wrapper() -> None:
    events = parse(WRAPPED_EDIT, 2, fence_path="main.py")
    opened = [event for event in events if isinstance(event, BlockOpened)]
    assert opened == [BlockOpened(0, BlockKind.EDIT, "a.py")]
    assert prose(events) == ["Here:\n", "That is all.\n"]


def test_with_a_fence_path_the_fenced_file_starts_at_the_line_after_the_fence() -> None:
    events = parse("main.py\n```\n\n<div>\n```\n", 1, fence_path="main.py")
    assert events[:2] == [ProseText("main.py\n"), BlockOpened(0, BlockKind.WRITE, "main.py", fenced=True)]
    assert WriteChunk(0, "\n<div>\n") in events


def test_with_a_fence_path_a_fence_at_the_very_end_is_prose() -> None:
    assert parse("Sure.\n```python", 1, fence_path="main.py") == [ProseText("Sure.\n```python")]


@pytest.mark.parametrize(
    ("line", "language"),
    [("```python", "python"), ("```", None), ("  ```Python title=x", "python"), ("```{.js}", "js")],
)
def test_a_fence_names_its_language_in_its_first_word(line: str, language: str | None) -> None:
    assert fence_language(line) == language


WHITESPACE = [chr(code) for code in range(0x3100) if chr(code).isspace()]  # every one str knows


@pytest.mark.parametrize("space", WHITESPACE)
def test_a_line_with_any_whitespace_inside_is_no_path_and_not_held(space: str) -> None:
    """A line is a path only when it is one word, whatever character separates two words
    (the check runs in one scan, as ``str.isspace`` defines whitespace)."""
    line = f"src/app.py{space}and more"
    assert path_in_line(line) is None
    assert classify(line) is LineKind.OTHER
    assert not may_hold(line)
    assert path_in_line(f"**src/app.py**:{space}") == "src/app.py"
    assert may_hold(f"{space}src/app.py")


@pytest.mark.parametrize("size", SIZES)
def test_a_paragraph_of_short_lines_passes_whole_and_what_follows_it_still_opens(size: int) -> None:
    """Plain lines go on in one piece; a path line, a fence, a tag or a blank among them is
    still seen at its own line start, as if the lines had come one by one."""
    paragraph = "".join(f"line {i} of the paragraph, words and more words\n" for i in range(40))
    text = paragraph + SEARCH_REPLACE + paragraph + WRAPPED_EDIT + paragraph + "\n\n" + paragraph + "<<x\n"
    events = parse(text, size)
    assert events == parse(text, 1)
    assert prose(events)[0] == paragraph + "Change it:\n"
    assert BlockOpened(0, BlockKind.EDIT, "src/app.py") in events
    assert BlockOpened(1, BlockKind.EDIT, "a.py") in events
    assert "".join(prose(events)).endswith(paragraph + "\n\n" + paragraph + "<<x\n")
