// What the model is doing in a file, drawn over the editor: the region it is rewriting, the
// candidate places while it is still locating, and the ghost of the line it has not finished.
// The store keeps the latest `edit.status` per path (background tabs too); the editor
// extension draws the active file's entry, recomputed from line numbers on every change.
import { StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, ViewPlugin, WidgetType } from "@codemirror/view";
import { EDIT_STATE, EDIT_STATES_IN_FLIGHT } from "../protocol.js";


export const setLiveRegion = StateEffect.define();

// What the ghost shows: the end of the unfinished line. The server sends at most its last
// characters (`detail.ghost`) and how many come before them (`detail.ghost_from`, absent when
// none): a model writing one line of 50,000 characters must not cost the page 50,000
// characters per status. A cut line starts with an ellipsis.
export const GHOST_ELLIPSIS = "…";
// However much a server sends (one from before ghost_from sent the whole line), the page draws
// no more than this of its end.
const GHOST_SHOWN_CHARS = 512;

export function ghostText(detail) {
  if (!detail || typeof detail.ghost !== "string") return null;
  const ghost = detail.ghost;
  const from = Number.isInteger(detail.ghost_from) && detail.ghost_from > 0 ? detail.ghost_from : 0;
  if (ghost.length > GHOST_SHOWN_CHARS) return GHOST_ELLIPSIS + ghost.slice(ghost.length - GHOST_SHOWN_CHARS);
  return from ? GHOST_ELLIPSIS + ghost : ghost;
}

// The ghost of one streaming block. Its text changes with nearly every status, its place only
// when a line is done: the text is written into the ghost's node directly (paint()), and the
// editor needs a transaction only when the place or the region changes. The node is in a
// shadow root of its own: the editor watches its content for changes (a person typing), and
// each change it sees costs a read of the selection and a measure of the whole view.
export class GhostSource {
  constructor(text = "") {
    this.text = text;
    this.node = null; // the text node showing it, once drawn
  }

  // The text as last set, into the drawn node (if the node is still in the editor).
  paint() {
    if (this.node && this.node.isConnected && this.node.data !== this.text) this.node.data = this.text;
  }
}

class GhostWidget extends WidgetType {
  constructor(source) {
    super();
    this.source = source;
  }

  // The same block's ghost: the same node (its text is painted in place).
  eq(other) {
    return other.source === this.source;
  }

  // A line: the text (in a shadow root, see GhostSource) and the caret after it, isolated left
  // to right so that an overflowing ghost keeps its end in view (live.css).
  toDOM() {
    const line = document.createElement("div");
    line.className = "cm-live-ghost";
    line.setAttribute("aria-hidden", "true");
    const wrap = document.createElement("span");
    wrap.className = "cm-live-ghost-text";
    const host = document.createElement("span");
    this.source.node = document.createTextNode(this.source.text);
    host.attachShadow({ mode: "open" }).append(this.source.node);
    const caret = document.createElement("span");
    caret.className = "cm-live-caret";
    wrap.append(host, caret);
    line.append(wrap);
    return line;
  }

  // Another block's ghost where one was drawn: the element stays, its text is this one's.
  updateDOM(dom) {
    const host = dom.firstChild && dom.firstChild.firstChild;
    const node = host && host.shadowRoot && host.shadowRoot.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE) return false;
    this.source.node = node;
    node.data = this.source.text;
    return true;
  }

  ignoreEvent() {
    return true;
  }
}

const regionLine = Decoration.line({ class: "cm-live-region" });
const candidateLine = Decoration.line({ class: "cm-live-candidate" });

// The ghost is a block widget, so it must come from the state (it changes line heights).
function ghostDecorations(info, doc) {
  const text = info && info.state === EDIT_STATE.STREAMING ? ghostText(info.detail) : null;
  if (text === null) return Decoration.none;
  const widget = new GhostWidget(info.ghost || new GhostSource(text));
  const at = info.detail.ghost_line;
  // The ghost sits where the line will land: above ghost_line, or after the last line.
  return Decoration.set(at && at <= doc.lines
    ? Decoration.widget({ widget, block: true, side: -1 }).range(doc.line(at).from)
    : Decoration.widget({ widget, block: true, side: 1 }).range(doc.length));
}

const liveField = StateField.define({
  create: () => ({ info: null, ghost: Decoration.none }),
  update(value, transaction) {
    let info = value.info;
    for (const effect of transaction.effects) if (effect.is(setLiveRegion)) info = effect.value;
    if (info === value.info && !transaction.docChanged) return value;
    return { info, ghost: ghostDecorations(info, transaction.state.doc) };
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.ghost),
});

