"""The page's frame loop (static/src/live/frame.js) and its write-if-changed helpers
(static/src/live/dom.js), under Node with a scripted clock: what they do, counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.node import run_node

LIVE = Path(__file__).resolve().parents[2] / "static/src/live"

# A clock of timers and animation frames the script advances by hand.
CLOCK = """
const { FrameLoop } = await import(FRAME);
let now = 0, nextId = 1;
const timers = new Map(), frames = new Map();
const counts = { setTimeout: 0, clearTimeout: 0, requestAnimationFrame: 0 };
globalThis.setTimeout = (fn, ms) => {
  counts.setTimeout += 1; const id = nextId++; timers.set(id, [now + ms, fn]); return id;
};
globalThis.clearTimeout = (id) => { counts.clearTimeout += 1; timers.delete(id); };
globalThis.requestAnimationFrame = (fn) => {
  counts.requestAnimationFrame += 1; const id = nextId++; frames.set(id, fn); return id;
};
globalThis.cancelAnimationFrame = (id) => { frames.delete(id); };
const frame = () => { const due = [...frames.values()]; frames.clear(); due.forEach((fn) => fn(now)); };
const advance = (ms) => {  // timers fire in their order; no animation frame meanwhile
  const until = now + ms;
  for (;;) {
    const due = [...timers.entries()].filter(([, [at]]) => at <= until).sort((a, b) => a[1][0] - b[1][0]);
    if (!due.length) break;
    const [id, [at, fn]] = due[0];
    timers.delete(id); now = at; fn();
  }
  now = until;
};
const loop = new FrameLoop();
let flushes = 0;
loop.add(() => { flushes += 1; });
"""


def test_a_page_with_frames_flushes_once_a_frame_and_arms_a_timer_once_per_delay() -> None:
    result: dict[str, Any] = run_node(CLOCK + """
for (let k = 0; k < 60; k++) {  // a second of frames, three requests in each
  loop.request(); loop.request(); loop.request();
  advance(1000 / 60);
  frame();
}
console.log(JSON.stringify({ flushes, ...counts }));
""", FRAME=(LIVE / "frame.js").as_uri())
    assert result["flushes"] == 60  # one a frame, however many requests
    assert result["requestAnimationFrame"] == 60
    assert result["clearTimeout"] == 0
    # The fallback timer is armed when none is pending: five times in a second, not sixty.
    assert 5 <= result["setTimeout"] <= 6


def test_a_page_without_frames_is_flushed_by_the_timer_within_its_delay() -> None:
    result: dict[str, Any] = run_node(CLOCK + """
const at = [];
loop.add(() => at.push(now));
for (const when of [0, 50, 260, 270, 700]) {  // a hidden tab: requests, never a frame
  advance(when - now);
  loop.request();
}
advance(1000);
const pending = frames.size;
frame();  // the frame requested last comes after all: it flushes nothing more
console.log(JSON.stringify({ flushes, at, pending, after: flushes }));
""", FRAME=(LIVE / "frame.js").as_uri())
    # Requested at 0 and 50: flushed by the timer armed at 0; at 260 and 270: by the one armed
    # at 260; at 700: by its own. Every flush within 200 ms of the request it answers.
    assert result["at"] == [200, 460, 900]
    assert result["flushes"] == 3 and result["after"] == 3


def test_a_frame_and_its_timer_never_flush_twice_for_one_request() -> None:
    result: dict[str, Any] = run_node(CLOCK + """
loop.request();
advance(10); frame();     // the frame flushes
advance(300);             // its timer runs out: nothing to flush
loop.request();
advance(250);             // no frame: the new request's own timer flushes it
frame();                  // the cancelled frame does not flush again
console.log(JSON.stringify({ flushes }));
""", FRAME=(LIVE / "frame.js").as_uri())
    assert result["flushes"] == 2


def test_a_page_with_frames_is_never_flushed_by_the_timer() -> None:
    result: dict[str, Any] = run_node(CLOCK + """
