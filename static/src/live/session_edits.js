// What the live page does with an edit block's status besides drawing its chip: tell the
// person what they should know (a failed edit, their changes kept), open and follow the file
// the model writes, move a moved file's tab; and, each frame, put the model's region into
// the editor.
import { BLOCK_OPERATION, EDIT_STATE, EDIT_STATES_IN_FLIGHT } from "../protocol.js";
import { chipLabel } from "./chips.js";
import { followLine } from "./decorations.js";

// What a person should know about a block without opening the transcript.
export function explainEdit(toasts, { path, state, detail }) {
  const conflicts = detail && detail.conflict && detail.conflict.lines;
  if (state === EDIT_STATE.FAILED) {
    toasts.show(`The edit to ${path} failed: ${detail.message || detail.reason || "no match"}`, "warn");
  } else if (state === EDIT_STATE.APPLIED && Array.isArray(conflicts) && conflicts.length) {
    toasts.show(`${path}: your changes on line ${conflicts.join(", ")} were kept`, "warn");
  }
}

// The first status of a path opens its tab; the view follows the block being written
// unless the person clicked or typed in the editor a moment ago.
// A patch's file operations move tabs: a moved file's tab follows it (and back, when a revert
// rolls the move back); a deleted file's tab closes as its file leaves the document.
// running: the turn the model is writing (or null); replayed: the event is history (a replay
// on joining), not news.
export function followEdit(event, { tabs, landing, follow, running, replayed }) {
  const detail = event.detail || {};
  if (detail.operation === BLOCK_OPERATION.MOVE && detail.target && !replayed) {
    if (event.state === EDIT_STATE.APPLIED) tabs.renamed(event.path, detail.target);
    else if (event.state === EDIT_STATE.ROLLED_BACK) tabs.renamed(detail.target, event.path);
  }
  // The file the block is about as it is now (none for a deleted file).
  const { file } = chipLabel(event.path, event.state, detail);
  // A block written faster than the statuses are sent may first show up applied: the
  // running turn's file opens all the same.
  if (file && event.turn === running) landing.turnAt(file);
  const writing = EDIT_STATES_IN_FLIGHT.has(event.state)
    || (event.state === EDIT_STATE.APPLIED && event.turn === running && !replayed);
  if (writing && file) {
    follow.modelAt(file, followLine({ detail }));
    const mayFollow = follow.mayFollowTo(file);
    if (!tabs.has(file)) tabs.open(file, { activate: mayFollow, focus: false, later: true });
    else if (mayFollow && tabs.active !== file) tabs.activate(file, { focus: false, following: true });
  }
}

// The regions that changed since the last frame, into the active editor: the model's ghost
// or the last line it wrote, and the tabs' "model is writing here" marks.
export function paintRegions(regions, tabs, follow) {
  const dirty = regions.takeDirty();
  if (dirty.size === 0) return;
  const active = tabs.active;
  if (active && dirty.has(active) && tabs.view) {
    const info = regions.get(active);
    // While a block streams, its ghost; once it is applied, the last line it wrote.
    const end = regions.takeEnd(active);
    // Most statuses of a streaming block only move its ghost's text along the line: that is
    // painted into the ghost's node, without an editor transaction (whose cost, with every
    // extension's update and a measure after it, does not depend on how little changed).
    if (!(info && end === null && tabs.drawsRegion(active, info))) {
      const line = follow.mayScroll() ? (info ? followLine(info) : end) : null;
      tabs.stageRegion(active, info, line);
    }
    if (info) info.ghost.paint();
  }
  tabs.render(); // the tabs' "model is writing here" marks
}
