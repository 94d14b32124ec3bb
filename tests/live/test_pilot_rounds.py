"""The tool loop in the Pilot, without Django: a turn whose responses end with ``apply_patch``
calls applies each patch while it streams, answers every call in the next request of the same
turn (chained on the response, with only the outputs), and ends with a response without calls,
at the round limit, or as any turn ends (stop, steer, revert). The model is the fake."""

from __future__ import annotations

import asyncio

from spark_ide.live.events import EditStatus, TurnFinished, TurnRound, TurnStarted
from spark_ide.live.policy import AiMode, AiPolicy
from spark_ide.live.prompting import PromptStyle
from spark_ide.upstream import ToolCall, ToolOutput, Usage
from spark_ide.upstream.dialects import EditStyle
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import pilot_rig
from tests.support.waits import eventually

FILES = {"app.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"}
TOOLS = PromptStyle(edit_style=EditStyle.APPLY_PATCH)
FIX_SUB = (
    "*** Begin Patch\n*** Update File: app.py\n@@ def sub(a, b):\n-    return a + b\n+    return a - b\n*** End Patch\n"
)
WRONG = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return a * b\n+    return a ** b\n*** End Patch\n"


def patch_call(call_id: str, patch: str) -> ToolCall:
    return ToolCall(call_id=call_id, name="apply_patch", kind="custom", input=patch)


def outputs_of(request: object) -> list[ToolOutput]:
    return [item for item in getattr(request, "input", ()) if isinstance(item, ToolOutput)]


async def test_a_failed_hunk_is_told_to_the_model_which_fixes_it_in_round_two() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        first.delta("Fixing sub.\n")
        play_tool_call(first, patch_call("call_1", WRONG), [WRONG[:30], WRONG[30:]])
        first.complete(Usage(input_tokens=50, output_tokens=20))

        second = await rig.model.next_stream()  # the same turn asks again, with the outputs
        request = rig.model.requests[1]
        assert request.previous_response_id == first.response_id
        [answer] = outputs_of(request)
        assert answer.call.call_id == "call_1" and answer.status == "failed"
        assert "hunk 1 failed" in answer.output and "return a * b" in answer.output, answer.output
        assert [call.call_id for call in request.full_context if isinstance(call, ToolCall)] == ["call_1"]
        [round_two] = rig.published.of(TurnRound, turn)
        assert (round_two.round, round_two.calls, round_two.failed) == (2, 1, 1)

        play_tool_call(second, patch_call("call_2", FIX_SUB), [FIX_SUB[:40], FIX_SUB[40:]])
        second.complete(Usage(input_tokens=80, output_tokens=15))
        third = await rig.model.next_stream()
        [fixed] = outputs_of(rig.model.requests[2])
        assert fixed.status == "completed" and "M app.py" in fixed.output
        third.delta("Done: sub subtracts now.")
        third.complete(Usage(input_tokens=90, output_tokens=5))

        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "answered")
        assert finished.metrics["tokens"] == 40  # every round's output counted
        assert rig.texts()["app.py"].endswith("def sub(a, b):\n    return a - b\n")
        assert len(rig.published.of(TurnStarted)) == 1  # one turn for all its rounds
        states = [(status.block, status.state) for status in rig.published.of(EditStatus, turn)]
        assert (0, "failed") in states and states[-1] == (1, "applied")
        await rig.recorded(turn)
        outcome = rig.store.outcome(turn)
        assert "Done: sub subtracts now." in outcome.output and "Fixing sub." in outcome.output
        assert [entry["outcome"] for entry in outcome.ledger] == ["failed", "applied"]


async def test_a_patch_lands_in_the_file_while_its_call_streams() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        stream = await rig.model.next_stream()
        end = FIX_SUB.index("*** End Patch")
        calls = play_tool_call(stream, patch_call("call_1", FIX_SUB), [FIX_SUB[:end]], finish=False)
        await eventually(lambda: "return a - b" in rig.texts()["app.py"])  # before the call's end
        assert not rig.published.of(TurnFinished, turn)
        calls.delta("call_1", FIX_SUB[end:])
        calls.finish("call_1", FIX_SUB)
        stream.complete(None)
        (await rig.model.next_stream()).complete(None)
        assert (await rig.finished(turn)).reason == "answered"


