"""The model knows what people changed (issue 31, item 3), in the Pilot without Django: a file a
person changes after the model saw it comes back in the next request as a small diff (a turn's,
before "Request:"; a round's, as a message after the tool outputs); files nobody changed, and
the model's own edits, do not; a patch hunk that finds nothing in a file a person changed says
so, with the file's lines now. A person's edit is a change of the room's document under an
origin of its own, as a page's update is. The model is the fake, which keeps every request."""

from __future__ import annotations

from spark_ide.editing.document import set_file_text
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.seen import HEADING
from spark_ide.upstream import Message, ToolCall, ToolOutput, TurnRequest
from spark_ide.upstream.dialects import EditStyle
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import PilotRig, pilot_rig, prompt_of
from tests.support.waits import eventually

APP = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
FILES = {"app.py": APP, "util.py": "X = 1\nY = 2\n"}
TOOLS = PromptStyle(edit_style=EditStyle.APPLY_PATCH)
FIX_SUB = (
    "*** Begin Patch\n*** Update File: app.py\n@@ def sub(a, b):\n-    return a + b\n+    return a - b\n*** End Patch\n"
)
PERSON = "ada-page"  # the origin of a person's change (any origin not the model's)


def patch_call(call_id: str, patch: str) -> ToolCall:
    return ToolCall(call_id=call_id, name="apply_patch", kind="custom", input=patch)


def person_sets(rig: PilotRig, path: str, text: str | None) -> None:
    set_file_text(rig.doc, path, text, PERSON)


def messages_after_outputs(request: TurnRequest) -> list[str]:
    """The texts of the messages a round's request sends after its tool outputs."""
    return [item.text for item in request.input if isinstance(item, Message)]


async def quiet_turn(rig: PilotRig, prompt: str) -> str:
    """A turn whose answer changes nothing; the prompt its request carried."""
    turn = rig.prompt(prompt)
    stream = await rig.model.next_stream()
    stream.delta("Nothing to change.\n")
    stream.complete(None)
    await rig.finished(turn)
    return prompt_of(rig.model.requests[-1])


async def test_a_person_s_edit_between_turns_comes_as_a_diff_and_untouched_files_get_none() -> None:
    async with pilot_rig(FILES) as rig:
        first = await quiet_turn(rig, "look at sub")
        assert HEADING not in first  # nothing changed before the first request
        person_sets(rig, "app.py", APP.replace("def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b"))
        second = await quiet_turn(rig, "now what?")
        changes = second[second.index(HEADING) : second.index("Request: now what?")]
        assert "Since you last saw app.py, the user changed it:" in changes
        assert '<diff path="app.py">\n' in changes and "-    return a + b\n+    return a - b\n" in changes
        assert "util.py" not in changes  # nobody changed it
        third = await quiet_turn(rig, "and now?")
        assert HEADING not in third  # told once: nothing changed since


async def test_a_person_s_new_and_deleted_files_are_one_line_each() -> None:
    async with pilot_rig(FILES) as rig:
        await quiet_turn(rig, "hello")
        person_sets(rig, "util.py", None)
        person_sets(rig, "notes.md", "one\ntwo\n")
        prompt = await quiet_turn(rig, "again")
        assert "The user deleted util.py.\n" in prompt and "The user created notes.md (2 lines).\n" in prompt
        assert "<diff" not in prompt


async def test_the_model_s_own_edits_bring_no_diff_but_a_person_s_edit_after_them_does() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        play_tool_call(stream, patch_call("call_1", FIX_SUB))
        stream.complete(None)
        last = await rig.model.next_stream()
        assert messages_after_outputs(rig.model.requests[1]) == []  # its own patch is not told back
        last.delta("Done.")
        last.complete(None)
        await rig.finished(turn)
        assert "return a - b" in rig.texts()["app.py"]

        await quiet_turn(rig, "thanks")
        assert HEADING not in prompt_of(rig.model.requests[-1])
        mine = rig.texts()["app.py"].replace("def add(a, b):", "def add(a: int, b: int):")
        person_sets(rig, "app.py", mine)
        prompt = await quiet_turn(rig, "check it")
        diff = prompt[prompt.index('<diff path="app.py">') : prompt.index("</diff>")]
        assert "-def add(a, b):\n+def add(a: int, b: int):\n" in diff
        assert "-    return a + b\n+    return a - b" not in prompt  # the model's own change is not told back


async def test_a_person_s_edit_between_rounds_comes_after_the_tool_outputs() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        play_tool_call(stream, patch_call("call_1", FIX_SUB))
        await eventually(lambda: "return a - b" in rig.texts()["app.py"])
        person_sets(rig, "util.py", "X = 1\nY = 3\n")  # while the round's calls are answered
        stream.complete(None)
        second = await rig.model.next_stream()
        request = rig.model.requests[1]
        assert isinstance(request.input[0], ToolOutput)  # the outputs first, then what changed
        [note] = messages_after_outputs(request)
        assert note.startswith(HEADING) and "Since you last saw util.py, the user changed it:" in note
        assert "-Y = 2\n+Y = 3\n" in note and "app.py" not in note  # the model's own patch is not told
        assert request.full_context[-1] == Message("user", note)

        util = "*** Begin Patch\n*** Update File: util.py\n@@\n X = 1\n-Y = 3\n+Y = 4\n*** End Patch\n"
        play_tool_call(second, patch_call("call_2", util))  # against the file as it was told
        second.complete(None)
        third = await rig.model.next_stream()
        assert messages_after_outputs(rig.model.requests[2]) == []  # nothing changed since but by the model
        assert rig.texts()["util.py"] == "X = 1\nY = 4\n"
        third.complete(None)
        await rig.finished(turn)


