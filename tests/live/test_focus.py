"""A prompt on lines of a file (Ctrl+K, issue 32): the ``range`` field is checked (a clear
error for each bad shape), the server settles it on the file (clamped at its end, with a note
for the people; the cursor's line widened to its block), and the request carries the lines,
their text and the instruction to change only them; a small model gets one sentence. A steer
with no range keeps the steered turn's lines; one with a range moves them."""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.live.events import ErrorCode, LineSpan, QueueState, TurnProse
from spark_ide.live.focus import AskedRange, Focus, settle
from spark_ide.live.messages import MESSAGES, Invalid, Limits, validate
from spark_ide.live.prompting import PromptStyle, TurnInput, build_request
from spark_ide.live.turns import CommandKind
from tests.support.pilot_rig import pilot_rig, prompt_of

APP = "".join(f"line {n}\n" for n in range(1, 11))  # 10 lines and the empty 11th
CODE = "import os\n\n\ndef f(x):\n    y = x * 2\n    return y\n"


def checked(message_type: str, **fields: Any) -> dict[str, Any]:
    return validate(MESSAGES[message_type], {"type": message_type, **fields}, Limits())


def test_a_range_is_a_selection_or_the_cursor() -> None:
    values = checked("prompt", text="faster", range={"path": "a.py", "from_line": 3, "to_line": 5})
    assert values["range"] == AskedRange("a.py", 3, 5)
    assert checked("steer", text="x", range={"path": "a.py", "line": 7})["range"] == AskedRange("a.py", 7, 7, True)
    assert checked("prompt", text="faster")["range"] is None  # optional


@pytest.mark.parametrize(
    ("value", "code", "says"),
    [
        ({"from_line": 1, "to_line": 2}, ErrorCode.MISSING_FIELD, "'range' needs 'path'"),
        ({"path": " ", "line": 2}, ErrorCode.MISSING_FIELD, "'range' needs 'path'"),
        ({"path": "a.py"}, ErrorCode.MISSING_FIELD, "either 'from_line' and 'to_line'"),
        ({"path": "a.py", "from_line": 3}, ErrorCode.MISSING_FIELD, "either 'from_line' and 'to_line'"),
        ({"path": "a.py", "from_line": 1, "to_line": 2, "line": 1}, ErrorCode.BAD_FIELD, "either"),
        ({"path": "a.py", "from_line": -2, "to_line": 4}, ErrorCode.BAD_FIELD, "'range.from_line' must be an integer"),
        ({"path": "a.py", "from_line": 0, "to_line": 4}, ErrorCode.BAD_FIELD, "from 1 to"),
        ({"path": "a.py", "line": True}, ErrorCode.BAD_FIELD, "'range.line' must be an integer"),
        ({"path": "a.py", "from_line": 1, "to_line": "2"}, ErrorCode.BAD_FIELD, "'range.to_line' must be"),
        ({"path": "a.py", "from_line": 9, "to_line": 4}, ErrorCode.BAD_FIELD, "'range.from_line' (9) is after"),
        ({"path": "a" * 600, "line": 1}, ErrorCode.TOO_LONG, "'range.path' is longer"),
        ([1, 2], ErrorCode.BAD_FIELD, "'range' must be an object"),
        ("a.py:1-2", ErrorCode.BAD_FIELD, "'range' must be an object"),
    ],
)
def test_a_bad_range_gets_a_clear_error(value: Any, code: ErrorCode, says: str) -> None:
    with pytest.raises(Invalid) as refused:
        checked("prompt", text="faster", range=value)
    assert (refused.value.code, refused.value.field) == (code, "range")
    assert says in refused.value.message, refused.value.message


def test_settling_clamps_widens_and_notes() -> None:
    files = {"app.txt": APP, "code.py": CODE}
    assert settle(AskedRange("app.txt", 2, 3), files) == (Focus(LineSpan("app.txt", 2, 3), "line 2\nline 3"), "")
    focus, note = settle(AskedRange("app.txt", 9, 40), files)
    assert focus is not None and focus.span == LineSpan("app.txt", 9, 11) and focus.text == "line 9\nline 10\n"
    assert note == "(app.txt:9\u201340 is past the end of the file (11 lines): the prompt is about app.txt:9\u201311.)"
    focus, note = settle(AskedRange("code.py", 5, 5, cursor=True), files)  # the function around the cursor
    assert focus is not None and focus.span == LineSpan("code.py", 4, 6) and note == ""
    assert focus.text == "def f(x):\n    y = x * 2\n    return y"
    assert settle(AskedRange("gone.py", 1, 2), files) == (
        None, "(gone.py is not in the workspace: the prompt goes without its lines.)")


def test_the_request_names_the_lines_their_text_and_to_change_only_them() -> None:
    focus = Focus(LineSpan("code.py", 4, 6), "def f(x):\n    y = x * 2\n    return y")
    turn = TurnInput(text="make it faster", files={"code.py": CODE}, active_path="code.py", focus=focus)
    text = prompt_of(build_request(turn, PromptStyle()))
    section = (
        "The request is about lines 4-6 of code.py:\n"
        '<file path="code.py" lines="4-6">\ndef f(x):\n    y = x * 2\n    return y\n</file>\n'
        "Change only these lines unless the request needs more.\n"
    )
    assert section + "\nRequest: make it faster" in text  # right before the request
    small = PromptStyle.small_model(context_tokens=2500, max_output_tokens=600)
    text = prompt_of(build_request(turn, small))
    assert "Change only lines 4-6 of code.py; keep every other line of the file as it is.\n\nRequest:" in text
    assert 'lines="' not in text  # the small model sees the file whole once


async def test_a_prompt_on_a_range_past_the_end_is_clamped_and_a_steer_keeps_or_moves_it() -> None:
    async with pilot_rig({"app.txt": APP, "code.py": CODE}) as rig:
        turn = rig.prompt("shorter", path="app.txt", range=AskedRange("app.txt", 8, 99))
        started = await rig.started()
        assert started.range == LineSpan("app.txt", 8, 11) and started.range.label() == "app.txt:8\u201311"
        assert "past the end of the file (11 lines)" in rig.published.of(TurnProse, turn)[0].text
        stream = await rig.model.next_stream()
        assert 'lines="8-11">\nline 8\nline 9\nline 10\n</file>' in prompt_of(stream.request)

        rig.steer("even shorter")  # no range: the same lines
        kept = await rig.started(lambda event: event.steered_from == turn)
        assert kept.range == LineSpan("app.txt", 8, 11)
        stream = await rig.model.next_stream()
        assert 'lines="8-11"' in prompt_of(stream.request)

        rig.steer("this one instead", range=AskedRange("code.py", 6, 6, cursor=True))
        moved = await rig.started(lambda event: event.steered_from == kept.turn)
        assert moved.range == LineSpan("code.py", 4, 6)
        stream = await rig.model.next_stream()
        assert "The request is about lines 4-6 of code.py:" in prompt_of(stream.request)


async def test_a_queued_prompt_shows_its_lines_and_keeps_them_when_taken_out_to_steer() -> None:
    async with pilot_rig({"app.txt": APP}) as rig:
        rig.prompt("running")
        await rig.model.next_stream()
        queued = rig.prompt("later", path="app.txt", range=AskedRange("app.txt", 2, 3))
        state = await rig.announced.until(QueueState, lambda event: len(event.items) == 1)
        assert state.items[0].range == LineSpan("app.txt", 2, 3)
        rig.command(CommandKind.QUEUE_STEER, turn=queued)
        started = await rig.started(lambda event: event.turn == queued)
        assert started.range == LineSpan("app.txt", 2, 3)
