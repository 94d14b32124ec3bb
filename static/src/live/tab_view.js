// Moving the editor view to a line: the model's line when it leaves what is in sight, a
// finding's line clicked in the transcript. Plain functions of a CodeMirror view.
import { EditorView } from "@codemirror/view";
import { lineStart, setLiveRegion } from "./decorations.js";

// The model's line counts as in sight this many lines inside the editor's visible edges.
const SIGHT_MARGIN_LINES = 3;

// Is `line` well inside what the editor showed at its last measure? Then the view stays:
// following the model line by line would scroll (and repaint the editor) on every frame;
// once it leaves, the view puts it in the middle, which lasts half a screen of lines.
export function inSight(view, line) {
  const ranges = view.visibleRanges;
  if (!ranges.length) return false;
  const doc = view.state.doc;
  const first = doc.lineAt(ranges[0].from).number;
  const last = doc.lineAt(ranges[ranges.length - 1].to).number;
  return line >= first + SIGHT_MARGIN_LINES && line <= last - SIGHT_MARGIN_LINES;
}

// The effects that draw the model's region `info` in `doc` and bring `line` into view (null:
// the view stays).
export function regionEffects(view, { info, line }, doc) {
  const effects = [setLiveRegion.of(info)];
  if (line !== null && !inSight(view, line)) effects.push(EditorView.scrollIntoView(lineStart(line, doc), { y: "center" }));
  return effects;
}

// The cursor at the start of `line` (clamped into the file), in the middle of the view.
export function putCursorOnLine(view, line) {
  const doc = view.state.doc;
  const at = doc.line(Math.min(Math.max(Number(line) || 1, 1), doc.lines)).from;
  view.dispatch({ selection: { anchor: at }, effects: EditorView.scrollIntoView(at, { y: "center" }) });
  view.focus();
}

// Bring a line of the view's file into the middle of the view, unless it is well in sight.
export function revealLine(view, line) {
  if (inSight(view, line)) return;
  view.dispatch({ effects: EditorView.scrollIntoView(lineStart(line, view.state.doc), { y: "center" }) });
}

// The line of a position of the view's file (clamped into it).
export function lineOfIndex(view, index) {
  const doc = view.state.doc;
  return doc.lineAt(Math.min(Math.max(index, 0), doc.length)).number;
}
