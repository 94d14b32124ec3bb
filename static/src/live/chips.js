// What an edit block's chip says (the transcript draws it, the live page follows the file it
// names): its kind or a patch's file operation, the file as the chip names it, and the file a
// click opens.
import { BLOCK_KIND, BLOCK_OPERATION, EDIT_STATE } from "../protocol.js";

// The word before a chip's file, for a block of an `apply_patch` call (`detail.operation`);
// other blocks say their kind. Every operation the server defines has one (a test holds them
// to the generated list).
export const OPERATION_LABELS = Object.freeze({
  [BLOCK_OPERATION.ADD]: "add",
  [BLOCK_OPERATION.DELETE]: "delete",
  [BLOCK_OPERATION.UPDATE]: "edit",
  [BLOCK_OPERATION.MOVE]: "move",
});

// What a block's chip says and where a click on it goes, from its latest status: {kind (the
// word before the file), place (the file as the chip names it), file (the file a click opens,
// null for none)}. A hunk of an `apply_patch` call names its file and hunk ("app.py · hunk
// 2"), a move both paths ("a.py → b.py"); a click opens the file where it is now: a moved
// file at its new path, a deleted one nowhere (until a revert brings it back).
export function chipLabel(path, state, detail) {
  const { operation, hunk, target } = detail;
  const place = path || "?";
  const kind = OPERATION_LABELS[operation] || detail.kind || BLOCK_KIND.EDIT;
  const applied = state === EDIT_STATE.APPLIED;
  if (operation === BLOCK_OPERATION.MOVE && target) {
    return { kind, place: `${place} → ${target}`, file: applied ? target : path || null };
  }
  if (operation === BLOCK_OPERATION.DELETE) return { kind, place, file: applied ? null : path || null };
  const file = path || null;
  return { kind, place: typeof hunk === "number" ? `${place} · hunk ${hunk}` : place, file };
}

// A failed block's chip says why in a few words (the reason the server gave, e.g. "no
// match"); its title has the whole message.
export function failureWords(detail) {
  return typeof detail.reason === "string" ? detail.reason.replaceAll("_", " ") : "";
}
