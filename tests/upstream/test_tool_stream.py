"""Tool events in a turn's stream: what a transport pushes is what the consumer gets, a turn
with tool output is never re-sent behind its back, and a call listed only at the end of a
response still reaches the consumer before its ``Completed``."""

from __future__ import annotations

import json

from spark_ide.upstream import (
    Completed,
    Message,
    ToolCall,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    TurnRequest,
    TurnStream,
)
from spark_ide.upstream.tool_calls import ToolCallAssembler, settle_tool_calls
from spark_ide.upstream.tool_frames import ToolItem
from tests.support.fake_model import play_tool_call
from tests.upstream.helpers import collect


async def _stop(stream: TurnStream, abandon: bool) -> None:
    return None


def new_stream() -> TurnStream:
    stream = TurnStream(TurnRequest(instructions="", input=(Message("user", "x"),)), stopper=_stop, resender=None,
                        first_byte_timeout_s=5, idle_timeout_s=5)
    stream.mark_sent()
    return stream


async def test_a_function_call_played_in_fragments_reaches_the_consumer_decoded() -> None:
    stream = new_stream()
    arguments = json.dumps({"input": "line \u00e9\n"})
    call = ToolCall(call_id="c", name="apply_patch", kind="function", input="", arguments=arguments)
    play_tool_call(stream, call, [arguments[:11], arguments[11:16], arguments[16:]])
    stream.complete(None)
    events = await collect(stream)
    assert isinstance(events[0], ToolCallStarted) and events[0].kind == "function"
    assert "".join(e.text for e in events if isinstance(e, ToolInputDelta)) == "line \u00e9\n"
    done = events[-2]
    assert isinstance(done, ToolCallDone) and done.input == "line \u00e9\n" and done.call.arguments == arguments
    final = events[-1]
    assert isinstance(final, Completed) and final.tool_calls == (done.call,) == stream.tool_calls


async def test_once_a_tool_event_is_out_the_turn_is_not_resent_silently() -> None:
    stream = new_stream()
    assert not stream.has_output
    play_tool_call(stream, ToolCall(call_id="c", name="apply_patch", kind="custom", input="*** Begin"), finish=False)
    assert stream.has_output and stream.first_token_at is not None
    stream.resend(same_connection=False, reason="socket closed")  # ignored: the consumer saw the call begin
    stream.error("connection_lost", "cut", retryable=True)
    events = await collect(stream)
    assert [type(e).__name__ for e in events] == ["ToolCallStarted", "ToolInputDelta", "ErrorEvent"]


async def test_what_was_given_whole_at_the_end_and_not_streamed_comes_as_one_last_delta() -> None:
    stream = new_stream()
    calls = ToolCallAssembler(stream)
    calls.start(0, call_id="a", name="apply_patch", kind="custom")
    calls.delta(0, "*** Begin ")
    settle_tool_calls(calls, (ToolItem("custom", "x", "b", "apply_patch", "listed only"),))
    calls.finish(0, "*** Begin Patch")  # already finished by the settle: ignored
    stream.complete(None)
    events = await collect(stream)
    texts = [(e.call_id, e.text) for e in events if isinstance(e, ToolInputDelta)]
    assert texts == [("a", "*** Begin "), ("b", "listed only")]
    final = events[-1]
    assert isinstance(final, Completed) and [(c.call_id, c.input) for c in final.tool_calls] == [
        ("a", "*** Begin "), ("b", "listed only")]  # in the order they started


async def test_a_consumer_behind_takes_a_calls_waiting_input_in_one_piece() -> None:
    stream = new_stream()
    calls = play_tool_call(stream, ToolCall(call_id="c", name="apply_patch", kind="custom", input=""), finish=False)
    for piece in ("*** Begin", " Patch\n", "*** Add File: a\n"):
        calls.delta("c", piece)
    assert isinstance(await anext(stream), ToolCallStarted)
    assert stream.take_waiting_input("other", 100) == ("", 0)  # another call's: nothing
    assert stream.take_waiting_input("c", 10) == ("*** Begin Patch\n", 2)  # up to about the limit
    calls.finish("c")
    assert stream.take_waiting_input("c", 100) == ("*** Add File: a\n", 1)  # the done event stays next
    assert isinstance(await anext(stream), ToolCallDone)
