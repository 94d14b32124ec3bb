"""TurnStream on its own: ordering, cancel stops at once, timeouts never hang."""

from __future__ import annotations

import asyncio

from spark_ide.upstream import (
    Completed,
    ErrorEvent,
    Marks,
    Message,
    TextDelta,
    TurnRequest,
    TurnStream,
    is_terminal,
)

REQUEST = TurnRequest(instructions="", input=(Message("user", "hi"),))


class Recorder:
    def __init__(self) -> None:
        self.stops: list[bool] = []

    async def stop(self, stream: TurnStream, abandon: bool) -> None:
        self.stops.append(abandon)


def make(recorder: Recorder, *, first_byte_timeout_s: float = 5.0) -> TurnStream:
    return TurnStream(REQUEST, stopper=recorder.stop, resender=None,
                      first_byte_timeout_s=first_byte_timeout_s, idle_timeout_s=5.0)


async def drain(stream: TurnStream) -> list[object]:
    return [event async for event in stream]


async def test_it_yields_deltas_then_ends_after_the_terminal_event() -> None:
    stream = make(Recorder())
    stream.mark_sent()
    stream.delta("ab")
    stream.delta("cd")
    stream.complete(None)
    stream.delta("late")  # after the terminal event: never yielded
    events = await asyncio.wait_for(drain(stream), 5)
    assert [type(e) for e in events] == [TextDelta, TextDelta, Completed]
    assert stream.text == "abcd"
    assert stream.state == "finished"


async def test_its_marks_are_ordered() -> None:
    stream = make(Recorder())
    stream.mark_sent()
    stream.mark_first_byte()
    stream.delta("x")
    stream.complete(None)
    events = await asyncio.wait_for(drain(stream), 5)
    marks = events[-1].marks  # type: ignore[attr-defined]
    assert marks.sent_at <= marks.first_byte_at <= marks.first_token_at <= marks.received_at


async def test_it_yields_nothing_after_cancel_even_if_events_were_queued() -> None:
    recorder = Recorder()
    stream = make(recorder)
    stream.delta("one")
    stream.delta("two")
    first = await stream.__anext__()
    await stream.cancel()
    stream.delta("three")
    stream.complete(None)
    assert first == TextDelta("one", None, first.marks)
    assert await asyncio.wait_for(drain(stream), 5) == []
    assert recorder.stops == [False]
    assert stream.state == "cancelled"


async def test_cancel_wakes_a_reader_that_is_waiting() -> None:
    stream = make(Recorder())
    reader = asyncio.create_task(drain(stream))
    await asyncio.sleep(0.01)
    await stream.cancel()
    assert await asyncio.wait_for(reader, 5) == []


async def test_a_silent_upstream_ends_in_a_timeout_error_and_is_abandoned() -> None:
    recorder = Recorder()
    stream = make(recorder, first_byte_timeout_s=0.05)
    stream.mark_sent()
    events = await asyncio.wait_for(drain(stream), 5)
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent)
    assert events[0].code == "timeout"
    assert events[0].retryable
    assert recorder.stops == [True]


async def test_frames_without_text_keep_a_turn_alive_past_the_idle_timeout() -> None:
    recorder = Recorder()
    stream = TurnStream(REQUEST, stopper=recorder.stop, resender=None,
                        first_byte_timeout_s=5.0, idle_timeout_s=0.5)
    stream.mark_sent()

    async def reasoning_model() -> None:
        for _ in range(15):  # 0.75 s of frames with no text, each well within the idle limit
            stream.mark_first_byte()
            await asyncio.sleep(0.05)
        stream.delta("answer")
        stream.complete(None)

    producer = asyncio.create_task(reasoning_model())
    events = await asyncio.wait_for(drain(stream), 5)
    await producer
    assert [type(e) for e in events] == [TextDelta, Completed]
    assert recorder.stops == []


async def test_an_idle_turn_times_out_after_its_first_byte() -> None:
    recorder = Recorder()
    stream = TurnStream(REQUEST, stopper=recorder.stop, resender=None,
                        first_byte_timeout_s=5.0, idle_timeout_s=0.05)
    stream.mark_sent()
    stream.delta("partial")
    events = await asyncio.wait_for(drain(stream), 5)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].code == "timeout"
    assert recorder.stops == [True]


