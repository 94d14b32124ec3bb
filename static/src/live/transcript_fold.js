// Folding a finished turn: its prose and chips leave the page for a one-line button that
// tells its outcome; what they showed is kept as data (text as strings, each block as its last
// status), not as nodes, and drawn again when the person opens it (Transcript.unfold).
import { element } from "./dom.js";
import { foldWords } from "./transcript_labels.js";

// A block's record in a folded turn, from its view (`onPage`: its chip was on the page, so
// its code as shown is kept).
function blockRecord(view, onPage) {
  if (!onPage) return { folded: true, status: view.status, lines: view.lines, shown: null, fenced: false };
  return {
    folded: true, status: view.status, lines: view.lines, shown: view.shown ?? null,
    fenced: Boolean(view.code), language: view.language || null, more: view.moreLines || 0,
  };
}

// The turn's text and blocks in order ({pieces, chars}); each block's view in entry.blocks
// becomes its record, and forget(view) is told of each view that leaves.
function foldedPieces(entry, forget) {
  const blockOf = new Map();
  for (const [block, view] of entry.blocks) blockOf.set(view.box, block);
  const pieces = [];
  let chars = 0;
  const take = (part) => {
    if (!part.box) { // text that never was on the page, or left it
      if (part.words) pieces.push(part.words);
      chars += part.chars;
      return;
    }
    for (const node of part.box.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) {
        pieces.push(node.data);
        chars += node.data.length;
      } else if (blockOf.has(node)) {
        const block = blockOf.get(node);
        const view = entry.blocks.get(block);
        const record = blockRecord(view, true);
        entry.blocks.set(block, record);
        forget(view);
        pieces.push(record);
      }
    }
  };
  for (const part of entry.hidden) take(part);
  for (const part of entry.parts) take(part);
  for (const [block, view] of entry.blocks) { // a block whose text is no longer kept at all
    if (view.folded) continue;
    forget(view);
    entry.blocks.set(block, blockRecord(view, false));
  }
  return { pieces, chars };
}

// Fold a finished turn (its entry, with its outcome): onOpen() is called when the person
// clicks its button.
export function foldTurn(entry, forget, onOpen) {
  const { pieces, chars } = foldedPieces(entry, forget);
  entry.folded = pieces;
  entry.parts = [];
  entry.part = null;
  entry.shownChars = 0;
  entry.hidden = [];
  entry.hiddenChars = 0;
  entry.more = null;
  const blocks = pieces.filter((piece) => typeof piece !== "string").length;
  entry.prose.replaceChildren(foldButton(entry, chars, blocks, onOpen));
  const footer = entry.article.querySelector(":scope > .turn-foot");
  if (footer) footer.remove(); // the button says the outcome; the footer comes back with the text
}

// (A function of its own: a listener made in foldTurn() would keep its locals, and with them
// the nodes that left the page.)
function foldButton(entry, chars, blocks, onOpen) {
  const button = element("button", "prose-fold");
  button.type = "button";
  const { text, title } = foldWords(entry.outcome, chars, blocks, entry.droppedChars);
  button.textContent = text;
  button.title = title;
  button.addEventListener("click", onOpen);
  return button;
}
