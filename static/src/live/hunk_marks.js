// Keep / Undo in the editor's gutter (issue 31): on the first line of every applied block of
// the file still waiting for review, a mark with two small buttons; hunk_review.js holds the
// blocks and says where each one is now (a Yjs relative position taken when it applied, so the
// mark stays on its block while people type above it). A viewer's buttons are disabled.
import { StateEffect } from "@codemirror/state";
import { GutterMarker, gutter } from "@codemirror/view";

// Dispatched when the blocks waiting for review changed: the marks are drawn again.
export const hunkMarksChanged = StateEffect.define();

class HunkMark extends GutterMarker {
  // items: the blocks starting on this line; source: the HunkReview.
  constructor(items, source) {
    super();
    this.items = items;
    this.source = source;
    this.key = items.map((item) => `${item.turn}:${item.block}:${item.pending}`).join(",") + source.canDrive();
  }

  eq(other) {
    return other.key === this.key;
  }

  toDOM() {
    const box = document.createElement("span");
    box.className = "cm-hunk-mark";
    const item = this.items[this.items.length - 1]; // the newest block on the line
    box.dataset.turn = item.turn;
    box.dataset.block = String(item.block);
    const can = this.source.canDrive() && !item.pending;
    for (const [decision, label, title] of [
      ["keep", "✓", "Keep this change (Alt+Y)"], ["undo", "↶", "Undo this change alone (Alt+N)"],
    ]) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = `cm-hunk-${decision}`;
      button.textContent = label;
      button.title = title;
      button.disabled = !can;
      button.addEventListener("mousedown", (event) => event.preventDefault()); // the editor keeps its selection
      button.addEventListener("click", () => this.source.decide(item, decision));
      box.append(button);
    }
    return box;
  }
}

// The gutter of the file at `path`; source.marks(path, state): Map line number -> blocks.
export function hunkGutter(path, source) {
  return gutter({
    class: "cm-hunk-gutter",
    lineMarker(view, line) {
      const items = source.marks(path, view.state).get(view.state.doc.lineAt(line.from).number);
      return items ? new HunkMark(items, source) : null;
    },
    lineMarkerChange: (update) => update.transactions.some((tr) => tr.effects.some((e) => e.is(hunkMarksChanged))),
  });
}
