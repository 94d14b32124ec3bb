"""A patch hunk that finds nothing in a file someone else changed since the model saw it: the
note shows the file's lines now where the hunk went in what the model saw (``editing.stale``)."""

from __future__ import annotations

from spark_ide.editing.stale import EXCERPT_LINES, LINE_CHARS, changed_under

SEEN = "".join(f"line {n}\n" for n in range(1, 31))


def excerpt(note: str) -> list[str]:
    return note.split("```\n")[1].splitlines()


def test_it_shows_the_lines_now_where_the_hunk_went_in_what_the_model_saw() -> None:
    now = "inserted\n" * 3 + SEEN.replace("line 20\n", "line 20, changed\n")
    note = changed_under("a.py", SEEN, now, (), ("line 19", "line 20", "line 21"))
    assert note.startswith("a.py was changed by someone else since you last saw it")
    assert "Its lines 20-26 now read (where the lines your hunk expects were" in note  # 3 lines further down
    assert excerpt(note) == ["line 17", "line 18", "line 19", "line 20, changed", "line 21", "line 22", "line 23"]


def test_anchors_place_the_old_lines_as_the_patch_engine_does() -> None:
    seen = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    now = seen.replace("def b():\n    return 1", "def b():\n    return 2")
    note = changed_under("m.py", seen, now, ("def b():",), ("    return 1",))
    assert excerpt(note)[-2:] == ["def b():", "    return 2"]  # b's return, not a's


def test_without_the_hunk_s_place_it_shows_the_first_change() -> None:
    now = SEEN.replace("line 5\n", "line five\n")
    note = changed_under("a.py", SEEN, now, (), ("nowhere",))
    assert "where it was changed first" in note and "line five" in excerpt(note)


def test_the_excerpt_is_bounded_and_long_lines_cut() -> None:
    seen = "".join(f"{n}\n" for n in range(100))
    now = "".join(f"{n}{'x' * 1000}\n" for n in range(100))
    note = changed_under("a.py", seen, now, (), [str(n) for n in range(40, 80)])
    lines = excerpt(note)
    assert len(lines) == EXCERPT_LINES and all(len(line) <= LINE_CHARS + 1 for line in lines)


def test_crlf_and_non_ascii_files() -> None:
    seen = "x = 'é'\r\ny = 1\r\n"
    now = "x = 'ü😀'\r\ny = 1\r\n"
    note = changed_under("a.py", seen, now, (), ("x = 'é'",))
    assert excerpt(note) == ["x = 'ü😀'", "y = 1"]


def test_an_emptied_file_is_said_so() -> None:
    assert changed_under("a.py", SEEN, "", (), ("line 1",)).endswith("It is empty now.")