def test_only_text_deltas_are_not_terminal() -> None:
    marks = Marks(1.0, None, None, 1.0)
    assert not is_terminal(TextDelta("x", None, marks))
    assert all(is_terminal(e) for e in (Completed(None, None, marks),
                                        ErrorEvent("timeout", "", True, marks)))


async def test_a_consumer_behind_takes_the_waiting_text_in_one_step_and_the_end_stays_next() -> None:
    stream = make(Recorder())
    stream.mark_sent()
    for piece in ("a", "bc", "de", "fgh"):
        stream.delta(piece)
    stream.complete(None)
    first = await asyncio.wait_for(stream.__anext__(), 5)
    assert isinstance(first, TextDelta) and first.text == "a"
    assert stream.waiting == 4
    assert stream.take_waiting_text(limit=3) == ("bcde", 2)  # up to about the limit
    assert stream.take_waiting_text(limit=100) == ("fgh", 1)  # the terminal event stays next
    assert stream.waiting == 1 and stream.take_waiting_text(limit=100) == ("", 0)
    rest = await asyncio.wait_for(drain(stream), 5)
    assert [type(e) for e in rest] == [Completed]
    assert stream.text == "abcdefgh"


async def test_a_consumer_that_keeps_up_finds_nothing_waiting() -> None:
    stream = make(Recorder())
    stream.mark_sent()
    stream.delta("x")
    assert isinstance(await asyncio.wait_for(stream.__anext__(), 5), TextDelta)
    assert stream.waiting == 0 and stream.take_waiting_text(limit=100) == ("", 0)


async def test_a_reader_waiting_for_each_delta_sets_the_deadline_timer_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The stream keeps one timer for its deadline (moved on only when it fires), not one per
    awaited delta: a reader that keeps up with 200 deltas arms it once, and again once when
    the first byte brings the deadline closer."""
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_later = loop.call_later

    def counting(delay, callback, *args):  # type: ignore[no-untyped-def]
        if getattr(callback, "__name__", "") == "_on_deadline":
            armed.append(delay)
        return call_later(delay, callback, *args)

    monkeypatch.setattr(loop, "call_later", counting)
    stream = TurnStream(REQUEST, stopper=Recorder().stop, resender=None, first_byte_timeout_s=30.0, idle_timeout_s=20.0)
    stream.mark_sent()

    async def model() -> None:
        for i in range(200):
            await asyncio.sleep(0)  # the reader waits for each one
            stream.delta(f"t{i} ")
        stream.complete(None)

    producer = asyncio.create_task(model())
    events = await asyncio.wait_for(drain(stream), 5)
    await producer
    assert len(events) == 201 and isinstance(events[-1], Completed)
    assert len(armed) == 2, armed  # first byte (30 s), then idle (20 s from the first delta)
    assert armed[0] > 29 and armed[1] < 20.5


async def test_a_consumer_behind_takes_at_most_the_deltas_it_may() -> None:
    """A count limit (the tokens a quota leaves) bounds the waiting deltas taken in one step."""
    stream = make(Recorder())
    stream.mark_sent()
    for piece in ("a", "b", "c", "d"):
        stream.delta(piece)
    assert stream.take_waiting_text(512, 2) == ("ab", 2)
    assert stream.take_waiting_text(512, 0) == ("", 0)
    assert stream.take_waiting_text(512) == ("cd", 2)


async def test_a_text_frame_marks_the_frame_and_yields_its_text() -> None:
    """``text_frame`` (a transport's read of a delta frame) is ``mark_first_byte`` then ``delta``:
    an empty frame, or one after the terminal event, still counts as activity, and yields nothing."""
    stream = make(Recorder())
    stream.mark_sent()
    stream.text_frame("")
    assert stream.first_byte_at is not None and stream.first_token_at is None and stream.waiting == 0
    stream.text_frame("ab")
    stream.complete(None)
    seen = stream.first_byte_at
    stream.text_frame("late")
    assert stream.first_byte_at == seen
    events = await asyncio.wait_for(drain(stream), 5)
    assert [type(e) for e in events] == [TextDelta, Completed]
    delta = events[0]
    assert isinstance(delta, TextDelta) and delta.text == "ab" and stream.text == "ab"
    marks = delta.marks
    assert marks.sent_at <= marks.first_byte_at <= marks.first_token_at == marks.received_at  # type: ignore[operator]
