"""Keeping or undoing one hunk of a turn, in the Pilot without Django (``live.reviews``): while
the turn streams or after it, others' typing kept, a hunk whose lines a person changed since
refused, the model told in its next request. The model is the fake."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc

from spark_ide.editing import workspace_files
from spark_ide.live.events import EditReviewed, EditStatus, ErrorCode
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.turns import CommandKind
from spark_ide.upstream import ToolCall, ToolOutput
from spark_ide.upstream.dialects import EditStyle
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import PilotRig, pilot_rig
from tests.support.waits import eventually

APP = "".join(f"line {n}\n" for n in range(1, 31))
FILES = {"app.py": APP}
TOOLS = PromptStyle(edit_style=EditStyle.APPLY_PATCH)
THREE_HUNKS = (
    "*** Begin Patch\n*** Update File: app.py\n"
    "@@\n line 2\n-line 3\n+line 3 one\n line 4\n"
    "@@\n line 12\n-line 13\n+line 13 two\n line 14\n"
    "@@\n line 22\n-line 23\n+line 23 three\n line 24\n"
    "*** End Patch\n"
)
BLOCKS = (
    '<edit path="app.py">\n<old_text>\nline 3\n</old_text>\n<new_text>\nline 3 one\n</new_text>\n</edit>\n'
    '<edit path="app.py">\n<old_text>\nline 13\n</old_text>\n<new_text>\nline 13 two\n</new_text>\n</edit>\n'
)


def _type(doc: Doc[Any], at_text: str, text: str, origin: str = "bob") -> None:
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin=origin):
        ytext.insert(str(ytext).index(at_text), text)  # (ASCII: characters are bytes)


def _review(rig: PilotRig, turn: str, decision: str, block: int | None = None, author: str = "ada") -> None:
    rig.command(CommandKind.REVIEW, turn=turn, block=block, decision=decision, author=author)


def _outputs(request: object) -> list[ToolOutput]:
    return [item for item in getattr(request, "input", ()) if isinstance(item, ToolOutput)]


async def _applied(rig: PilotRig, turn: str, block: int) -> None:
    await rig.published.until(EditStatus, lambda e: e.turn == turn and e.block == block and e.state == "applied")


async def test_hunk_two_undone_while_hunk_three_streams_and_the_next_round_is_told() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("change three lines")
        stream = await rig.model.next_stream()
        cut = THREE_HUNKS.index("+line 23 three") + len("+line 23 th")
        call = ToolCall(call_id="call_1", name="apply_patch", kind="custom", input=THREE_HUNKS)
        calls = play_tool_call(stream, call, [THREE_HUNKS[:cut]], finish=False)
        await _applied(rig, turn, 1)
        _type(rig.doc, "line 18\n", "# bob types here\n")  # someone else, meanwhile
        _review(rig, turn, "undo", block=1)
        reviewed = await rig.published.until(EditReviewed)
        assert (reviewed.turn, reviewed.block, reviewed.path, reviewed.decision, reviewed.by) == (
            turn, 1, "app.py", "undone", "ada",
        )
        undone = rig.published.of(EditStatus, turn)[-1]
        assert (undone.block, undone.state, undone.detail["reason"]) == (1, "rolled_back", "undone")
        assert rig.published.index(undone) < rig.published.index(reviewed)
        assert "line 13 two" not in rig.texts()["app.py"]

        calls.delta("call_1", THREE_HUNKS[cut:])
        calls.finish("call_1", THREE_HUNKS)
        stream.complete(None)
        second = await rig.model.next_stream()
        [output] = _outputs(rig.model.requests[1])
        assert "ada undid hunk 2 of app.py in turn" in output.output
        assert "Do not apply it again" in output.output
        second.complete(None)
        await rig.finished(turn)
        expected = (
            APP.replace("line 3\n", "line 3 one\n").replace("line 23\n", "line 23 three\n")
            .replace("line 18\n", "# bob types here\nline 18\n")
        )
        assert rig.texts()["app.py"] == expected
        assert not rig.replies


async def test_an_undo_after_the_turn_is_in_the_next_turn_s_ledger() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change two lines")
        stream = await rig.model.next_stream()
        stream.delta(BLOCKS)
        stream.complete(None)
        await rig.finished(turn)
        _review(rig, turn, "keep", block=0)
        _review(rig, turn, "undo", block=1, author="bob")
        await eventually(lambda: len(rig.published.of(EditReviewed)) == 2)
        assert [(e.block, e.decision, e.by) for e in rig.published.of(EditReviewed)] == [
            (0, "kept", "ada"), (1, "undone", "bob"),
        ]
        assert rig.texts()["app.py"] == APP.replace("line 3\n", "line 3 one\n")
        rig.prompt("go on")
        await rig.model.next_stream()
        asked = str(rig.model.requests[1].input[-1])
        assert "block 1 <edit> app.py: undone (undone by bob: it is not in the file; do not apply it again" in asked
        assert "block 0 <edit> app.py lines 3-3: applied" in asked


async def test_an_undone_hunk_of_an_older_turn_is_told_in_the_next_request() -> None:
    async with pilot_rig(FILES) as rig:
        first = rig.prompt("change two lines")
        stream = await rig.model.next_stream()
        stream.delta(BLOCKS)
        stream.complete(None)
        await rig.finished(first)
        second = rig.prompt("nothing")
        stream = await rig.model.next_stream()
        stream.delta("Nothing to change.")
        stream.complete(None)
        await rig.finished(second)
        _review(rig, first, "undo", block=0)
        await rig.published.until(EditReviewed)
        rig.prompt("go on")
        await rig.model.next_stream()
        asked = str(rig.model.requests[2].input[-1])
        assert "people undid some of your earlier edits" in asked
        assert f"ada undid block 0 (app.py) in turn {first}" in asked


async def test_an_undo_over_a_person_s_later_edit_is_refused_and_nothing_changes() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change two lines")
        stream = await rig.model.next_stream()
        stream.delta(BLOCKS)
        stream.complete(None)
        await rig.finished(turn)
        _type(rig.doc, "line 13 two\n", "# carol's line\n", origin="carol")
        before = rig.texts()
        _review(rig, turn, "undo", block=1)
        await eventually(lambda: bool(rig.replies))
        [error] = rig.replies
        assert error.code == ErrorCode.HUNK_CONFLICT and error.ref == turn
        assert "were changed since it applied" in error.message
        assert rig.texts() == before and not rig.published.of(EditReviewed)
        # Undo all: the block nobody touched goes, the other is refused and stays.
        _review(rig, turn, "undo")
        await rig.published.until(EditReviewed)
        await eventually(lambda: len(rig.replies) == 2)
        assert rig.replies[1].code == ErrorCode.HUNK_CONFLICT
        assert rig.texts()["app.py"] == APP.replace("line 13\n", "# carol's line\nline 13 two\n")


async def test_bad_requests_get_clear_errors_and_change_nothing() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change two lines")
        stream = await rig.model.next_stream()
        stream.delta(BLOCKS)
        stream.complete(None)
        await rig.finished(turn)
        before = rig.texts()
        _review(rig, "f00dfeedbeef", "undo", block=0)  # a turn of another room, or none
        _review(rig, turn, "undo", block=7)
        _review(rig, turn, "keep")  # keep all: both
        _review(rig, turn, "keep")  # nothing left
        _review(rig, turn, "undo", block=0)
        await eventually(lambda: len(rig.replies) == 4)
        assert [(e.code, e.ref) for e in rig.replies] == [(ErrorCode.HUNK_UNAVAILABLE, "f00dfeedbeef")] + [
            (ErrorCode.HUNK_UNAVAILABLE, turn)] * 3
        messages = [e.message for e in rig.replies]
        assert "turn f00dfeedbeef has no blocks to review in this room" in messages[0]
        assert f"turn {turn} has no block 7" in messages[1]
        assert "no applied block waiting" in messages[2]
        assert "was already kept by ada" in messages[3]
        assert rig.texts() == before
        assert [e.decision for e in rig.published.of(EditReviewed)] == ["kept", "kept"]


async def test_after_a_checkpoint_s_code_is_put_back_a_hunk_is_no_longer_undone_alone() -> None:
    from spark_ide.live.events import CheckpointRestored

    async with pilot_rig(FILES) as rig:
        first = rig.prompt("change two lines")
        stream = await rig.model.next_stream()
        stream.delta(BLOCKS)
        stream.complete(None)
        await rig.finished(first)
        await eventually(lambda: len(rig.store.checkpoints) == 1)
        before_first = rig.store.checkpoints[0].checkpoint.id
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=before_first, code=True)
        await rig.published.until(CheckpointRestored)
        assert rig.texts() == FILES
        _review(rig, first, "undo", block=0)
        await eventually(lambda: bool(rig.replies))
        [error] = rig.replies
        assert error.code == ErrorCode.HUNK_UNAVAILABLE
        assert "a checkpoint's files were put back" in error.message
        assert rig.texts() == FILES and not rig.published.of(EditReviewed)
