// Keep or undo each hunk (issue 31): beside every applied block's chip in the transcript, Keep
// and Undo; under a turn with blocks waiting, Keep all and Undo all; keyboard shortcuts. The
// state comes from the server for everyone: a block's `edit.status` (applied, or rolled back
// with reason `undone`) and `edit.reviewed` {turn, block, decision, by}. A viewer sees the
// controls disabled. A button pressed waits for the server: `edit.reviewed`, or an error
// (`hunk_unavailable`, `hunk_conflict`: a toast says why, the button comes back).
//
// The editor's gutter has the same two buttons on each waiting block's first line
// (hunk_marks.js).
//
// Keys (docs/protocol.md "Keep or undo each hunk"): Alt+Y keeps, Alt+N undoes the block
// still waiting under the editor's cursor, else the first one waiting in the newest turn that
// has any; Alt+Shift+Y / Alt+Shift+N keep / undo all of that turn's.
import * as Y from "yjs";
import { EDIT_STATE, ERROR_CODE, MESSAGE } from "../protocol.js";
import { element, setData, setProperty, setText, setTitle } from "./dom.js";
import { hunkGutter, hunkMarksChanged } from "./hunk_marks.js";

export const HUNK_ERRORS = new Set([ERROR_CODE.HUNK_UNAVAILABLE, ERROR_CODE.HUNK_CONFLICT]);
const UNDONE = "undone";

function key(turn, block) {
  return `${turn}:${block}`;
}

export class HunkReview {
  // send(message) -> bool; canDrive() -> bool; toast(text, kind); tabs: the editor's tabs (the
  // shortcuts read its cursor, its gutter shows the marks; null: no editor); files: the
  // document's files (Y.Map), where each block is anchored.
  constructor({ send, canDrive, toast, tabs = null, files = null }) {
    this.send = send;
    this.canDrive = canDrive;
    this.toast = toast;
    this.tabs = tabs;
    this.files = files;
    this.version = 0; // counts changes of what the gutter shows
    this.memo = null; // {path, state, version, marks}: the gutter's marks as last computed
    this.blocks = new Map(); // "turn:block" -> {turn, block, path, state, lines, review, pending, controls}
    this.turns = new Map(); // turn -> {blocks: [keys, in order], bar, pending}
  }

  // -- what the server says --

  status({ turn, block, path, state, detail = {} }) {
    const item = this.item(turn, block);
    const was = this.waiting(item);
    item.path = path;
    item.state = state;
    if (Array.isArray(detail.lines) && state === EDIT_STATE.APPLIED) {
      item.lines = detail.lines;
      item.anchor = this.anchor(path, detail.lines[0]);
    }
    if (state === EDIT_STATE.ROLLED_BACK && detail.reason === UNDONE && !item.review) {
      item.review = { decision: UNDONE, by: String(detail.message || "").replace(/^undone by /, "") };
    }
    this.paint(item);
    if (was !== this.waiting(item)) this.changed();
  }

  reviewed({ turn, block, decision, by }) {
    const item = this.item(turn, block);
    item.review = { decision, by };
    item.pending = false;
    const entry = this.turns.get(turn);
    if (entry) entry.pending = false;
    this.paint(item);
    this.changed();
  }

  // An error the server answered a hunk.keep / hunk.undo with: true when it was one.
  refused(event) {
    if (!HUNK_ERRORS.has(event.code)) return false;
    const entry = this.turns.get(event.ref);
    if (entry) {
      entry.pending = false;
      for (const itemKey of entry.blocks) {
        const item = this.blocks.get(itemKey);
        if (item.pending) {
          item.pending = false;
          // The control says why it stays: its lines were changed since (by hand, or revert the turn).
          if (event.code === ERROR_CODE.HUNK_CONFLICT) item.conflict = true;
          this.paint(item);
        }
      }
      this.paintBar(event.ref);
      this.changed();
    }
    this.toast(event.message || event.code, "error");
    return true;
  }

  // A resync: the transcript starts over, and so does this.
  clear() {
    this.blocks.clear();
    this.turns.clear();
    this.changed();
  }

  // The server replaced the document: the anchors were of the old one (the blocks' lines as
  // they applied are what is left).
  rebind(files) {
    this.files = files;
    for (const item of this.blocks.values()) item.anchor = null;
    this.changed();
  }

  // -- the editor's gutter (hunk_marks.js) --

