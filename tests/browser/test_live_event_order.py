"""Which session events the page handles, and when (static/src/live/event_order.js), under Node.

The server's outbox merges runs of events (a merged delta carries the last seq of its run)
and may reorder them under pressure; after a reconnect it streams live events before it
replays what was missed. The page must show every event once, in a sensible order.
"""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import ROOT
from tests.browser.test_live_edit_blocks import run_node

MODULE = (ROOT / "static/src/live/event_order.js").as_uri()

# Feeds EVENTS (a list of [type, seq] or "drop" for a lost connection) and prints, per input,
# what was handed to the page, as "type:seq" strings; `late` collects released events.
FEED = """
const { EventOrder } = await import(MODULE);
const late = [];
const order = new EventOrder((events) => late.push(...events.map((e) => `${e.type}:${e.seq}`)));
const out = [];
for (const item of EVENTS) {
  if (item === "drop") { order.disconnected(); out.push("drop"); continue; }
  const [type, seq] = item;
  out.push(order.accept({ type, seq }).map((e) => `${e.type}:${e.seq}`));
}
if (WAIT_MS) await new Promise((done) => setTimeout(done, WAIT_MS));
console.log(JSON.stringify({ out, late, lastSeq: order.lastSeq }));
"""


def feed(events: list[Any], wait_ms: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = run_node(FEED, MODULE=MODULE, EVENTS=events, WAIT_MS=wait_ms)
    return result


def test_merged_and_reordered_events_are_all_handled_and_repeats_dropped() -> None:
    result = feed([["hello", 5], ["turn.delta", 8], ["edit.status", 7], ["turn.delta", 8], ["turn.delta", 9]])
    assert result["out"] == [["hello:5"], ["turn.delta:8"], ["edit.status:7"], [], ["turn.delta:9"]]
    assert result["lastSeq"] == 9


def test_answers_to_this_connection_repeat_the_current_seq_and_are_always_handled() -> None:
    result = feed([["hello", 5], ["turn.delta", 6], ["pong", 6], ["error", 6], ["error", 6]])
    assert result["out"] == [["hello:5"], ["turn.delta:6"], ["pong:6"], ["error:6"], ["error:6"]]


def test_after_a_reconnect_live_events_wait_for_the_replay_that_covers_them() -> None:
    result = feed([
        ["hello", 10], ["turn.delta", 11], "drop",
        ["hello", 14],  # we missed 12..14
        ["presence", 15], ["turn.delta", 16],  # live, before the replay
        ["turn.delta", 13], ["edit.status", 14], ["presence", 15], ["turn.delta", 16],  # the replay
        ["turn.delta", 17],  # live again
    ])
    assert result["out"] == [
        ["hello:10"], ["turn.delta:11"], "drop", ["hello:14"],
        [], [],
        ["turn.delta:13"], ["edit.status:14"], ["presence:15"], ["turn.delta:16"],
        ["turn.delta:17"],
    ]
    assert result["late"] == []


def test_held_events_are_shown_when_no_replay_comes() -> None:
    result = feed(["drop", ["hello", 3], ["turn.delta", 4], "drop", ["hello", 8], ["turn.delta", 9]], wait_ms=1700)
    assert result["out"][-1] == []
    assert result["late"] == ["turn.delta:9"]


def test_a_reconnect_that_missed_nothing_holds_nothing() -> None:
    result = feed([["hello", 4], ["turn.delta", 5], "drop", ["hello", 5], ["turn.delta", 6]])
    assert result["out"][-1] == ["turn.delta:6"]


def test_a_restarted_server_resets_the_marks_and_asks_for_a_resync() -> None:
    result = feed([["hello", 40], ["turn.delta", 41], "drop", ["hello", 2], ["turn.delta", 3]])
    assert result["out"][-2] == ["hello:2", "resync:undefined"]
    assert result["out"][-1] == ["turn.delta:3"]
    assert result["lastSeq"] == 3
