"""Which session events the page handles (static/src/live/event_order.js), under Node.

The server sends turn events in seq order, what a client missed before its live stream, and
merged runs under their newest seq; ephemeral answers repeat the current seq. The page must
handle every event once and, on a reconnect, name the seq to resume after.
"""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import ROOT
from tests.support.node import run_node

MODULE = (ROOT / "static/src/live/event_order.js").as_uri()

# Feeds EVENTS ([type, seq] pairs) and prints, per input, whether the page handles it, and
# the seq a reconnect would resume after.
FEED = """
const { EventOrder } = await import(MODULE);
const order = new EventOrder();
const out = EVENTS.map(([type, seq]) => order.accept({ type, seq }));
console.log(JSON.stringify({ out, after: order.resumeAfter }));
"""


def feed(events: list[Any]) -> dict[str, Any]:
    result: dict[str, Any] = run_node(FEED, MODULE=MODULE, EVENTS=events)
    return result


def test_turn_events_are_handled_once_in_order() -> None:
    result = feed([["hello", 5], ["turn.delta", 6], ["edit.status", 8], ["turn.delta", 8], ["turn.delta", 9]])
    assert result["out"] == [True, True, True, False, True]
    assert result["after"] == 9


def test_ephemeral_events_repeat_the_current_seq_and_are_always_handled() -> None:
    result = feed([["hello", 5], ["turn.delta", 6], ["pong", 6], ["error", 6], ["presence", 6], ["error", 6]])
    assert result["out"] == [True, True, True, True, True, True]
    assert result["after"] == 6


def test_a_quiet_page_resumes_after_the_seq_it_joined_at() -> None:
    assert feed([["hello", 40], ["presence", 40]])["after"] == 40


def test_a_fresh_page_takes_the_transcript_below_its_hello() -> None:
    result = feed([["hello", 50], ["turn.started", 3], ["turn.prose", 4], ["turn.finished", 9], ["turn.delta", 51]])
    assert result["out"] == [True, True, True, True, True]
    assert result["after"] == 51


def test_after_a_resync_the_recent_transcript_comes_again() -> None:
    result = feed([
        ["hello", 10], ["turn.started", 11], ["turn.delta", 12],
        ["hello", 30], ["resync", 30], ["turn.started", 11], ["turn.finished", 20], ["turn.started", 31],
    ])
    assert result["out"] == [True, True, True, True, True, True, True, True]
    assert result["after"] == 31
