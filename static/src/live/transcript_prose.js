// A turn's prose on the page: in parts, so that a delta lays out one part and not the whole
// growing text, and with its oldest parts off the page (behind a "show earlier" button) past
// PROSE_DOM_CHARS. Plain functions of a turn's entry (Transcript.entry()).
import { element } from "./dom.js";

// At Spark's speed a turn's prose grows by tens of kilobytes a second. Laying out one
// growing paragraph costs the whole text on every frame, so prose goes into parts: a part
// is closed at the first line break after PART_CHARS (or, in a paragraph that never breaks,
// such as the thousands of words a model writes on one line, at a space before
// PART_MAX_CHARS) and only the open part is laid out again: what a delta costs the layout
// is bounded by PART_MAX_CHARS, however long the line it continues.
export const PART_CHARS = 2048;
export const PART_MAX_CHARS = 4096;
// A block's chip has a part of its own (a status redraws the chip alone, not the paragraph
// before it) and weighs this much prose when the page decides what to keep.
export const CHIP_CHARS = 64;
// The page stays light however long the session: a turn keeps about PROSE_DOM_CHARS of its
// prose on the page, the parts before that wait behind a "show earlier" button (at most
// HIDDEN_CHARS of them, as plain text, and only for the last HIDDEN_TURNS finished turns),
// and older turns fold or leave the page (transcript.js FULL_TURNS, MAX_TURNS).
export const PROSE_DOM_CHARS = 32768;
export const HIDDEN_CHARS = 262144;
export const HIDDEN_TURNS = 3; // only the last few finished turns keep their earlier text

// Where to end the piece of `text` that goes into a part holding `chars` characters: all of
// it while the part is small; past PART_CHARS, just after a line break; past PART_MAX_CHARS
// (a paragraph that never breaks), just after a space, or anywhere.
export function partCut(chars, text) {
  if (chars + text.length <= PART_CHARS) return text.length;
  const newline = text.indexOf("\n", Math.max(0, PART_CHARS - chars));
  const limit = PART_MAX_CHARS - chars;
  if (limit <= 0) return 0; // full: all of it goes into the next part
  if (newline >= 0 && newline < limit) return newline + 1;
  if (text.length <= limit) return text.length;
  const space = text.lastIndexOf(" ", limit - 1);
  return space >= 0 ? space + 1 : limit;
}

// The turn's open part, or a new one at the end of its prose.
export function openPart(entry) {
  if (!entry.part) {
    entry.part = { box: element("div", "prose-part"), text: null, chars: 0 };
    entry.parts.push(entry.part);
    entry.prose.append(entry.part.box);
  }
  return entry.part;
}

// Text at the end of the turn's prose: into its open part, and new parts as they fill.
export function writeProse(entry, text) {
  while (text) {
    const part = openPart(entry);
    const end = partCut(part.chars, text);
    const piece = text.slice(0, end);
    if (piece && !part.text) {
      part.text = document.createTextNode("");
      part.box.append(part.text);
    }
    if (piece) part.text.appendData(piece);
    part.chars += piece.length;
    entry.shownChars += piece.length;
    if (end < text.length) entry.part = null; // full: the rest goes into a new part
    text = text.slice(end);
  }
}

// How many line breaks (0 to 2) the turn's prose ends with, drawn or still buffered; after a
// chip, or before any prose, two (a paragraph starts there).
export function endingBreaks(entry) {
  const last = entry.parts[entry.parts.length - 1];
  const drawn = !last || last.box.childElementCount ? "\n\n" : last.box.textContent.slice(-2);
  const tail = (drawn + entry.buffer).slice(-2);
  return tail === "\n\n" ? 2 : tail.endsWith("\n") ? 1 : 0;
}

// A block's box in a part of its own: a status redraws the chip, not the paragraph it
// follows; prose after the block starts a new part.
export function placeBlock(entry, box) {
  entry.part = null;
  const part = openPart(entry);
  part.box.append(box);
  part.chars = CHIP_CHARS;
  entry.shownChars += CHIP_CHARS;
  entry.part = null;
}

