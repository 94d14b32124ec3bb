// What the model is doing in a file, drawn over the editor: the region it is rewriting, the
// candidate places while it is still locating, and the ghost of the line it has not finished.
// The store keeps the latest `edit.status` per path (background tabs too); the editor
// extension draws the active file's entry, recomputed from line numbers on every change.
import { StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, WidgetType } from "@codemirror/view";

const IN_FLIGHT = new Set(["locating", "streaming"]);
// A whole-file rewrite of a huge file would otherwise mean one decoration per line per frame.
const MAX_DECORATED_LINES = 2000;

export const setLiveRegion = StateEffect.define();

class GhostWidget extends WidgetType {
  constructor(text) {
    super();
    this.text = text;
  }

  eq(other) {
    return other.text === this.text;
  }

  toDOM() {
    const line = document.createElement("div");
    line.className = "cm-live-ghost";
    line.setAttribute("aria-hidden", "true");
    line.textContent = this.text;
    const caret = document.createElement("span");
    caret.className = "cm-live-caret";
    line.append(caret);
    return line;
  }

  ignoreEvent() {
    return true;
  }
}

const regionLine = Decoration.line({ class: "cm-live-region" });
const candidateLine = Decoration.line({ class: "cm-live-candidate" });

function lineDecorations(doc, first, last, decoration, out) {
  const from = Math.max(1, first);
  const to = Math.min(doc.lines, last, from + MAX_DECORATED_LINES - 1);
  for (let number = from; number <= to; number++) out.push(decoration.range(doc.line(number).from));
}

function build(info, doc) {
  if (!info) return Decoration.none;
  const ranges = [];
  const detail = info.detail;
  if (Array.isArray(detail.lines)) {
    lineDecorations(doc, detail.lines[0], detail.lines[1], regionLine, ranges);
  } else if (Array.isArray(detail.candidates)) {
    for (const line of detail.candidates) lineDecorations(doc, line, line, candidateLine, ranges);
  }
  if (info.state === "streaming" && typeof detail.ghost === "string") {
    const widget = new GhostWidget(detail.ghost);
    const at = detail.ghost_line;
    // The ghost sits where the line will land: above ghost_line, or after the last line.
    ranges.push(at && at <= doc.lines
      ? Decoration.widget({ widget, block: true, side: -1 }).range(doc.line(at).from)
      : Decoration.widget({ widget, block: true, side: 1 }).range(doc.length));
  }
  return Decoration.set(ranges, true);
}

const liveField = StateField.define({
  create: () => ({ info: null, decorations: Decoration.none }),
  update(value, transaction) {
    let info = value.info;
    for (const effect of transaction.effects) if (effect.is(setLiveRegion)) info = effect.value;
    if (info === value.info && !transaction.docChanged) return value;
    return { info, decorations: build(info, transaction.state.doc) };
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.decorations),
});

export function liveDecorations() {
  return liveField;
}

// Where to scroll to follow the model: the ghost, else the end of the region.
export function followPosition(info, doc) {
  if (!info) return null;
  const detail = info.detail;
  const line = detail.ghost_line || (Array.isArray(detail.lines) ? detail.lines[1] : null)
    || (Array.isArray(detail.candidates) ? detail.candidates[0] : null);
  if (!line) return null;
  return line > doc.lines ? doc.length : doc.line(Math.max(1, line)).from;
}

export class LiveRegions {
  constructor() {
    this.byPath = new Map(); // path -> {turn, block, state, detail}
    this.dirty = new Set();
  }

  update(event) {
    const { path, state } = event;
    if (!path) return;
    if (IN_FLIGHT.has(state)) {
      this.byPath.set(path, { turn: event.turn, block: event.block, state, detail: event.detail || {} });
    } else {
      const current = this.byPath.get(path);
      if (!current || current.block !== event.block || current.turn !== event.turn) return;
      this.byPath.delete(path);
    }
    this.dirty.add(path);
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
    return dirty;
  }
}