  changed() {
    this.version += 1;
    this.memo = null;
    const view = this.tabs && this.tabs.view;
    if (view) view.dispatch({ effects: hunkMarksChanged.of(null) }); // the gutter draws its marks again
  }

  // The editor's cursor: {path, line} (null: no file open).
  cursor() {
    const view = this.tabs && this.tabs.view;
    if (!view || !this.tabs.active) return null;
    return { path: this.tabs.active, line: view.state.doc.lineAt(view.state.selection.main.head).number };
  }

  // The gutter extension of the file at `path`.
  gutter(path) {
    return hunkGutter(path, this);
  }

  // A place in the file that stays with its text: the start of 1-based `line`.
  anchor(path, line) {
    const ytext = this.files && this.files.get(path);
    if (!(ytext instanceof Y.Text)) return null;
    const text = ytext.toString();
    let at = 0;
    for (let row = 1; row < line; row += 1) {
      const stop = text.indexOf("\n", at);
      if (stop < 0) return null;
      at = stop + 1;
    }
    return Y.createRelativePositionFromTypeIndex(ytext, at);
  }

  // The blocks of `path` waiting for review, by the line (1-based) each starts on now in the
  // editor's `state`: Map line -> [blocks].
  marks(path, state) {
    const memo = this.memo;
    if (memo && memo.path === path && memo.state === state && memo.version === this.version) return memo.marks;
    const marks = new Map();
    const ytext = this.files && this.files.get(path);
    for (const item of this.blocks.values()) {
      if (item.path !== path || !this.waiting(item) || !item.lines) continue;
      let line = item.lines[0];
      if (item.anchor && ytext instanceof Y.Text) {
        const at = Y.createAbsolutePositionFromRelativePosition(item.anchor, ytext.doc);
        if (at && at.type === ytext) line = state.doc.lineAt(Math.min(at.index, state.doc.length)).number;
      }
      if (line < 1 || line > state.doc.lines) continue;
      if (!marks.has(line)) marks.set(line, []);
      marks.get(line).push(item);
    }
    this.memo = { path, state, version: this.version, marks };
    return marks;
  }

  // -- the page --

  // The transcript placed a block's box (a chip, or a fence's figure): its controls go after it.
  attach(box, turn, block) {
    const item = this.item(turn, block);
    if (!item.controls) item.controls = this.controls(item);
    box.after(item.controls.row);
    this.paint(item);
  }

  controls(item) {
    const row = element("span", "hunk-review");
    row.dataset.turn = item.turn;
    row.dataset.block = String(item.block);
    const keep = element("button", "hunk-keep", "Keep");
    const undo = element("button", "hunk-undo", "Undo");
    const note = element("span", "hunk-note", "");
    for (const button of [keep, undo]) button.type = "button";
    keep.title = "Keep this change (Alt+Y)";
    undo.title = "Undo this change alone; others' edits stay (Alt+N)";
    keep.addEventListener("click", () => this.decide(item, "keep"));
    undo.addEventListener("click", () => this.decide(item, "undo"));
    row.append(keep, undo, note);
    return { row, keep, undo, note };
  }

  item(turn, block) {
    const itemKey = key(turn, block);
    let item = this.blocks.get(itemKey);
    if (!item) {
      item = {
        turn, block, path: "", state: null, lines: null, anchor: null, review: null, pending: false, conflict: false,
        controls: null,
      };
      this.blocks.set(itemKey, item);
      let entry = this.turns.get(turn);
      if (!entry) {
        entry = { blocks: [], bar: null, pending: false };
        this.turns.set(turn, entry);
      }
      entry.blocks.push(itemKey);
    }
    return item;
  }

  waiting(item) {
    return item.state === EDIT_STATE.APPLIED && !item.review;
  }

  // Called on every status of a block (each frame of a stream): what is unchanged is not
  // written again (a data attribute or a text written invalidates the page's style).
  paint(item) {
    const controls = item.controls;
    if (controls) {
      const shown = item.state === EDIT_STATE.APPLIED || Boolean(item.review);
      setProperty(controls.row, "hidden", !shown);
      setData(controls.row, "review", item.review ? item.review.decision : item.pending ? "pending" : "waiting");
      const can = this.canDrive() && this.waiting(item) && !item.pending;
      setProperty(controls.keep, "disabled", !can);
      setProperty(controls.undo, "disabled", !can);
      setProperty(controls.keep, "hidden", Boolean(item.review));
      setProperty(controls.undo, "hidden", Boolean(item.review));
      setText(controls.note, item.review ? `${item.review.decision} by ${item.review.by}`
        : item.conflict ? "its lines were changed since: undo them by hand, or revert the turn" : "");
      controls.row.classList.toggle("conflict", Boolean(item.conflict && !item.review));
      if (!this.canDrive()) setTitle(controls.row, "Only the owner and collaborators can keep or undo changes");
    }
    this.paintBar(item.turn);
  }

