// The transcript's edit blocks: each one a chip (kind, path, state, lines written, what a
// merge replaced or why it failed; for a patch's block, its hunk or file operation:
// chipLabel) and, for a small model's code fence, the code it wrote, highlighted. A block's
// view is a plain object; these functions build and paint it from its latest status.
import { classHighlighter, highlightCode } from "@lezer/highlight";
import { languageFor } from "../languages.js";
import { BLOCK_KIND, EDIT_STATE, EDIT_STATES_IN_FLIGHT } from "../protocol.js";
import { chipLabel, failureWords } from "./chips.js";
import { element, setData, setText, setTitle } from "./dom.js";
import { STATE_LABELS, mergeSummary } from "./transcript_labels.js";

// In these states `detail.lines` is the region the block wrote: the chip counts its lines.
// One that failed or was rolled back counts what it had written when it stopped
// (`detail.written`), or keeps its count (a revert's rolled_back, after its applied).
const WRITTEN = new Set([EDIT_STATE.STREAMING, EDIT_STATE.APPLIED]);

// The region [first, last] a status says the block wrote, or null.
export function writtenLines(state, detail) {
  const lines = WRITTEN.has(state) ? detail.lines : detail.written;
  return Array.isArray(lines) ? lines : null;
}
// A fence being written shows this much of its region of the document (the server bounds the
// code of a final status the same way: editing/status.py code_head): longer blocks show their
// start, longer lines theirs; the editor has the rest.
const MAX_CODE_LINES = 400;
const CODE_LINE_CHARS = 2000;

// The lines [start, end] (1-based, inclusive) of a text, at most MAX_CODE_LINES of them, each
// cut at CODE_LINE_CHARS: found by looking for line breaks, not by splitting the whole file,
// and a model's one-line data literal is not highlighted again on every frame.
export function region(text, [start, end]) {
  let at = 0;
  for (let line = 1; line < start; line += 1) {
    const stop = text.indexOf("\n", at);
    if (stop < 0) return "";
    at = stop + 1;
  }
  const lines = [];
  const last = Math.min(end, start - 1 + MAX_CODE_LINES);
  for (let line = Math.max(start, 1); line <= last; line += 1) {
    const stop = text.indexOf("\n", at);
    const upTo = stop < 0 ? text.length : stop;
    lines.push(upTo - at > CODE_LINE_CHARS ? `${text.slice(at, at + CODE_LINE_CHARS)}…` : text.slice(at, upTo));
    if (stop < 0) break;
    at = stop + 1;
  }
  return lines.join("\n");
}

function highlighted(code, parser) {
  const out = document.createDocumentFragment();
  const put = (text, classes) => out.append(classes ? element("span", classes, text) : document.createTextNode(text));
  if (parser) highlightCode(code, parser.parse(code), classHighlighter, put, () => put("\n", ""));
  else put(code, "");
  return out;
}

// The language parser for a fenced block: its file's (as the editor shows it), else the
// fence's info string taken as an extension (```py, ```js).
function parserFor(path, language) {
  const support = [languageFor(path || ""), language ? languageFor(`fence.${language}`) : []]
    .find((found) => found && found.language);
  return support ? support.language.parser : null;
}

// A fence's code as its final status records it (`detail.code`, `detail.code_lines`), as the
// block shows it: {code: without the line break that ends its last line, more: how many
// lines the server left out}.
export function recordedCode(detail) {
  const code = detail.code;
  const total = detail.code_lines;
  const more = typeof total === "number" ? Math.max(0, total - (code.match(/\n/g) || []).length) : 0;
  return { code: code.endsWith("\n") ? code.slice(0, -1) : code, more };
}

// A block's view: a chip; for a small model's code fence, a chip over the code it wrote
// (`box` is what goes on the page).
export function newBlockView(detail) {
  const view = {
    chip: element("button", "chip"),
    kind: element("span", "chip-kind", detail.kind || BLOCK_KIND.EDIT),
    path: element("span", "chip-path", "?"),
    count: element("span", "chip-count", ""),
    state: element("span", "chip-state"),
    note: element("span", "chip-note", ""), // what a merge did, or why the block failed
    lines: null, // the region [first, last] as of the latest streaming/applied status
    status: null,
    code: null,
    recorded: null, // a fence's code as its final status recorded it (recordedCode)
  };
  view.chip.type = "button";
  view.chip.append(view.kind, view.path, view.count, view.state, view.note);
  if (detail.fenced) {
    const figure = element("figure", "code-block");
    view.code = element("code");
    view.shown = null; // the code text last drawn (null: none yet)
    view.moreLines = 0; // lines of the recorded code the server left out
    view.moreNote = element("p", "code-more");
    view.language = detail.language || null;
    figure.append(view.chip, element("pre"), view.moreNote);
    figure.children[1].append(view.code);
    figure.classList.add("no-code"); // until it has code to show
    view.box = figure;
  } else {
    view.box = view.chip;
  }
  return view;
}

// The chip as the block's latest status says it (`view.ended`: its turn is over).
export function paintChip(view) {
  const { path, state, detail } = view.status;
  const chip = view.chip;
  setData(chip, "state", state);
  setData(view.box, "state", state);
  const unfinished = view.ended && EDIT_STATES_IN_FLIGHT.has(state);
  chip.classList.toggle("unfinished", Boolean(unfinished));
  const stateText = unfinished ? "not finished" : STATE_LABELS[state] || state;
  setText(view.state, stateText);
  const { kind, place, file } = chipLabel(path, state, detail);
  setText(view.kind, kind);
  setText(view.path, place);
  setData(chip, "path", file || null); // a deleted file: nothing to open
  if (view.lines) setText(view.count, `+${view.lines[1] - view.lines[0] + 1}`);
  const merged = state === EDIT_STATE.APPLIED ? mergeSummary(detail.merge) : "";
  setText(view.note, state === EDIT_STATE.FAILED ? failureWords(detail) : merged);
  const label = `${place} ${stateText}`;
  const why = detail.message || detail.reason || merged;
  setTitle(chip, why ? `${label}: ${why}` : label);
}

// A fence's code: drawn again only when it changed.
export function showCode(view, path, code, more) {
  if (more !== view.moreLines) {
    view.moreLines = more;
    view.moreNote.textContent = more ? `${more} more line${more === 1 ? "" : "s"} not shown` : "";
  }
  if (code === view.shown) return;
  view.box.classList.remove("no-code");
  view.shown = code;
  if (view.parser === undefined) view.parser = parserFor(path, view.language);
  view.code.replaceChildren(highlighted(code, view.parser));
}