async def test_a_steer_mid_hunk_rolls_it_back_keeps_finished_ones_and_answers_nothing_on_the_old_chain() -> None:
    two_files = {**FILES, "util.py": "X = 1\nY = 2\n"}
    first_patch = "*** Begin Patch\n*** Update File: util.py\n@@\n-X = 1\n+X = 10\n*** End Patch\n"
    async with pilot_rig(two_files, style=TOOLS) as rig:
        turn = rig.prompt("change things")
        stream = await rig.model.next_stream()
        play_tool_call(stream, patch_call("call_1", first_patch))
        cut = FIX_SUB.replace("*** End Patch\n", "+    # still being writ")
        play_tool_call(stream, patch_call("call_2", cut), [cut], finish=False)
        await eventually(lambda: "return a - b" in rig.texts()["app.py"])
        rig.steer("only change util.py")
        new = await rig.started(lambda event: event.steered_from == turn)
        assert (await rig.finished(turn)).status == "steered"
        assert rig.texts()["util.py"] == "X = 10\nY = 2\n"  # the finished call stays
        assert rig.texts()["app.py"] == FILES["app.py"]  # the hunk in flight rolled back
        assert rig.model.stopped == [stream]
        steered = rig.model.requests[1]  # a new request, not a chain with a call left unanswered
        assert steered.previous_response_id is None and not outputs_of(steered)
        assert "only change util.py" in str(steered.input[-1])
        (await rig.model.next_stream()).complete(None)
        assert (await rig.finished(new.turn)).status == "completed"


async def test_a_call_to_a_tool_we_do_not_offer_is_answered_failed() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("run the tests")
        stream = await rig.model.next_stream()
        play_tool_call(stream, ToolCall(call_id="call_x", name="shell", kind="function", input="",
                                        arguments='{"cmd": "pytest"}'))
        stream.complete(None)
        await rig.model.next_stream()
        [answer] = outputs_of(rig.model.requests[1])
        assert answer.status == "failed" and "no tool named 'shell'" in answer.output and "apply_patch" in answer.output
        rig.stop()
        assert (await rig.finished(turn)).reason == "stopped"


async def test_the_round_limit_ends_the_turn_and_says_so() -> None:
    style = PromptStyle(edit_style=EditStyle.APPLY_PATCH, max_rounds=2)
    async with pilot_rig(FILES, style=style) as rig:
        turn = rig.prompt("loop")
        for index in range(2):
            stream = await rig.model.next_stream()
            play_tool_call(stream, patch_call(f"call_{index}", WRONG))
            stream.complete(None)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "round_limit")
        assert "2 rounds" in finished.error
        assert len(rig.model.requests) == 2


async def test_a_revert_takes_back_every_round() -> None:
    second_patch = FIX_SUB.replace("def sub", "def add").replace("a - b", "b + a")
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("two rounds")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_1", FIX_SUB))
        first.complete(None)
        second = await rig.model.next_stream()
        play_tool_call(second, patch_call("call_2", second_patch))
        second.complete(None)
        (await rig.model.next_stream()).complete(None)
        await rig.finished(turn)
        assert "return b + a" in rig.texts()["app.py"] and "return a - b" in rig.texts()["app.py"]
        rig.revert(turn)
        await eventually(lambda: rig.texts() == FILES)


async def test_a_patch_counts_against_the_quota_and_explain_only_offers_no_tool() -> None:
    long_patch = FIX_SUB.replace("+    return a - b\n", "".join(f"+    # note {i}\n" for i in range(200)))
    async with pilot_rig(FILES, style=TOOLS, policy=AiPolicy(token_quota=1_050, tokens_used=1_000)) as rig:
        turn = rig.prompt("write notes")
        stream = await rig.model.next_stream()
        assert rig.model.requests[0].edit_style is EditStyle.APPLY_PATCH
        play_tool_call(stream, patch_call("call_1", long_patch), [long_patch[i:i + 8] for i in range(0, 2000, 8)],
                       finish=False)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("cancelled", "quota")
        assert rig.model.stopped == [stream]
    async with pilot_rig(FILES, style=TOOLS, policy=AiPolicy(mode=AiMode.EXPLAIN)) as rig:
        rig.prompt("explain sub")
        await rig.model.next_stream()
        assert rig.model.requests[0].edit_style is None  # no tools key on the wire


async def test_a_steer_while_the_next_rounds_request_goes_out_stops_that_answer_upstream() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_1", FIX_SUB))
        rig.model.hold_starts = asyncio.Event()  # round 2's request is on its way
        first.complete(None)
        await rig.published.until(TurnRound, lambda event: event.turn == turn)
        rig.steer("stop patching")
        assert (await rig.finished(turn)).status == "steered"
        steered = await rig.model.next_stream()  # the steer's own request
        rig.model.hold_starts.set()  # round 2's request goes out after all, behind the steer
        late = await rig.model.next_stream()
        assert late.request.previous_response_id == first.response_id
        await eventually(lambda: late in rig.model.stopped)  # its answer is not left running
        assert steered not in rig.model.stopped
