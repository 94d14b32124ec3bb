from __future__ import annotations

from spark_ide.editing import EditStreamParser, FailureReason
from spark_ide.editing.parse_events import (
    BlockBroken,
    BlockClosed,
    BlockKind,
    BlockOpened,
    NewTextChunk,
    OldTextChunk,
    OldTextClosed,
    ParseEvent,
    ProseText,
    WriteChunk,
)

from .support import merged

EDIT = (
    "Here you go.\n"
    '<edit path="src/app.py">\n'
    '<old_text line="12">\n'
    "a = 1\n"
    "</old_text>\n"
    "<new_text>\n"
    "a = 2\n"
    "</new_text>\n"
    "</edit>\n"
    "Bye.\n"
)


def parse(text: str, size: int | None = None) -> list[ParseEvent]:
    parser = EditStreamParser()
    events: list[ParseEvent] = []
    step = size or max(len(text), 1)
    for at in range(0, len(text), step):
        events += parser.feed(text[at : at + step])
    events += parser.finish()
    return merged(events)


def test_it_parses_an_edit_block_into_ordered_events() -> None:
    assert parse(EDIT) == [
        ProseText("Here you go.\n"),
        BlockOpened(0, BlockKind.EDIT, "src/app.py"),
        OldTextChunk(0, "a = 1\n"),
        OldTextClosed(0, 12),
        NewTextChunk(0, "a = 2\n"),
        BlockClosed(0),
        ProseText("Bye.\n"),
    ]


def test_it_gives_the_same_events_when_fed_one_character_at_a_time() -> None:
    assert parse(EDIT, size=1) == parse(EDIT)


def test_it_parses_a_write_block() -> None:
    events = parse('<write path="new.py">\nprint(1)\nprint(2)\n</write>\n')
    assert events == [
        BlockOpened(0, BlockKind.WRITE, "new.py"),
        WriteChunk(0, "print(1)\nprint(2)\n"),
        BlockClosed(0),
    ]


def test_it_numbers_edit_and_write_blocks_together_in_stream_order() -> None:
    text = EDIT + '<write path="b.py">\nx\n</write>\n' + EDIT
    opened = [e for e in parse(text, size=3) if isinstance(e, BlockOpened)]
    assert [(e.index, e.kind) for e in opened] == [
        (0, BlockKind.EDIT),
        (1, BlockKind.WRITE),
        (2, BlockKind.EDIT),
    ]


def test_it_parses_search_replace_with_the_path_on_the_line_before() -> None:
    text = (
        "Change it:\nsrc/app.py\n```python\n<<<<<<< SEARCH\nold line\n=======\n"
        "new line\n>>>>>>> REPLACE\n```\n"
    )
    events = parse(text, size=2)
    assert BlockOpened(0, BlockKind.EDIT, "src/app.py") in events
    assert OldTextChunk(0, "old line\n") in events
    assert OldTextClosed(0, None) in events
    assert NewTextChunk(0, "new line\n") in events
    assert [e for e in events if isinstance(e, ProseText)] == [ProseText("Change it:\n")]


def test_it_reports_no_path_when_search_replace_follows_a_sentence() -> None:
    text = "Here is the fix for it\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
    assert BlockOpened(0, BlockKind.EDIT, None) in parse(text)


def test_it_holds_back_a_possible_tag_prefix_until_resolved() -> None:
    parser = EditStreamParser()
    assert parser.feed("Look at this:\n<ed") == [ProseText("Look at this:\n")]
    assert parser.feed("itor is a word\n") == [ProseText("<editor is a word\n")]


def test_it_releases_a_held_prefix_as_prose_at_stream_end() -> None:
    parser = EditStreamParser()
    assert parser.feed("x = 1\n<wri") == [ProseText("x = 1\n")]
    assert parser.finish() == [ProseText("<wri")]


def test_it_streams_new_text_before_the_line_is_complete() -> None:
    parser = EditStreamParser()
    parser.feed('<edit path="a">\n<old_text>\nx\n</old_text>\n<new_text>\n')
    assert parser.feed("hal") == [NewTextChunk(0, "hal")]
    assert parser.feed("f\n</new") == [NewTextChunk(0, "f\n")]
    assert parser.feed("_text>\n") == [BlockClosed(0)]


def test_it_keeps_a_closing_tag_that_is_not_at_a_line_start_as_content() -> None:
    text = '<write path="a.md">\nuse </write> to end\n</write>\n'
    assert WriteChunk(0, "use </write> to end\n") in parse(text, size=1)