async def test_a_person_typing_in_the_file_the_model_writes_is_told_with_the_model_s_edits_included() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        play_tool_call(stream, patch_call("call_1", FIX_SUB))
        await eventually(lambda: "return a - b" in rig.texts()["app.py"])
        person_sets(rig, "app.py", "# typed by ada\n" + rig.texts()["app.py"])
        stream.complete(None)
        second = await rig.model.next_stream()
        [note] = messages_after_outputs(rig.model.requests[1])
        assert "Since you last saw app.py, both you and someone else changed it" in note
        assert "+# typed by ada\n" in note
        second.complete(None)
        await rig.finished(turn)


async def test_a_hunk_against_a_file_a_person_changed_says_so_with_the_current_lines() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        minus = APP.replace("def sub(a, b):\n    return a + b", "def minus(x, y):\n    return x + y")
        person_sets(rig, "app.py", minus)
        play_tool_call(stream, patch_call("call_1", FIX_SUB))  # written against the text it was shown
        stream.complete(None)
        second = await rig.model.next_stream()
        [output] = [item for item in rig.model.requests[1].input if isinstance(item, ToolOutput)]
        assert output.status == "failed" and "hunk 1 failed (no_match)" in output.output
        assert "app.py was changed by someone else since you last saw it" in output.output
        assert "lines 3-6 now read" in output.output
        assert "```\n\n\ndef minus(x, y):\n    return x + y\n```" in output.output, output.output
        # and the person's change comes as a diff too, after the outputs
        [note] = messages_after_outputs(rig.model.requests[1])
        assert "+def minus(x, y):" in note
        second.complete(None)
        await rig.finished(turn)


async def test_a_hunk_that_finds_nothing_in_a_file_nobody_changed_says_nothing_of_changes() -> None:
    wrong = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return a * b\n+    return a ** b\n*** End Patch\n"
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("power")
        stream = await rig.model.next_stream()
        play_tool_call(stream, patch_call("call_1", wrong))
        stream.complete(None)
        second = await rig.model.next_stream()
        [output] = [item for item in rig.model.requests[1].input if isinstance(item, ToolOutput)]
        assert "hunk 1 failed (no_match)" in output.output and "someone else" not in output.output
        second.complete(None)
        await rig.finished(turn)


async def test_a_small_model_is_not_told_diffs() -> None:
    style = PromptStyle.small_model(context_tokens=8000, max_output_tokens=None)
    async with pilot_rig(FILES, style=style) as rig:
        await quiet_turn(rig, "hello")
        person_sets(rig, "util.py", "X = 5\n")
        prompt = await quiet_turn(rig, "again")
        assert HEADING not in prompt and "<diff" not in prompt
        assert '<file path="util.py">\nX = 5\n</file>' in prompt  # it sees the file as it is, as always


async def test_a_revert_by_a_person_is_told_as_their_change() -> None:
    block = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 10\n</new_text>\n</edit>\n'
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("X is 10")
        stream = await rig.model.next_stream()
        stream.delta(block)
        stream.complete(None)
        await rig.finished(turn)
        rig.revert(turn)
        await eventually(lambda: rig.texts()["util.py"] == FILES["util.py"])
        prompt = await quiet_turn(rig, "why?")
        assert "Since you last saw util.py, the user changed it:" in prompt and "-X = 10\n+X = 1\n" in prompt


async def test_a_steer_carries_what_a_person_changed_while_the_model_wrote() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("explain add")
        stream = await rig.model.next_stream()
        stream.delta("add returns")
        await rig.delta_seen(turn, "add returns")
        person_sets(rig, "util.py", "X = 1\nY = 20\n")
        rig.steer("and util.py?")
        await rig.finished(turn)
        steered = await rig.model.next_stream()
        prompt = prompt_of(rig.model.requests[1])
        assert "Since you last saw util.py, the user changed it:" in prompt and "-Y = 2\n+Y = 20\n" in prompt
        assert prompt.index(HEADING) < prompt.index("Request: explain add")  # before the request and its steer
        steered.complete(None)


async def test_a_person_s_edit_before_the_model_s_patch_of_the_file_is_told_alone() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        person_sets(rig, "app.py", "# ada\n" + APP)  # while the model thinks, before its patch
        play_tool_call(stream, patch_call("call_1", FIX_SUB))
        stream.complete(None)
        second = await rig.model.next_stream()
        assert rig.texts()["app.py"] == "# ada\n" + APP.replace("return a + b\n", "return a - b\n").replace(
            "return a - b\n", "return a + b\n", 1)
        [note] = messages_after_outputs(rig.model.requests[1])
        assert "Since you last saw app.py, the user changed it (before your own edits of it" in note
        assert "+# ada\n" in note and "return a - b" not in note  # theirs only, not the model's patch
        second.complete(None)
        await rig.finished(turn)
        assert HEADING not in await quiet_turn(rig, "next")  # told once
