// A tab's CodeMirror state: the editor's extensions for its file (language, indentation, the
// Yjs binding and others' carets, the model's live region, the watchdog's findings, the type
// size), and the state built again on its Y.Text when that text moved on or was replaced.
import { EditorView, basicSetup } from "codemirror";
import { EditorSelection, EditorState, Transaction } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import * as Y from "yjs";
import { yCollab, yRemoteSelectionsTheme, yUndoManagerKeymap } from "y-codemirror.next";
import { editorNonce } from "../csp.js";
import { indentationFor, languageFor } from "../languages.js";
import { remoteSelections } from "./remote_selections.js";
import { liveDecorations } from "./decorations.js";
import { diagnosticsExtensions } from "./diagnostics.js";
import { steerRegionField } from "./edit_steer.js";

// Presenter mode's type, as a theme of the editor's own: CodeMirror positions the line numbers
// from the line heights it measured, and reads them again only when its content changes
// height, it is redrawn, or its theme changes. Type made larger by a page style alone, in a
// file shorter than the editor (whose content keeps the editor's height whatever the type),
// left the numbers where the old lines were; a theme tells it to measure again.
export const LARGE_TYPE = EditorView.theme({ "&.cm-editor .cm-scroller": { fontSize: "22px", lineHeight: "1.5" } });

// The extensions of a tab's state. typeSize: the compartment of the type size (largeType: the
// presenter's is on); extendRemote(transaction): the spec added to a transaction from Yjs.
// hunkMarks(path): the gutter of Keep / Undo marks of the blocks waiting for review (hunk_marks.js).
// inlinePrompt(path): Ctrl+K's prompt box at the selection (inline_prompt.js), for a driver.
export function tabExtensions(path, tab, {
  awareness, canEdit, typeSize, largeType, extendRemote, hunkMarks = null, inlinePrompt = null,
}) {
  return [
    inlinePrompt ? inlinePrompt(path) : [],
    keymap.of(yUndoManagerKeymap), // before basicSetup: undo only one's own typing, via Yjs
    basicSetup,
    languageFor(path),
    indentationFor(path),
    EditorState.readOnly.of(!canEdit),
    EditorView.editable.of(canEdit),
    // Others' carets by our own plugin (remote_selections.js: no style attributes, which the
    // page's CSP refuses), so yCollab is given no awareness; the theme is y-codemirror's.
    yCollab(tab.ytext, null, { undoManager: tab.undo }),
    yRemoteSelectionsTheme,
    remoteSelections(tab.ytext, awareness),
    editorNonce(),
    typeSize.of(largeType ? LARGE_TYPE : []),
    liveDecorations(),
    diagnosticsExtensions(),
    EditorState.transactionExtender.of(extendRemote),
    hunkMarks ? hunkMarks(path) : [],
    steerRegionField, // a pending steering edit's lines (edit_steer.js)
  ];
}

// A new tab on a file's Y.Text; extensionsFor(tab): its state's extensions (tabExtensions).
export function newTab(ytext, extensionsFor) {
  const tab = { ytext, undo: new Y.UndoManager(ytext), state: null, scroll: null };
  tab.state = EditorState.create({ doc: ytext.toString(), extensions: extensionsFor(tab) });
  return tab;
}

// A tab's state that fell behind its Y.Text (an inactive tab is not bound to it), moved on to
// `text` by one change: what lies between the two texts' common start and common end (exact
// for text written at one place, as the model writes; a caret between two far-apart changes
// goes to the start of the one change). The selection, the language's parse and the other
// fields follow the change as they would a keystroke, where a state built again costs a whole
// new parse and every field made anew (7 ms for the file the model just opened, in the task
// that shows it). Not in the undo history.
export function caughtUp(state, text) {
  const old = state.doc.toString();
  if (old === text) return state;
  const shorter = Math.min(old.length, text.length);
  let from = 0;
  while (from < shorter && old.charCodeAt(from) === text.charCodeAt(from)) from += 1;
  let oldEnd = old.length;
  let newEnd = text.length;
  while (oldEnd > from && newEnd > from && old.charCodeAt(oldEnd - 1) === text.charCodeAt(newEnd - 1)) {
    oldEnd -= 1;
    newEnd -= 1;
  }
  return state.update({
    changes: { from, to: oldEnd, insert: text.slice(from, newEnd) },
    annotations: Transaction.addToHistory.of(false),
  }).state;
}

// The tab's state again on its Y.Text; `map` moves a position of the old text into the new
// one (else positions are only clamped).
export function rebuiltState(tab, extensions, map = (pos) => pos) {
  const doc = tab.ytext.toString();
  const clamp = (pos) => Math.min(map(pos), doc.length);
  const ranges = tab.state.selection.ranges.map((r) => EditorSelection.range(clamp(r.anchor), clamp(r.head)));
  return EditorState.create({
    doc, selection: EditorSelection.create(ranges, tab.state.selection.mainIndex), extensions,
  });
}