// A part that leaves the page, as it is kept: text alone as a string, not as detached nodes;
// a part with a chip stays whole.
function kept(part) {
  return part.box.childElementCount ? part : { box: null, words: part.box.textContent, chars: part.chars };
}

// All of the turn's prose on the page and the head of `text` go behind "show earlier";
// returns the last PROSE_DOM_CHARS or so of `text`, from a line start when one is near.
export function hideHead(entry, text) {
  let keepFrom = text.length - PROSE_DOM_CHARS;
  const newline = text.indexOf("\n", keepFrom);
  if (newline >= 0 && newline - keepFrom < PART_CHARS) keepFrom = newline + 1;
  for (const part of entry.parts) {
    part.box.remove();
    entry.hidden.push(kept(part));
    entry.hiddenChars += part.chars;
  }
  entry.parts = [];
  entry.part = null;
  entry.shownChars = 0;
  for (let at = 0; at < keepFrom; at += PART_MAX_CHARS) {
    const piece = text.slice(at, Math.min(keepFrom, at + PART_MAX_CHARS));
    entry.hidden.push({ box: null, text: null, chars: piece.length, words: piece });
    entry.hiddenChars += piece.length;
  }
  trimProse(entry, true);
  return text.slice(keepFrom);
}

// Past PROSE_DOM_CHARS, a turn's oldest parts leave the page for its "show earlier" button.
export function trimProse(entry, moved = false) {
  if (entry.expanded) return;
  while (entry.shownChars > PROSE_DOM_CHARS && entry.parts.length > 1) {
    const part = entry.parts.shift();
    part.box.remove();
    entry.shownChars -= part.chars;
    entry.hidden.push(kept(part));
    entry.hiddenChars += part.chars;
    moved = true;
  }
  while (entry.hiddenChars > HIDDEN_CHARS && entry.hidden.length) {
    const part = entry.hidden.shift();
    entry.hiddenChars -= part.chars;
    entry.droppedChars += part.chars;
  }
  if (moved) showMore(entry);
}

// The "show earlier" button: what it would show, or that the earliest text is gone.
export function showMore(entry) {
  if (!entry.more) {
    entry.more = element("button", "prose-more");
    entry.more.type = "button";
    entry.more.addEventListener("click", () => expandProse(entry));
    entry.prose.prepend(entry.more);
  }
  const kb = (chars) => `${Math.max(1, Math.round(chars / 1024))} KB`;
  const dropped = `The first ${kb(entry.droppedChars)} of this answer are no longer kept on this page`;
  entry.more.disabled = entry.hidden.length === 0;
  entry.more.textContent = entry.hidden.length ? `Show ${kb(entry.hiddenChars)} of earlier text` : dropped;
  entry.more.title = entry.droppedChars ? dropped : "Earlier text of this answer, kept off the page while it streams";
}

// A finished turn's earlier text is kept while it is among the last HIDDEN_TURNS to have any
// (`withHidden`: those turns, oldest first).
export function keepHidden(withHidden, entry) {
  if (!entry.hidden.length) return;
  withHidden.push(entry);
  while (withHidden.length > HIDDEN_TURNS) {
    const old = withHidden.shift();
    if (!old.hidden.length) continue; // shown meanwhile
    old.droppedChars += old.hiddenChars;
    old.hidden = [];
    old.hiddenChars = 0;
    showMore(old);
  }
}

// The person asked for the earlier prose: it goes back, and this turn is not trimmed again.
export function expandProse(entry) {
  entry.expanded = true;
  const first = entry.parts.length ? entry.parts[0].box : null;
  for (const part of entry.hidden) {
    if (!part.box) { // text that never was on the page
      part.box = element("div", "prose-part", part.words);
      part.words = null;
    }
    entry.prose.insertBefore(part.box, first);
  }
  entry.parts = entry.hidden.concat(entry.parts);
  entry.shownChars += entry.hiddenChars;
  entry.hidden = [];
  entry.hiddenChars = 0;
  if (entry.droppedChars) {
    showMore(entry);
  } else {
    entry.more.remove();
    entry.more = null;
  }
}