def test_it_ignores_tags_that_do_not_start_a_line() -> None:
    text = 'say <edit path="a.py"> here\n'
    assert parse(text) == [ProseText(text)]


def test_it_accepts_single_quoted_and_unquoted_paths() -> None:
    quoted = parse("<write path='a b.txt'>\nx\n</write>\n")
    bare = parse("<write path=c.txt>\nx\n</write>\n")
    assert BlockOpened(0, BlockKind.WRITE, "a b.txt") in quoted
    assert BlockOpened(0, BlockKind.WRITE, "c.txt") in bare


def test_it_reports_a_missing_path_as_none() -> None:
    assert parse("<write>\nx\n</write>\n")[0] == BlockOpened(0, BlockKind.WRITE, None)


def test_it_accepts_content_on_the_tag_line() -> None:
    text = '<edit path="a">\n<old_text>x\n</old_text>\n<new_text>y\n</new_text>\n</edit>\n'
    events = parse(text)
    assert OldTextChunk(0, "x\n") in events
    assert NewTextChunk(0, "y\n") in events


def test_it_accepts_an_empty_new_text() -> None:
    text = '<edit path="a">\n<old_text>\nx\n</old_text>\n<new_text>\n</new_text>\n</edit>\n'
    events = parse(text, size=1)
    assert not any(isinstance(e, NewTextChunk) for e in events)
    assert BlockClosed(0) in events


def test_it_treats_the_closing_edit_tag_as_optional() -> None:
    text = '<edit path="a">\n<old_text>\nx\n</old_text>\n<new_text>\ny\n</new_text>\nNext.\n'
    events = parse(text)
    assert events[-2:] == [BlockClosed(0), ProseText("Next.\n")]


def test_it_fails_a_block_whose_tags_come_in_the_wrong_order() -> None:
    text = '<edit path="a">\n<new_text>\ny\n</new_text>\n</edit>\nafter\n'
    events = parse(text, size=5)
    assert events[1] == BlockBroken(0, FailureReason.MALFORMED_BLOCK, "expected <old_text>")
    assert isinstance(events[2], ProseText)


def test_it_fails_a_block_missing_new_text() -> None:
    text = '<edit path="a">\n<old_text>\nx\n</old_text>\nsome prose\n'
    events = parse(text)
    broken = [e for e in events if isinstance(e, BlockBroken)]
    assert broken == [BlockBroken(0, FailureReason.MALFORMED_BLOCK, "expected <new_text>")]
    assert events[-1] == ProseText("some prose\n")


def test_it_fails_an_unterminated_block_at_stream_end() -> None:
    for cut in ("<edit path", "<edit path='a'>\n<old", "<write path='a'>\nhal", EDIT[:60]):
        events = parse(cut)
        broken = [e for e in events if isinstance(e, BlockBroken)]
        opened = [e for e in events if isinstance(e, BlockOpened)]
        assert len(broken) == len(opened)
        assert all(e.reason is FailureReason.UNTERMINATED_BLOCK for e in broken)


def test_it_keeps_parsing_after_a_malformed_block() -> None:
    text = '<edit path="a">\ntext\n' + EDIT
    events = parse(text, size=4)
    assert BlockBroken(0, FailureReason.MALFORMED_BLOCK, "expected <old_text>") in events
    assert BlockClosed(1) in events


def test_it_does_not_treat_a_longer_divider_as_the_search_replace_divider() -> None:
    text = "a.py\n<<<<<<< SEARCH\n========\nx\n=======\ny\n>>>>>>> REPLACE\n"
    assert OldTextChunk(0, "========\nx\n") in parse(text, size=1)


def test_it_gives_up_on_an_opening_tag_that_never_closes() -> None:
    text = "<edit " + "x" * 600 + "\nmore\n"
    assert parse(text, size=7) == [ProseText(text)]


def test_it_decides_on_an_overlong_tag_the_same_way_however_it_is_chunked() -> None:
    text = '<write path="' + "x" * 600 + '">\nbody\n</write>\n'
    assert parse(text, size=7) == parse(text) == [ProseText(text)]


def test_it_decides_on_a_marker_with_endless_trailing_blanks_the_same_way_in_any_chunking() -> None:
    text = "a.py\n<<<<<<< SEARCH" + " " * 1000 + "\nx\n"
    assert parse(text, size=3) == parse(text) == [ProseText(text)]


def test_it_drops_blanks_after_an_opening_tag_however_they_arrive() -> None:
    text = '<write path="a">' + " " * 700 + "body\n</write>\n"
    assert parse(text, size=2) == parse(text)
    assert WriteChunk(0, "body\n") in parse(text)
