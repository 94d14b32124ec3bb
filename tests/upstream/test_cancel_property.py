"""Property: wherever a turn is cut, the old stream yielded a prefix of the old answer and
the new stream yields exactly the new answer, with nothing interleaved."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.upstream import CancelStrategy, Completed, TextDelta, TurnStream
from tests.upstream.helpers import ALL_SOCKET_STRATEGIES, LONG_TEXT, collect, say, turn
from tests.upstream.test_cancel import session

NEW_TEXT = "the new answer, whole and alone"


async def cut_and_follow(strategy: CancelStrategy, cut_at: int, stop_first: bool) -> None:
    async with session(strategy) as live:
        client = live.client
        old = await client.start(turn("[script:long][rate:400]"))
        before = await collect(old, limit=cut_at) if cut_at else []
        new: TurnStream
        if stop_first:
            await old.cancel()
            new = await client.start(turn(say(NEW_TEXT)))
        else:
            new = await client.steer(old, turn(say(NEW_TEXT)))
        after_cut = await collect(old)
        new_events = await collect(new)
    assert after_cut == []
    assert len(before) == cut_at
    assert all(isinstance(e, TextDelta) for e in before)
    assert LONG_TEXT.startswith(old.text)
    assert all(isinstance(e, TextDelta) for e in new_events[:-1])
    assert isinstance(new_events[-1], Completed)
    assert "".join(e.text for e in new_events[:-1] if isinstance(e, TextDelta)) == NEW_TEXT


@settings(max_examples=30, deadline=None)
@given(
    strategy=st.sampled_from(ALL_SOCKET_STRATEGIES),
    cut_at=st.integers(min_value=0, max_value=40),
    stop_first=st.booleans(),
)
def test_any_cut_point_gives_a_clean_prefix_and_a_whole_new_answer(
    strategy: CancelStrategy, cut_at: int, stop_first: bool
) -> None:
    asyncio.run(asyncio.wait_for(cut_and_follow(strategy, cut_at, stop_first), 60))