// The region's lines, only those in the viewport: a whole-file rewrite of a long file would
// otherwise rebuild thousands of decorations on every frame of the stream.
function regionDecorations(view) {
  const { info } = view.state.field(liveField);
  if (!info) return Decoration.none;
  const doc = view.state.doc;
  const top = doc.lineAt(view.viewport.from).number;
  const bottom = doc.lineAt(view.viewport.to).number;
  const ranges = [];
  const { lines, candidates } = info.detail;
  if (Array.isArray(lines)) {
    const last = Math.min(bottom, lines[1]);
    for (let number = Math.max(top, lines[0], 1); number <= last; number++) {
      ranges.push(regionLine.range(doc.line(number).from));
    }
  } else if (Array.isArray(candidates)) {
    for (const number of [...candidates].sort((a, b) => a - b)) {
      if (number >= top && number <= bottom) ranges.push(candidateLine.range(doc.line(number).from));
    }
  }
  return Decoration.set(ranges);
}

const regionLines = ViewPlugin.fromClass(class {
  constructor(view) {
    this.decorations = regionDecorations(view);
  }

  update(update) {
    const moved = update.startState.field(liveField).info !== update.state.field(liveField).info;
    if (moved || update.docChanged || update.viewportChanged) this.decorations = regionDecorations(update.view);
  }
}, { decorations: (plugin) => plugin.decorations });

export function liveDecorations() {
  return [liveField, regionLines];
}

// The line to scroll to, to follow the model: the ghost's, else the end of the region, else
// the first candidate; null when there is none.
export function followLine(info) {
  if (!info) return null;
  const detail = info.detail;
  return detail.ghost_line || (Array.isArray(detail.lines) ? detail.lines[1] : null)
    || (Array.isArray(detail.candidates) ? detail.candidates[0] : null) || null;
}

// A line's start in `doc` (past the end: the end).
export function lineStart(line, doc) {
  return line > doc.lines ? doc.length : doc.line(Math.max(1, line)).from;
}

// Where to scroll to follow the model: the ghost, else the end of the region.
export function followPosition(info, doc) {
  const line = followLine(info);
  return line === null ? null : lineStart(line, doc);
}

function sameLines(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b)) return a === b || (!Array.isArray(a) && !Array.isArray(b));
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

// Do two statuses of a path draw the same region, the ghost's text aside? Then the editor's
// decorations stand, and only the ghost's text is painted.
export function sameRegion(a, b) {
  if (!a || !b) return a === b;
  if (a.turn !== b.turn || a.block !== b.block || a.state !== b.state || a.ghost !== b.ghost) return false;
  const x = a.detail;
  const y = b.detail;
  return x.ghost_line === y.ghost_line && sameLines(x.lines, y.lines) && sameLines(x.candidates, y.candidates)
    && (ghostText(x) === null) === (ghostText(y) === null);
}

export class LiveRegions {
  constructor() {
    this.byPath = new Map(); // path -> {turn, block, state, detail}
    this.dirty = new Set();
    this.ends = new Map(); // path -> the last line a block that just ended wrote there
  }

  update(event) {
    const { path, state } = event;
    if (!path) return;
    if (EDIT_STATES_IN_FLIGHT.has(state)) {
      const current = this.byPath.get(path);
      const detail = event.detail || {};
      const ghost = current && current.turn === event.turn && current.block === event.block
        ? current.ghost : new GhostSource();
      ghost.text = ghostText(detail) ?? ""; // drawn at the next frame (paint)
      this.byPath.set(path, { turn: event.turn, block: event.block, state, detail, ghost });
    } else {
      const current = this.byPath.get(path);
      if (current && current.block === event.block && current.turn === event.turn) this.byPath.delete(path);
      else if (current || event.state !== EDIT_STATE.APPLIED) return; // another block's region stays
      // (no region: a block so fast that it showed up applied; the view still follows it)
      const lines = event.detail && event.detail.lines;
      if (event.state === EDIT_STATE.APPLIED && Array.isArray(lines)) this.ends.set(path, lines[1]);
    }
    this.dirty.add(path);
  }

  // The last line the block that ended on `path` wrote, once (the view follows it there).
  takeEnd(path) {
    const line = this.ends.get(path) ?? null;
    this.ends.delete(path);
    return line;
  }

  finishTurn(turn) {
    for (const [path, info] of this.byPath) {
      if (info.turn === turn) {
        this.byPath.delete(path);
        this.dirty.add(path);
      }
    }
  }

  clear() {
    for (const path of this.byPath.keys()) this.dirty.add(path);
    this.byPath.clear();
  }

  get(path) {
    return this.byPath.get(path) || null;
  }

  takeDirty() {
    const dirty = this.dirty;
    this.dirty = new Set();
    for (const path of this.ends.keys()) if (!dirty.has(path)) this.ends.delete(path);
    return dirty;
  }
}