const by = [];
loop.add(() => by.push(inFrame ? "frame" : "timer"));
let inFrame = false;
const frameNow = () => { inFrame = true; frame(); inFrame = false; };
for (let k = 0; k < 120; k++) {  // two seconds of a stream: a request always pending at the timer
  advance(1000 / 60);
  loop.request();
  if (k % 2 === 0) frameNow();  // a busy page: a frame every other 16 ms
}
advance(1000 / 60); frameNow();
const visible = [...by];
by.length = 0;
for (let k = 0; k < 10; k++) { loop.request(); advance(100); }  // then hidden: no frame at all
console.log(JSON.stringify({ visible, hidden: by, timers: counts.setTimeout }));
""", FRAME=(LIVE / "frame.js").as_uri())
    assert set(result["visible"]) == {"frame"} and len(result["visible"]) == 61
    # Hidden: the first timer was armed while frames still came (re-armed once), then each
    # flushes within the delay.
    assert set(result["hidden"]) == {"timer"} and 3 <= len(result["hidden"]) <= 5
    assert result["timers"] <= 20  # two seconds of frames armed it about every 200 ms


def test_text_data_titles_and_properties_are_written_only_when_they_change() -> None:
    result: dict[str, Any] = run_node("""
const { setData, setProperty, setText, setTitle } = await import(DOM);
const writes = [];
const counted = (target, name) => new Proxy(target, {
  set(object, key, value) { writes.push(`${name}.${String(key)}=${value}`); object[key] = value; return true; },
  deleteProperty(object, key) { writes.push(`${name}.${String(key)} deleted`); delete object[key]; return true; },
});
const node = counted({ textContent: "", title: "", hidden: false, dataset: counted({}, "dataset") }, "node");
for (let k = 0; k < 3; k++) {  // the same values three times: written once
  setText(node, "12 tok/s"); setTitle(node, "rate"); setData(node, "kind", "running");
  setProperty(node, "hidden", true);
}
setData(node, "kind", "done");
setData(node, "kind", null); setData(node, "kind", null); setData(node, "path", undefined);
console.log(JSON.stringify({ writes, dataset: { ...node.dataset }, text: node.textContent }));
""", DOM=(LIVE / "dom.js").as_uri())
    assert result["writes"] == [
        "node.textContent=12 tok/s", "node.title=rate", "dataset.kind=running", "node.hidden=true",
        "dataset.kind=done",
        "dataset.kind deleted",
    ]
    assert result["dataset"] == {} and result["text"] == "12 tok/s"


def test_new_text_goes_into_the_nodes_own_text_node() -> None:
    """A status figure redrawn every frame changes its text node's data: the element keeps its
    one child (no node swapped in, no moment without children)."""
    result: dict[str, Any] = run_node("""
const { setText } = await import(DOM);
const log = [];
const textNode = (data) => new Proxy({ nodeType: 3, data }, {
  set(object, key, value) { log.push(`text.${String(key)}=${value}`); object[key] = value; return true; },
});
const element = () => {
  const node = { firstChild: null, lastChild: null };
  Object.defineProperty(node, "textContent", {
    get() { return node.firstChild ? node.firstChild.data : ""; },
    set(value) {
      log.push(`textContent=${value}`);
      node.firstChild = node.lastChild = value ? textNode(value) : null;
    },
  });
  return node;
};
const figure = element();
setText(figure, "≈900 tok/s");   // empty: its first text
setText(figure, "≈950 tok/s");   // the same node, new data
setText(figure, "≈950 tok/s");   // unchanged: nothing written
const kept = figure.firstChild;
setText(figure, "≈990 tok/s");
const same = figure.firstChild === kept;
setText(figure, "");              // emptied: no child left (its :empty rule applies)
console.log(JSON.stringify({ log, same, empty: figure.firstChild === null }));
""", DOM=(LIVE / "dom.js").as_uri())
    assert result["log"] == [
        "textContent=≈900 tok/s", "text.data=≈950 tok/s", "text.data=≈990 tok/s", "textContent=",
    ]
    assert result["same"] and result["empty"]