  // Keep all / Undo all under a turn with blocks waiting: in the turn's article, after its
  // header.
  paintBar(turn) {
    const entry = this.turns.get(turn);
    if (!entry) return;
    const items = entry.blocks.map((itemKey) => this.blocks.get(itemKey));
    const waiting = items.filter((item) => this.waiting(item)).length;
    const placed = items.find((item) => item.controls && item.controls.row.isConnected);
    const article = placed ? placed.controls.row.closest("article") : null;
    if (!entry.bar && article && waiting) {
      entry.bar = this.bar(turn);
      article.querySelector(":scope > .turn-head").after(entry.bar.row);
    }
    if (!entry.bar) return;
    setProperty(entry.bar.row, "hidden", waiting === 0);
    setText(entry.bar.count, `${waiting} change${waiting === 1 ? "" : "s"} to review`);
    const can = this.canDrive() && waiting > 0 && !entry.pending;
    setProperty(entry.bar.keep, "disabled", !can);
    setProperty(entry.bar.undo, "disabled", !can);
  }

  bar(turn) {
    const row = element("div", "hunk-review-all");
    row.dataset.turn = turn;
    const count = element("span", "hunk-count", "");
    const keep = element("button", "hunk-keep-all", "Keep all");
    const undo = element("button", "hunk-undo-all", "Undo all");
    for (const button of [keep, undo]) button.type = "button";
    keep.title = "Keep every change of this turn still waiting (Alt+Shift+Y)";
    undo.title = "Undo every change of this turn still waiting (Alt+Shift+N)";
    keep.addEventListener("click", () => this.decideAll(turn, "keep"));
    undo.addEventListener("click", () => this.decideAll(turn, "undo"));
    row.append(count, keep, undo);
    return { row, count, keep, undo };
  }

  // -- what the person asks --

  decide(item, decision) {
    if (!this.canDrive() || !this.waiting(item) || item.pending) return;
    const type = decision === "keep" ? MESSAGE.HUNK_KEEP : MESSAGE.HUNK_UNDO;
    if (!this.send({ type, turn: item.turn, block: item.block })) {
      this.toast("Not sent: the connection is down, retrying", "error");
      return;
    }
    item.pending = true;
    this.paint(item);
    this.changed();
  }

  decideAll(turn, decision) {
    const entry = this.turns.get(turn);
    if (!this.canDrive() || !entry || entry.pending) return;
    const type = decision === "keep" ? MESSAGE.HUNK_KEEP : MESSAGE.HUNK_UNDO;
    if (!this.send({ type, turn, all: true })) {
      this.toast("Not sent: the connection is down, retrying", "error");
      return;
    }
    entry.pending = true;
    this.paintBar(turn);
  }

  // The block a shortcut acts on: the one waiting under the cursor, else the first waiting in
  // the newest turn that has any (null: none).
  target() {
    const waiting = [...this.blocks.values()].filter((item) => this.waiting(item) && !item.pending);
    const at = this.cursor();
    if (at) {
      const under = waiting.find((item) => item.path === at.path && item.lines
        && item.lines[0] <= at.line && at.line <= item.lines[1]);
      if (under) return under;
    }
    const turns = [...this.turns.keys()].reverse();
    for (const turn of turns) {
      const first = waiting.find((item) => item.turn === turn);
      if (first) return first;
    }
    return null;
  }

  // A key pressed anywhere on the page: true when it was one of ours.
  key(event) {
    if (!event.altKey || event.ctrlKey || event.metaKey) return false;
    const letter = event.code === "KeyY" ? "keep" : event.code === "KeyN" ? "undo" : null;
    if (!letter) return false;
    const item = this.target();
    if (!item) return false;
    event.preventDefault();
    if (event.shiftKey) this.decideAll(item.turn, letter);
    else this.decide(item, letter);
    return true;
  }
}
