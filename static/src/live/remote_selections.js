// Other people's carets and selections in the editor, from Yjs awareness (`cursor`, and `user`
// with its colour), and this page's own cursor told to them. It does what y-codemirror.next's
// yRemoteSelections does, with the same class names (static/css/live.css styles them), but
// under the page's Content-Security-Policy: that plugin writes each caret's colour into a
// style attribute (setAttribute), which a policy without 'unsafe-inline' refuses; here the
// colour goes through the CSSOM (element.style, and CodeMirror's attributes, which it sets
// as style.cssText), which a policy does not restrict. A colour is also taken only in the
// "#rrggbb" form: it comes from another browser, and must not carry more CSS than a colour.
import { Annotation, RangeSet } from "@codemirror/state";
import { Decoration, ViewPlugin, WidgetType } from "@codemirror/view";
import * as Y from "yjs";

const COLOUR = /^#[0-9a-f]{6}$/i;
const LIGHT = /^#[0-9a-f]{8}$/i;
const DEFAULT_COLOUR = "#30bced";
const remoteChanged = Annotation.define();

function colours(user) {
  const color = user && COLOUR.test(user.color || "") ? user.color : DEFAULT_COLOUR;
  const light = user && LIGHT.test(user.colorLight || "") ? user.colorLight : `${color}33`;
  const name = user && typeof user.name === "string" ? user.name : "Anonymous";
  return { color, light, name };
}

class CaretWidget extends WidgetType {
  constructor(color, name) {
    super();
    this.color = color;
    this.name = name;
  }

  toDOM() {
    const caret = document.createElement("span");
    caret.className = "cm-ySelectionCaret";
    caret.style.backgroundColor = this.color;
    caret.style.borderColor = this.color;
    const dot = document.createElement("div");
    dot.className = "cm-ySelectionCaretDot";
    const info = document.createElement("div");
    info.className = "cm-ySelectionInfo";
    info.textContent = this.name;
    // Word joiners around the parts, as y-codemirror.next has them (line breaking, selection).
    caret.append("\u2060", dot, "\u2060", info, "\u2060");
    return caret;
  }

  eq(other) {
    return other.color === this.color && other.name === this.name;
  }

  get estimatedHeight() {
    return -1;
  }

  ignoreEvent() {
    return true;
  }
}

function selectionMarks(decorations, doc, from, to, light) {
  const mark = Decoration.mark({ class: "cm-ySelection", attributes: { style: `background-color: ${light}` } });
  const first = doc.lineAt(from);
  const last = doc.lineAt(to);
  if (first.number === last.number) {
    if (from < to) decorations.push(mark.range(from, to));
    return;
  }
  if (from < first.to) decorations.push(mark.range(from, first.to));
  for (let number = first.number + 1; number < last.number; number += 1) {
    const line = doc.line(number);
    decorations.push(Decoration.line({
      class: "cm-yLineSelection", attributes: { style: `background-color: ${light}` },
    }).range(line.from));
  }
  if (last.from < to) decorations.push(mark.range(last.from, to));
}

// ytext: the tab's Y.Text; awareness: the page's Yjs awareness.
export function remoteSelections(ytext, awareness) {
  return ViewPlugin.fromClass(class {
    constructor(view) {
      this.decorations = RangeSet.empty;
      this.listener = ({ added, updated, removed }) => {
        const others = added.concat(updated, removed).some((id) => id !== awareness.clientID);
        if (others) view.dispatch({ annotations: remoteChanged.of(true) });
      };
      awareness.on("change", this.listener);
    }

    destroy() {
      awareness.off("change", this.listener);
    }

    update(update) {
      this.tellMine(update);
      this.decorations = this.draw(update.state.doc);
    }

    // This page's selection, as Yjs relative positions, while the editor has the focus.
    tellMine(update) {
      const local = awareness.getLocalState();
      if (local === null) return;
      const focused = update.view.hasFocus && update.view.dom.ownerDocument.hasFocus();
      if (!focused) return;
      const { anchor, head } = update.state.selection.main;
      const next = {
        anchor: Y.createRelativePositionFromTypeIndex(ytext, anchor),
        head: Y.createRelativePositionFromTypeIndex(ytext, head),
      };
      const current = local.cursor;
      const same = current && current.anchor && current.head
        && Y.compareRelativePositions(Y.createRelativePositionFromJSON(current.anchor), next.anchor)
        && Y.compareRelativePositions(Y.createRelativePositionFromJSON(current.head), next.head);
      if (!same) awareness.setLocalStateField("cursor", next);
    }

    draw(doc) {
      const decorations = [];
      const ydoc = ytext.doc;
      awareness.getStates().forEach((state, clientId) => {
        const cursor = state.cursor;
        if (clientId === awareness.clientID || !cursor || cursor.anchor == null || cursor.head == null) return;
        let anchor;
        let head;
        try {
          anchor = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(cursor.anchor), ydoc);
          head = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(cursor.head), ydoc);
        } catch {
          return; // a malformed position from another browser: no caret for it
        }
        if (!anchor || !head || anchor.type !== ytext || head.type !== ytext) return;
        const { color, light, name } = colours(state.user);
        const from = Math.min(anchor.index, head.index, doc.length);
        const to = Math.min(Math.max(anchor.index, head.index), doc.length);
        selectionMarks(decorations, doc, from, to, light);
        const at = Math.min(head.index, doc.length);
        decorations.push(Decoration.widget({
          side: head.index - anchor.index > 0 ? -1 : 1, // our own cursor stays outside their selection
          widget: new CaretWidget(color, name),
        }).range(at));
      });
      return Decoration.set(decorations, true);
    }
  }, { decorations: (plugin) => plugin.decorations });
}

// The document was replaced by a new one (tabs.js rebind): this page's cursor as last told,
// at the same offsets of the same file in the new document, where the others' pages look for
// it once they adopt it too. A relative position names an item of the old document, which the
// new one (the same texts, fresh item ids) does not hold.
export function moveCursor(awareness, oldFiles, files) {
  const local = awareness.getLocalState();
  const cursor = local && local.cursor;
  if (!cursor || !cursor.anchor || !cursor.head) return;
  const resolve = (relative) => Y.createAbsolutePositionFromRelativePosition(
    Y.createRelativePositionFromJSON(relative), oldFiles.doc,
  );
  const anchor = resolve(cursor.anchor);
  const head = resolve(cursor.head);
  const same = anchor && head && anchor.type === head.type;
  const path = same ? [...oldFiles.keys()].find((key) => oldFiles.get(key) === anchor.type) : undefined;
  const ytext = path === undefined ? null : files.get(path);
  if (!(ytext instanceof Y.Text)) {
    awareness.setLocalStateField("cursor", null); // its file is gone: none until the editor tells one
    return;
  }
  const map = positionMap(anchor.type.toString(), ytext.toString());
  const at = (index) => Y.createRelativePositionFromTypeIndex(ytext, Math.min(map(index), ytext.length));
  awareness.setLocalStateField("cursor", { anchor: at(anchor.index), head: at(head.index) });
}

// A position of text `before` moved into text `after`, through the one changed stretch between
// their common start and common end (a position inside it goes to its end in `after`).
export function positionMap(before, after) {
  let start = 0;
  const limit = Math.min(before.length, after.length);
  while (start < limit && before[start] === after[start]) start += 1;
  let end = 0;
  while (end < limit - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end += 1;
  const shift = after.length - before.length;
  return (pos) => {
    if (pos <= start) return pos;
    if (pos >= before.length - end) return pos + shift;
    return after.length - end;
  };
}
