// Steering by editing (issue 33; docs/pairing.md, "Steering by editing"). The server sees
// every person's change and decides what is a steering edit (a change of the lines the running
// turn wrote or writes); this page shows it and gives the person its keys:
// - `edit_steer` events: a steering edit is pending (its lines marked in the editor, a hint
//   "pause to steer · Ctrl+Enter steers now · Esc keeps it local"), then committed, cancelled
//   or dropped (the mark goes);
// - in the editor, while one of this person's is pending: Ctrl+Enter commits it now, Esc keeps
//   it an ordinary edit, and moving the cursor out of its lines commits it ("left");
// - the switch under the editor (kept per browser): off, this person's edits never steer (the
//   server is told on every connect); a course's rule (the `policy` event's `edit_steer`)
//   turns it off for students;
// - `turn.edit_steered`: a line under the steered turn in the transcript, with the diff.
import { StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView } from "@codemirror/view";
import { MESSAGE } from "../protocol.js";
import { element } from "./dom.js";
import { rangeLabel } from "./transcript_turns.js";

const STORAGE = "spark:edit-steer"; // "off" when this browser's person turned it off
export const PENDING_HINT = "Steering edit: pause to steer · Ctrl+Enter steers now · Esc keeps it local";

// The pending steering edit's lines in the editor: {first, last} (1-based), or null.
export const steerLines = StateEffect.define();

export const steerRegionField = StateField.define({
  create: () => Decoration.none,
  update(marks, transaction) {
    for (const effect of transaction.effects) {
      if (effect.is(steerLines)) return lineMarks(transaction.state.doc, effect.value);
    }
    return marks.map(transaction.changes);
  },
  provide: (field) => EditorView.decorations.from(field),
});

const LINE = Decoration.line({ class: "cm-edit-steer" });

function lineMarks(doc, lines) {
  if (!lines) return Decoration.none;
  const last = Math.min(lines.last, doc.lines);
  const ranges = [];
  for (let number = Math.max(1, lines.first); number <= last; number += 1) ranges.push(LINE.range(doc.line(number).from));
  return Decoration.set(ranges);
}

// "steered by editing a.py:12–14 (Ana)" (its lines named as a prompt's range is: rangeLabel)
export function steeredLine({ path, lines, by }) {
  const [first, last] = Array.isArray(lines) ? lines : [0, 0];
  return `steered by editing ${rangeLabel({ path, from_line: first, to_line: last })} (${by})`;
}

// The transcript's line under the steered turn, with the region's diff folded under it
// (transcript: the live page's or the replay's Transcript).
export function showEditSteered(transcript, event) {
  const entry = transcript.turns.get(event.turn);
  if (!entry) return;
  const row = element("details", "edit-steered");
  row.dataset.path = event.path;
  row.append(element("summary", "", steeredLine(event)), element("pre", "edit-steered-diff", event.diff || ""));
  entry.article.insertBefore(row, entry.article.querySelector(":scope > .turn-foot"));
}

// This browser's localStorage, or null where reading it throws (storage refused by the
// browser's settings): the page goes on without it.
function pageStorage() {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export class EditSteerControl {
  // root: the switch's box (templates/pairing/_edit_steer.html), or null for a viewer;
  // send(message); tabs: the editor tabs; storage: where the switch is kept.
  constructor(root, { send, tabs, storage = pageStorage() }) {
    this.root = root;
    this.send = send;
    this.tabs = tabs;
    this.storage = storage; // null: refused (its reads and writes below are in try)
    this.box = root ? root.querySelector('input[type="checkbox"]') : null;
    this.hint = root ? root.querySelector("[data-edit-steer=hint]") : null;
    this.course = root ? root.querySelector("[data-edit-steer=course]") : null;
    this.me = null; // the username hello named
    this.pending = null; // the `edit_steer` event of the steering edit pending, if any
    this.courseOff = false;
    if (this.box) {
      this.box.checked = this.wanted();
      this.box.addEventListener("change", () => this.switched());
    }
  }

  wanted() {
    try {
      return this.storage.getItem(STORAGE) !== "off";
    } catch {
      return true;
    }
  }

  switched() {
    const on = this.box.checked;
    try {
      if (on) this.storage.removeItem(STORAGE);
      else this.storage.setItem(STORAGE, "off");
    } catch { /* private browsing: it holds for this page */ }
    this.send({ type: MESSAGE.EDIT_STEER_SWITCH, on });
  }

  // hello: the server starts with the switch on; an "off" kept here is said again.
  connected(user) {
    this.me = user;
    if (this.box && !this.wanted()) this.send({ type: MESSAGE.EDIT_STEER_SWITCH, on: false });
  }

  // The course's AI rules (the `policy` event): edit_steer false turns the switch off here.
  policy(event) {
    this.courseOff = event.edit_steer === false;
    if (!this.box) return;
    this.box.disabled = this.courseOff;
    this.box.checked = !this.courseOff && this.wanted();
    if (this.course) this.course.hidden = !this.courseOff;
  }

  // An `edit_steer` event: mark the pending edit's lines, or take the mark away.
  state(event) {
    this.pending = event.state === "pending" ? event : null;
    if (this.hint) {
      this.hint.textContent = this.pending ? PENDING_HINT : "";
      this.hint.hidden = !this.pending;
    }
    this.draw();
  }

  // The active tab changed or the mark did: the editor shows the pending lines of its file.
  draw() {
    const view = this.tabs.view;
    if (!view) return;
    const pending = this.pending;
    const lines = pending && pending.path === this.tabs.active && Array.isArray(pending.lines)
      ? { first: pending.lines[0], last: pending.lines[1] } : null;
    view.dispatch({ effects: steerLines.of(lines) });
  }

  mine() {
    return this.pending !== null && Array.isArray(this.pending.by) && this.pending.by.includes(this.me);
  }

  // A key in the editor: Ctrl+Enter commits this person's pending edit, Esc keeps it local
  // (not a key typed in the Ctrl+K box over the editor: Esc closes that box).
  key(event) {
    if (!this.mine() || event.target?.closest?.(".inline-prompt")) return false; // the Ctrl+K box's own keys
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      this.send({ type: MESSAGE.EDIT_STEER_COMMIT, why: "key" });
    } else if (event.key === "Escape") {
      this.send({ type: MESSAGE.EDIT_STEER_CANCEL });
    } else {
      return false;
    }
    event.preventDefault();
    event.stopPropagation();
    return true;
  }

  // The cursor moved (a key or a click in the editor): out of the pending lines, it commits.
  moved() {
    const view = this.tabs.view;
    if (!this.mine() || !view || this.tabs.active !== this.pending.path) return;
    const line = view.state.doc.lineAt(view.state.selection.main.head).number;
    const [first, last] = this.pending.lines;
    if (line < first - 1 || line > last + 1) this.send({ type: MESSAGE.EDIT_STEER_COMMIT, why: "left" });
  }

  // The editor's host: its keys (before CodeMirror's) and the cursor's moves.
  wire(host) {
    host.addEventListener("keydown", (event) => this.key(event), { capture: true });
    const inBox = (event) => Boolean(event.target?.closest?.(".inline-prompt")); // the Ctrl+K box: not the cursor
    host.addEventListener("keyup", (event) => {
      if (!inBox(event) && (event.key.startsWith("Arrow") || event.key.startsWith("Page"))) this.moved();
    });
    host.addEventListener("pointerup", (event) => { if (!inBox(event)) this.moved(); });
  }
}
