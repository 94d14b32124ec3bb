"""The replay page's timeline (static/src/replay/timeline.js) under Node: what has happened
by a moment, the checkpoint to seek from, a run's text spread over its span, pauses skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.node import run_node

MODULE = (Path(__file__).resolve().parents[2] / "static/src/replay/timeline.js").as_uri()

DATA = {
    "start": 1_000, "end": 9_000,
    "checkpoints": [
        {"t": 0, "n": 0, "state": ""}, {"t": 2_000, "n": 3, "state": ""}, {"t": 6_000, "n": 5, "state": ""},
    ],
    "updates": [[100, ""], [150, ""], [2_000, ""], [2_500, ""], [6_000, ""], [8_000, ""]],
    "events": [
        {"type": "turn.started", "turn": "a", "t": 90},
        {"type": "turn.prose", "turn": "a", "text": "Hello there", "t": 100, "d": 1_000},
        {"type": "turn.finished", "turn": "a", "t": 2_500},
    ],
    "marks": [],
}

SCRIPT = """
const { Timeline, shownChars, clock } = await import(MODULE);
const timeline = new Timeline(DATA);
const fresh = new Timeline(FRESH);
const prose = DATA.events[1];
console.log(JSON.stringify({
  updates: [0, 99, 100, 150, 2_499, 2_500, 9_000].map((t) => timeline.updatesAt(t)),
  events: [0, 90, 2_499, 2_500].map((t) => timeline.eventsAt(t)),
  checkpoints: [0, 2, 3, 4, 5, 6].map((n) => timeline.checkpointFor(n).n),
  shown: [99, 100, 600, 1_099, 1_100, 5_000].map((t) => shownChars(prose, t)),
  pair: shownChars({ text: "a\\u{1F600}b", t: 0, d: 4 }, 2),
  skip: [50, 300, 1_050, 1_200, 2_600, 8_100].map((t) => timeline.skipIdle(t)),
  clock: [0, 999, 65_300].map(clock),
  empty: new Timeline({ checkpoints: [], updates: [], events: [], end: 0 }).empty,
  fresh: [0, 2, 3, 4, 5, 6].map((n) => fresh.freshAtOrBefore(n)),
  starts: [0, 2, 3, 4, 5, 6].map((n) => [fresh.startFor(n).n, fresh.startFor(n).state]),
}));
"""

# The room replaced its document at the fourth update ([t, state, 1]): seeking past it starts
# from it, not from the checkpoint before, until a later checkpoint holds more.
FRESH = {
    **DATA,
    "updates": [[100, ""], [150, ""], [2_000, ""], [2_200, "new", 1], [6_000, ""], [8_000, ""]],
}


def test_the_timeline_answers_what_happened_by_a_moment() -> None:
    result: dict[str, Any] = run_node(SCRIPT, MODULE=MODULE, DATA=DATA, FRESH=FRESH)
    assert result["updates"] == [0, 0, 1, 2, 3, 4, 6]
    assert result["events"] == [0, 1, 2, 3]
    assert result["checkpoints"] == [0, 0, 3, 3, 5, 5]  # the latest holding no later update
    assert result["shown"] == [0, 0, 5, 10, 11, 11]  # "Hello there" over one second
    assert result["pair"] == 1  # never half of a surrogate pair
    # Inside a run or with something near: on; a long pause: to just before what comes next.
    assert result["skip"] == [50, 300, 1_050, 1_200, 5_700, 8_100]
    assert result["clock"] == ["0:00.0", "0:00.9", "1:05.3"]
    assert result["empty"] is True
    assert result["fresh"] == [-1, -1, -1, 3, 3, 3]
    assert result["starts"] == [[0, ""], [0, ""], [3, ""], [4, "new"], [5, ""], [5, ""]]
