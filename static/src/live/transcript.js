// The transcript: per turn, a header (prompt, steered from, effort), the model's prose, each
// edit block as a chip (kind, path, state, lines written, what a merge replaced or why it
// failed; for a patch's block, its hunk or file operation: chipLabel) and a small
// model's code fence as highlighted code, then a footer with the outcome and why. It renders
// what the server parsed:
// `turn.prose` (text outside blocks) and `edit.status` (a block's first status opens it, a
// final state closes it), in the order they came. Nothing here reads the model's raw text.
// A fence's code is the turn's own record: its final status carries the code the model wrote
// (`detail.code`), so a reloaded page, a late joiner and the replay show what the live page
// showed, whatever people typed into the file since; only while the fence is being written
// does the block show its lines of the document as they arrive.
// The watchdog's `guard.finding`s go under the turn's prose: a halt stands out (where, what,
// the fix asked for, a link to the correction turn), a flag is one quiet line.
// Work is buffered and drawn at most once per animation frame (flush()).
import { classHighlighter, highlightCode } from "@lezer/highlight";
import { languageFor } from "../languages.js";
import { BLOCK_KIND, EDIT_STATE, EDIT_STATES_IN_FLIGHT, FINISH_REASON, TURN_STATUS } from "../protocol.js";
import { chipLabel, failureWords } from "./chips.js";
import { shortPrompt } from "./notices.js";
import { element } from "./dom.js";
import { findingMessage, findingPlace } from "./diagnostics.js";

// A block's state as its chip says it, for every state the server defines (a test holds them
// to the generated list).
export const STATE_LABELS = Object.freeze({
  [EDIT_STATE.LOCATING]: "locating",
  [EDIT_STATE.STREAMING]: "writing",
  [EDIT_STATE.APPLIED]: "applied",
  [EDIT_STATE.ROLLED_BACK]: "rolled back",
  [EDIT_STATE.FAILED]: "failed",
});
// In these states `detail.lines` is the region the block wrote: the chip counts its lines.
// One that failed or was rolled back counts what it had written when it stopped
// (`detail.written`), or keeps its count (a revert's rolled_back, after its applied).
const WRITTEN = new Set([EDIT_STATE.STREAMING, EDIT_STATE.APPLIED]);

// The region [first, last] a status says the block wrote, or null.
function writtenLines(state, detail) {
  const lines = WRITTEN.has(state) ? detail.lines : detail.written;
  return Array.isArray(lines) ? lines : null;
}
// A fence being written shows this much of its region of the document (the server bounds the
// code of a final status the same way: editing/status.py code_head): longer blocks show their
// start, longer lines theirs; the editor has the rest.
const MAX_CODE_LINES = 400;
const CODE_LINE_CHARS = 2000;
// Why a turn ended (turn.finished `reason`), next to its outcome; "" where the outcome says it
// all. Every reason the server defines has one (a test holds them to the generated list); a
// reason this page does not know (a newer server) shows as its name.
export const REASON_LABELS = Object.freeze({
  [FINISH_REASON.ANSWERED]: "",
  [FINISH_REASON.NO_CHANGES]: "no changes",
  [FINISH_REASON.INCOMPLETE]: "cut short by the model",
  [FINISH_REASON.STOPPED]: "stopped",
  [FINISH_REASON.STEERED]: "",
  [FINISH_REASON.REVERTED]: "reverted",
  [FINISH_REASON.REPETITION]: "the model repeated itself",
  [FINISH_REASON.MODEL_UNAVAILABLE]: "the model could not be reached",
  [FINISH_REASON.MODEL_ERROR]: "the model answered with an error",
  [FINISH_REASON.NO_ANSWER]: "the model's connection ended without an answer",
  [FINISH_REASON.INTERNAL_ERROR]: "an error of the IDE (logged on the server)",
  [FINISH_REASON.STORAGE_FAILED]: "the document could not be saved, so the model was stopped",
  [FINISH_REASON.OWNER_LOST]: "the server running the turn went away",
  [FINISH_REASON.SHUTDOWN]: "the server shut down",
  [FINISH_REASON.GUARD_HALT]: "halted by the watchdog", // by status: GUARD_HALT_LABELS
  [FINISH_REASON.QUOTA]: "stopped: the course's AI token quota is used up",
  [FINISH_REASON.EXPLAIN_ONLY]: "explain-only: the model's edits were shown, not applied",
  [FINISH_REASON.CONNECTION_LOST]: "the connection to the model dropped",
  [FINISH_REASON.CONNECTION_EXPIRED]: "the model's connection reached its time limit",
  [FINISH_REASON.FIRST_BYTE_TIMEOUT]: "the model did not start answering in time",
  [FINISH_REASON.STALLED]: "the model stopped sending mid-answer",
  [FINISH_REASON.MODEL_PROTOCOL_ERROR]: "the model sent something that is not a valid event",
  [FINISH_REASON.MAX_ROUNDS]: "stopped at the round limit: the model was still calling tools",
});
// A watchdog halt (reason guard_halt), by how the turn ended: steered into a correction turn,
// or stopped because the model wrote the flaw again after the corrections it may have.
const GUARD_HALT_LABELS = {
  [TURN_STATUS.STEERED]: "halted by the watchdog: insecure code, the model was asked to fix it",
  [TURN_STATUS.CANCELLED]: "stopped by the watchdog: the model kept writing the flaw",
};
// The author of the turns the watchdog starts (turn.started `author`, turn.finished `by`).
export const WATCHDOG = "watchdog";
// What a turn.finished reason says, given its status ("" for nothing to add).
export function reasonLabel(status, reason) {
  if (reason === FINISH_REASON.GUARD_HALT && status in GUARD_HALT_LABELS) return GUARD_HALT_LABELS[status];
  if (Object.prototype.hasOwnProperty.call(REASON_LABELS, reason)) return REASON_LABELS[reason];
  return String(reason || "").replaceAll("_", " ");
}

// Who ended a turn (turn.finished `by`), for the reasons a person causes: "stopped by Ben".
const BY_LABELS = {
  [FINISH_REASON.STOPPED]: "stopped", [FINISH_REASON.STEERED]: "steered", [FINISH_REASON.REVERTED]: "reverted",
};
const NO_PROMPT = "(turn in progress)"; // the heading until its turn.started arrives
// At Spark's speed a turn's prose grows by tens of kilobytes a second. Laying out one
// growing paragraph costs the whole text on every frame, so prose goes into parts: a part
// is closed at the first line break after PART_CHARS (or, in a paragraph that never breaks,
// such as the thousands of words a model writes on one line, at a space before
// PART_MAX_CHARS) and only the open part is laid out again: what a delta costs the layout
// is bounded by PART_MAX_CHARS, however long the line it continues.
const PART_CHARS = 2048;
const PART_MAX_CHARS = 4096;
// A block's chip has a part of its own (a status redraws the chip alone, not the paragraph
// before it) and weighs this much prose when the page decides what to keep.
const CHIP_CHARS = 64;
// The page stays light however long the session: a turn keeps about PROSE_DOM_CHARS of its
// prose on the page, the parts before that wait behind a "show earlier" button (at most
// HIDDEN_CHARS of them, as plain text, and only for the last HIDDEN_TURNS finished turns),
// finished turns before the last FULL_TURNS fold to their heading and one button that tells
// their outcome (their text, chips and footer kept as data, drawn again when the person opens
// one; a finished turn is a few nodes, not a few dozen), and the transcript keeps the
// last MAX_TURNS turns (the turn history below has every turn, the replay every word).
const PROSE_DOM_CHARS = 32768;
const HIDDEN_CHARS = 262144;
const HIDDEN_TURNS = 3; // only the last few finished turns keep their earlier text
const FULL_TURNS = 6;
const MAX_TURNS = 30;
// Prose drawn per animation frame, at most; the rest waits for the next frame. A stall (a
// hidden tab, a busy machine) must not come back as one long frame.
const FRAME_PROSE_CHARS = 16384;

// What a structural merge did to the file (an applied block's `detail.merge`): "replaced
// is_prime · added reverse_string", "inserted"; "" when there is nothing to say.
export function mergeSummary(merge) {
  if (!merge || typeof merge !== "object") return "";
  const names = (list) => (Array.isArray(list) ? list.filter((name) => typeof name === "string") : []);
  const parts = [];
  const replaced = names(merge.replaced);
  const added = names(merge.added);
  if (replaced.length) parts.push(`replaced ${replaced.join(", ")}`);
  if (added.length) parts.push(`added ${added.join(", ")}`);
  if (merge.inserted === true) parts.push("inserted, the rest kept");
  // The file already had this code: {"replaced": [], "added": []} or {"inserted": false}.
  if (!parts.length && (merge.inserted === false || ("replaced" in merge && "added" in merge))) return "no change";
  return parts.join(" · ");
}

// A finished turn's figures as its footer shows them: "812 tok · 19873 tok/s · TTFT 4 ms ·
// steer 1 ms"; a figure the turn never got (no token, not steered) is left out.
export function turnFigures(metrics, steerMs = null) {
  const parts = [];
  const number = (value) => typeof value === "number" && Number.isFinite(value);
  if (number(metrics.tokens)) parts.push(`${metrics.tokens} tok`);
  if (number(metrics.tokens_per_s)) parts.push(`${Math.round(metrics.tokens_per_s)} tok/s`);
  if (number(metrics.ttft_ms)) parts.push(`TTFT ${Math.round(metrics.ttft_ms)} ms`);
  const steer = number(metrics.steer_ms) ? metrics.steer_ms : steerMs;
  if (number(steer)) parts.push(`steer ${steer < 10 ? steer.toFixed(1) : Math.round(steer)} ms`);
  return parts.join(" · ");
}


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

export class Transcript {
  // files: the document's path -> Y.Text map (a fence being written shows its region of it);
  // requestFrame(): ask for a flush() next frame; onOpenPath(path): a chip was clicked;
  // peerClass(username): the class that gives a person's colour ("" for none).
  // onOpenLine(path, line): a finding's location was clicked.
  constructor(container, { files, requestFrame, onOpenPath, onOpenLine = onOpenPath, peerClass = () => "" }) {
    this.container = container;
    this.files = files;
    this.requestFrame = requestFrame;
    this.peerClass = peerClass;
    this.turns = new Map(); // turn id -> entry (see entry())
    this.pending = new Set(); // entries with buffered prose
    this.repaint = new Set(); // blocks whose status or document region changed
    this.live = new Set(); // fenced blocks being written: they follow the document
    this.freezing = []; // [entry, flushes left] of finished turns whose code stops following
    this.droppedTurns = 0; // turns no longer on the page (MAX_TURNS)
    this.earlier = null; // the note that says so
    this.withHidden = []; // finished turns that keep earlier text off the page, oldest first
    this.foldPending = false; // foldSoon() asked for a fold when the page is idle
    // Follow the end unless the person scrolled up. Measured on their scroll, not per frame:
    // reading the layout after every append would force a layout of the page each time. The
    // scroll itself happens when a turn's box changed size, which a ResizeObserver tells
    // after the browser's own layout of the frame (nothing to force), before it paints.
    this.stick = true;
    this.resized = new ResizeObserver(() => { if (this.stick) this.scroll(); });
    this.scrolled = false; // the next scroll event is our own: it leaves `stick` as it is
    container.addEventListener("scroll", () => {
      if (this.scrolled) this.scrolled = false;
      else this.stick = this.atBottom();
    }, { passive: true });
    container.addEventListener("click", (event) => {
      const chip = event.target.closest(".chip[data-path]");
      if (chip) onOpenPath(chip.dataset.path);
      const place = event.target.closest(".guard-loc[data-guard-path]");
      if (place) onOpenLine(place.dataset.guardPath, Number(place.dataset.line));
      const correction = event.target.closest(".guard-correction[data-correction]");
      if (correction) this.showTurn(correction.dataset.correction);
    });
    this.filesObserver = (events) => this.documentChanged(events);
    files.observeDeep(this.filesObserver);
  }

  // The server replaced the document (session.js documentReplaced): the code blocks that
  // follow it draw from the new one's texts (unchanged ones are not drawn again: paintCode).
  rebind(files) {
    this.files.unobserveDeep(this.filesObserver);
    this.files = files;
    files.observeDeep(this.filesObserver);
    for (const view of this.live) if (view.status) this.repaint.add(view);
    if (this.repaint.size) this.requestFrame();
  }

  entry(turn) {
    let entry = this.turns.get(turn);
    if (entry) return entry;
    const article = element("article", "turn running");
    article.dataset.turn = turn;
    const header = element("header", "turn-head");
    header.append(element("span", "turn-prompt", NO_PROMPT));
    const prose = element("div", "prose");
    article.append(header, prose);
    entry = {
      article, header, prose, prompt: null, buffer: "", blocks: new Map(), done: false, steerMs: null,
      part: null, // the open part: {box, text (its last text node or null), chars}
      parts: [], // parts on the page, oldest first: {box, chars}
      shownChars: 0, // prose characters in those parts
      hidden: [], // parts taken off the page, oldest first
      hiddenChars: 0,
      droppedChars: 0, // prose that is no longer kept at all
      more: null, // the "show earlier" button
      expanded: false, // the person asked for the earlier prose: it stays
      outcome: null, // turn.finished's status, reason, metrics, error, by (the footer's)
      folded: null, // a folded turn's prose and blocks, in order: strings and block records
      unfolded: false, // the person opened a folded turn: it stays open
    };
    this.turns.set(turn, entry);
    this.append(article);
    this.dropOldTurns();
    this.foldSoon();
    return entry;
  }

  // Folding is housekeeping: done when the page is idle, not in the task that starts or ends a
  // turn (the editor's last lines may be waiting behind it).
  foldSoon() {
    if (this.foldPending) return;
    this.foldPending = true;
    const fold = () => {
      this.foldPending = false;
      this.foldOldTurns();
    };
    if (typeof requestIdleCallback === "function") requestIdleCallback(fold, { timeout: 1000 });
    else setTimeout(fold, 200);
  }

  // Finished turns before the last FULL_TURNS fold (one not yet finished stays as it is).
  foldOldTurns() {
    let newer = 0;
    const entries = [...this.turns.values()];
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const entry = entries[i];
      newer += 1;
      if (newer <= FULL_TURNS || !entry.done) continue;
      if (!entry.folded && !entry.unfolded) this.fold(entry);
    }
  }

  // A finished turn's prose and chips leave the page for a one-line button; what they showed
  // is kept as data (text as strings, each block as its last status), not as nodes.
  fold(entry) {
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
          const record = {
            folded: true, status: view.status, lines: view.lines, shown: view.shown ?? null,
            fenced: Boolean(view.code), language: view.language || null, more: view.moreLines || 0,
          };
          entry.blocks.set(block, record);
          this.live.delete(view);
          this.repaint.delete(view);
          pieces.push(record);
        }
      }
    };
    for (const part of entry.hidden) take(part);
    for (const part of entry.parts) take(part);
    for (const [block, view] of entry.blocks) { // a block whose text is no longer kept at all
      if (view.folded) continue;
      this.live.delete(view);
      this.repaint.delete(view);
      entry.blocks.set(block, { folded: true, status: view.status, lines: view.lines, shown: null, fenced: false });
    }
    entry.folded = pieces;
    entry.parts = [];
    entry.part = null;
    entry.shownChars = 0;
    entry.hidden = [];
    entry.hiddenChars = 0;
    entry.more = null;
    this.withHidden = this.withHidden.filter((other) => other !== entry);
    const blocks = pieces.filter((piece) => typeof piece !== "string").length;
    entry.prose.replaceChildren(this.foldButton(entry, chars, blocks));
    const footer = entry.article.querySelector(":scope > .turn-foot");
    if (footer) footer.remove(); // the button says the outcome; the footer comes back with the text
  }

  // (A method of its own: a listener made in fold() would keep fold()'s locals, and with
  // them the nodes that left the page.)
  foldButton(entry, chars, blocks) {
    const button = element("button", "prose-fold");
    button.type = "button";
    const what = [`${Math.max(1, Math.round(chars / 1024))} KB`];
    if (blocks) what.push(`${blocks} edit${blocks === 1 ? "" : "s"}`);
    const { status, reason, metrics } = entry.outcome;
    const why = reasonLabel(status, reason);
    const tokens = metrics && typeof metrics.tokens === "number" ? ` · ${metrics.tokens} tok` : "";
    button.textContent = `${status}${why ? ` (${why})` : ""}${tokens}: show this answer (${what.join(", ")})`;
    button.title = entry.droppedChars
      ? `Its first ${Math.round(entry.droppedChars / 1024)} KB are no longer kept on this page (the replay has every word)`
      : "An earlier answer, folded to keep the page light";
    button.addEventListener("click", () => this.unfold(entry));
    return button;
  }

  // The person opened a folded turn: its text and chips are drawn again (the chips as their
  // blocks' last statuses; a fenced block's code as it showed it).
  unfold(entry) {
    const pieces = entry.folded;
    if (!pieces) return;
    entry.folded = null;
    entry.unfolded = true;
    entry.expanded = true; // no "show earlier" again: it is all here
    entry.prose.replaceChildren();
    for (const piece of pieces) {
      if (typeof piece === "string") {
        this.write(entry, piece);
        continue;
      }
      const view = this.openBlock(entry, { kind: piece.status.detail.kind, fenced: piece.fenced, language: piece.language });
      this.live.delete(view);
      view.status = piece.status;
      view.lines = piece.lines;
      // The turn is over: the code it showed is its record.
      if (view.code && piece.shown !== null) view.recorded = { code: piece.shown, more: piece.more || 0 };
      for (const [block, record] of entry.blocks) if (record === piece) entry.blocks.set(block, view);
      this.paint(view);
    }
    if (entry.droppedChars) this.showMore(entry);
    entry.article.append(this.footer(entry));
  }

  // Only the last MAX_TURNS turns stay; a running turn is never dropped.
  dropOldTurns() {
    if (this.turns.size <= MAX_TURNS) return;
    for (const [turn, entry] of this.turns) {
      if (this.turns.size <= MAX_TURNS) break;
      if (!entry.done) continue;
      this.resized.unobserve(entry.article);
      entry.article.remove();
      for (const view of entry.blocks.values()) {
        this.live.delete(view);
        this.repaint.delete(view);
      }
      this.pending.delete(entry);
      this.turns.delete(turn);
      this.withHidden = this.withHidden.filter((other) => other !== entry);
      this.droppedTurns += 1;
    }
    if (this.droppedTurns) {
      if (!this.earlier) this.earlier = element("p", "hint transcript-earlier");
      this.earlier.textContent = `${this.droppedTurns} earlier turn${this.droppedTurns === 1 ? "" : "s"} in History below`;
      if (this.container.firstChild !== this.earlier) this.container.prepend(this.earlier);
    }
  }

  started({ turn, prompt, steered_from: steeredFrom, effort, author }) {
    const entry = this.entry(turn);
    entry.prompt = prompt || "";
    const header = entry.header;
    header.replaceChildren(element("span", "turn-prompt", entry.prompt));
    if (steeredFrom) header.prepend(this.steerBadge(steeredFrom));
    if (effort) header.append(element("span", "badge", effort));
    if (author === WATCHDOG) {
      // The watchdog's correction of a halted turn: its prompt is the finding and the fix.
      entry.article.classList.add("watchdog-turn");
      const badge = element("span", "badge watchdog-steer", steeredFrom ? "steered by watchdog" : "by watchdog");
      badge.title = "The security watchdog halted the turn before and asked the model to fix the flaw";
      header.append(badge);
    } else if (author) {
      header.append(this.person("turn-author", String(author), steeredFrom ? "Steered by" : "Asked by"));
    }
  }

  // A person's name in their colour (a dot before it), as in the presence list.
  person(className, name, what) {
    const span = element("span", `person-ref ${className} ${this.peerClass(name)}`.trim(), name);
    span.title = `${what} ${name}`;
    return span;
  }

  // "steered from" the earlier turn's prompt (its id in the tooltip).
  steerBadge(from) {
    const earlier = this.turns.get(from);
    const text = earlier && earlier.prompt ? `steered from “${shortPrompt(earlier.prompt)}”` : "steered";
    const badge = element("span", "badge steer", text);
    badge.dataset.steeredFrom = from;
    badge.title = `Steered from turn ${from}`;
    return badge;
  }

  // The steer that started this turn reached the model after steer_ms (server side).
  steered({ turn, steer_ms: steerMs }) {
    if (typeof steerMs !== "number") return;
    const entry = this.turns.get(turn);
    if (entry) entry.steerMs = steerMs;
  }

  // guard.finding: under the turn's prose (a finding of the scan after the turn may come once
  // the turn is over: it goes before the footer). A turn this page never saw is left to the
  // history panel.
  finding(event) {
    const entry = this.turns.get(event.turn);
    if (!entry) return;
    if (!entry.findings) {
      entry.findings = element("div", "guard-findings");
      entry.article.insertBefore(entry.findings, entry.article.querySelector(":scope > .turn-foot"));
    }
    const halted = event.action === "halted";
    const severity = ["high", "medium", "low"].includes(event.severity) ? event.severity : "low";
    const row = element("div", `guard-finding ${halted ? "halted" : "flagged"} severity-${severity}`);
    row.dataset.rule = String(event.rule || "");
    const place = element("button", "guard-loc", halted ? findingPlace(event) : `${event.path}:${event.line}`);
    place.type = "button";
    place.dataset.guardPath = String(event.path || "");
    place.dataset.line = String(event.line || 1);
    place.title = `Open ${event.path} at line ${event.line}`;
    const message = element("span", "guard-message", findingMessage(event));
    const rule = element("span", "guard-rule", String(event.rule || ""));
    rule.title = `Rule ${event.rule} (${event.tier || "watchdog"}), ${severity} severity`;
    if (halted) {
      row.setAttribute("role", "alert");
      row.append(element("strong", "guard-title", "Watchdog halted the model:"), " ", place, " — ", message, " ", rule);
      if (event.fix) row.append(element("span", "guard-fix", `Fix asked for: ${event.fix}`));
      if (event.correction) {
        const link = element("button", "guard-correction", "→ correction turn");
        link.type = "button";
        link.dataset.correction = String(event.correction);
        link.title = "Show the turn in which the model corrects it";
        row.append(link);
      }
    } else {
      row.append(element("span", "guard-flag", `⚑ ${severity}`), " ", place, " ", message, " ", rule);
      if (event.fix) row.title = `Fix: ${event.fix}`;
    }
    entry.findings.append(row);
  }

  // Bring a turn into view and mark it a moment (the link from a halt to its correction).
  showTurn(turn) {
    const entry = this.turns.get(turn);
    if (!entry) return;
    this.stick = false;
    // The transcript alone scrolls (scrollIntoView would also move the page sideways).
    const box = this.container;
    const top = entry.article.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    const target = Math.max(0, Math.round(top) - 8);
    if (Math.abs(box.scrollTop - target) >= 1) {
      this.scrolled = true; // our own scroll: it leaves `stick` off
      box.scrollTop = target;
    }
    entry.article.classList.remove("flash");
    void entry.article.offsetWidth; // the animation starts again
    entry.article.classList.add("flash");
  }

  // turn.round: the model's tool calls were answered and it goes on in the same turn. A line
  // of the turn's prose, so that it stays in order with the text and chips around it (and
  // folds and unfolds with them).
  round({ turn, round, calls, failed }) {
    const results = `${calls} tool result${calls === 1 ? "" : "s"}`;
    const failures = failed ? `, ${failed} failed` : "";
    this.prose({ turn, text: `\n\n↻ Round ${round}: the model got its ${results}${failures} and goes on.\n\n` });
  }

  prose({ turn, text }) {
    const entry = this.entry(turn);
    if (entry.done) return;
    entry.buffer += text;
    this.pending.add(entry);
  }

  blockStatus({ turn, block, path, state, detail = {} }) {
    // A status of a turn we never saw start that is already over (a revert of an old turn)
    // has nothing to show here; the history panel shows it.
    if (!this.turns.has(turn) && !EDIT_STATES_IN_FLIGHT.has(state)) return;
    const entry = this.entry(turn);
    let view = entry.blocks.get(block);
    if (entry.folded) { // a block of a folded turn (rolled back by a revert): its record changes
      if (!view) return;
      view.status = { path, state, detail };
      view.lines = writtenLines(state, detail) || view.lines;
      if (view.fenced && typeof detail.code === "string") {
        const recorded = recordedCode(detail);
        view.shown = recorded.code;
        view.more = recorded.more;
      }
      return;
    }
    if (!view) {
      this.drain(entry); // the prose before the block goes before it
      view = this.openBlock(entry, detail);
      entry.blocks.set(block, view);
    }
    view.status = { path, state, detail };
    view.lines = writtenLines(state, detail) || view.lines;
    // The code the model wrote, from the block's final status; a final status without it (a
    // revert's, which follows the one that had it) leaves the code as it is. Only a fence in
    // flight follows the document.
    if (view.code && typeof detail.code === "string") view.recorded = recordedCode(detail);
    if (!EDIT_STATES_IN_FLIGHT.has(state)) this.live.delete(view);
    this.repaint.add(view);
  }

  finished({ turn, status, reason, metrics, error, by }) {
    const entry = this.turns.get(turn);
    if (!entry || entry.done) return; // before this page, or told twice (a replay)
    entry.done = true;
    // Its end is drawn now, so everything that came before it is too: its prose, and its
    // blocks' last statuses (otherwise drawn next frame), so that no moment shows a finished
    // turn with a block still "writing" (a replay fed many events at once, a seek).
    this.drain(entry);
    for (const view of entry.blocks.values()) {
      if (view.folded || !view.status) continue;
      // A block whose final status never came (its server went away mid-block) is not
      // "writing" any more: it says it was left unfinished.
      view.ended = true;
      if (this.repaint.delete(view) || EDIT_STATES_IN_FLIGHT.has(view.status.state)) this.paint(view);
    }
    this.keepHidden(entry);
    entry.article.classList.remove("running");
    entry.article.classList.add(`status-${status}`);
    // Its start came before what the server keeps for a new page: it is no longer "in progress".
    if (entry.prompt === null) entry.header.firstChild.textContent = "(an earlier prompt)";
    entry.outcome = { status, reason, metrics, error, by };
    entry.article.append(this.footer(entry));
    // A fence whose final status never came (its server went away mid-block) follows the
    // document updates that came with the turn's last events (applied later in this frame)
    // through the next flush, then stops; one with its final status stopped at it.
    this.freezing.push([entry, 2]);
    this.foldSoon();
  }

  // A finished turn's footer: its outcome, why, its figures.
  footer(entry) {
    const { status, reason, metrics, error, by } = entry.outcome;
    const footer = element("footer", "turn-foot");
    if (reason) footer.dataset.reason = reason;
    footer.append(element("span", `badge outcome ${status}`, status));
    const why = reasonLabel(status, reason);
    if (by && reason in BY_LABELS) {
      const label = element("span", "reason", `${BY_LABELS[reason]} by `);
      label.append(this.person("turn-by", String(by), `${BY_LABELS[reason]} by`));
      footer.append(label);
    } else if (why) {
      footer.append(element("span", "reason", why));
    }
    const figures = turnFigures(metrics || {}, entry.steerMs);
    if (figures) footer.append(element("span", "metric", figures));
    if (metrics && typeof metrics.model === "string" && metrics.model) {
      footer.append(element("span", "badge model", metrics.model));
    }
    if (error) footer.append(element("span", "error", typeof error === "string" ? error : error.message || ""));
    return footer;
  }

  flush() {
    for (const view of this.repaint) this.paint(view);
    this.repaint.clear();
    this.freezing = this.freezing.filter((item) => {
      item[1] -= 1;
      if (item[1] > 0) return true;
      for (const view of item[0].blocks.values()) this.live.delete(view); // (a fold's records are in no set)
      return false;
    });
    if (this.pending.size === 0) return;
    let budget = FRAME_PROSE_CHARS;
    for (const entry of [...this.pending]) {
      if (budget <= 0) break;
      budget -= this.drain(entry, budget);
    }
    if (this.pending.size) this.requestFrame(); // the rest next frame
  }

  // Draw the turn's buffered prose, at most `budget` characters of it (the rest stays
  // pending); returns how many were drawn. Prose that would leave the page at once (more
  // than PROSE_DOM_CHARS waiting) goes behind "show earlier" without being drawn.
  drain(entry, budget = Infinity) {
    if (!entry.buffer) {
      this.pending.delete(entry);
      return 0;
    }
    let text = entry.buffer;
    if (!entry.expanded && text.length > PROSE_DOM_CHARS) text = this.hideHead(entry, text);
    let cut = Math.min(text.length, budget);
    if (cut < text.length && /[\uD800-\uDBFF]/.test(text[cut - 1])) cut -= 1; // not inside a pair
    entry.buffer = text.slice(cut);
    if (!entry.buffer) this.pending.delete(entry);
    text = text.slice(0, cut);
    this.write(entry, text);
    this.trim(entry);
    return text.length;
  }

  // Text at the end of the turn's prose: into its open part, and new parts as they fill.
  write(entry, text) {
    while (text) {
      const part = this.openPart(entry);
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

  // All of the turn's prose on the page and the head of `text` go behind "show earlier";
  // returns the last PROSE_DOM_CHARS or so of `text`, from a line start when one is near.
  hideHead(entry, text) {
    let keepFrom = text.length - PROSE_DOM_CHARS;
    const newline = text.indexOf("\n", keepFrom);
    if (newline >= 0 && newline - keepFrom < PART_CHARS) keepFrom = newline + 1;
    for (const part of entry.parts) {
      part.box.remove();
      // Text alone is kept as a string, not as detached nodes; a part with a chip stays whole.
      entry.hidden.push(part.box.childElementCount ? part : { box: null, words: part.box.textContent, chars: part.chars });
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
    this.trim(entry, true);
    return text.slice(keepFrom);
  }

  // The turn's open part, or a new one at the end of its prose.
  openPart(entry) {
    if (!entry.part) {
      entry.part = { box: element("div", "prose-part"), text: null, chars: 0 };
      entry.parts.push(entry.part);
      entry.prose.append(entry.part.box);
    }
    return entry.part;
  }

  // Past PROSE_DOM_CHARS, a turn's oldest parts leave the page for its "show earlier" button.
  trim(entry, moved = false) {
    if (entry.expanded) return;
    while (entry.shownChars > PROSE_DOM_CHARS && entry.parts.length > 1) {
      const part = entry.parts.shift();
      part.box.remove();
      entry.shownChars -= part.chars;
      // Text alone is kept as a string, not as detached nodes; a part with a chip stays whole.
      entry.hidden.push(part.box.childElementCount ? part : { box: null, words: part.box.textContent, chars: part.chars });
      entry.hiddenChars += part.chars;
      moved = true;
    }
    while (entry.hiddenChars > HIDDEN_CHARS && entry.hidden.length) {
      const part = entry.hidden.shift();
      entry.hiddenChars -= part.chars;
      entry.droppedChars += part.chars;
    }
    if (moved) this.showMore(entry);
  }

  showMore(entry) {
    if (!entry.more) {
      entry.more = element("button", "prose-more");
      entry.more.type = "button";
      entry.more.addEventListener("click", () => this.expand(entry));
      entry.prose.prepend(entry.more);
    }
    const kb = (chars) => `${Math.max(1, Math.round(chars / 1024))} KB`;
    const dropped = `The first ${kb(entry.droppedChars)} of this answer are no longer kept on this page`;
    entry.more.disabled = entry.hidden.length === 0;
    entry.more.textContent = entry.hidden.length ? `Show ${kb(entry.hiddenChars)} of earlier text` : dropped;
    entry.more.title = entry.droppedChars ? dropped : "Earlier text of this answer, kept off the page while it streams";
  }

  // A finished turn's earlier text is kept while it is among the last HIDDEN_TURNS to have any.
  keepHidden(entry) {
    if (!entry.hidden.length) return;
    this.withHidden.push(entry);
    while (this.withHidden.length > HIDDEN_TURNS) {
      const old = this.withHidden.shift();
      if (!old.hidden.length) continue; // shown meanwhile
      old.droppedChars += old.hiddenChars;
      old.hidden = [];
      old.hiddenChars = 0;
      this.showMore(old);
    }
  }

  // The person asked for the earlier prose: it goes back, and this turn is not trimmed again.
  expand(entry) {
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
      this.showMore(entry);
    } else {
      entry.more.remove();
      entry.more = null;
    }
  }

  // A chip; for a small model's code fence, a chip over the code it wrote.
  openBlock(entry, detail) {
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
      this.live.add(view);
    } else {
      view.box = view.chip;
    }
    // A part of its own: a status redraws the chip, not the paragraph it follows; prose
    // after the block starts a new part.
    entry.part = null;
    const part = this.openPart(entry);
    part.box.append(view.box);
    part.chars = CHIP_CHARS;
    entry.shownChars += CHIP_CHARS;
    entry.part = null;
    return view;
  }

  paint(view) {
    const { path, state, detail } = view.status;
    const chip = view.chip;
    chip.dataset.state = state;
    view.box.dataset.state = state;
    const unfinished = view.ended && EDIT_STATES_IN_FLIGHT.has(state);
    chip.classList.toggle("unfinished", Boolean(unfinished));
    view.state.textContent = unfinished ? "not finished" : STATE_LABELS[state] || state;
    const { kind, place, file } = chipLabel(path, state, detail);
    view.kind.textContent = kind;
    view.path.textContent = place;
    if (file) chip.dataset.path = file;
    else delete chip.dataset.path; // a deleted file: nothing to open
    if (view.lines) view.count.textContent = `+${view.lines[1] - view.lines[0] + 1}`;
    const merged = state === EDIT_STATE.APPLIED ? mergeSummary(detail.merge) : "";
    view.note.textContent = state === EDIT_STATE.FAILED ? failureWords(detail) : merged;
    const label = `${place} ${view.state.textContent}`;
    const why = detail.message || detail.reason || merged;
    chip.title = why ? `${label}: ${why}` : label;
    if (!view.code) return;
    if (view.recorded) this.showCode(view, path, view.recorded.code, view.recorded.more);
    else if (view.lines && this.live.has(view)) this.paintCode(view, path);
  }

  // A fence being written: its region of the document as it is now.
  paintCode(view, path) {
    const text = this.files.get(path);
    this.showCode(view, path, text ? region(text.toString(), view.lines) : "", 0);
  }

  showCode(view, path, code, more) {
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

  // Someone (usually the model) changed files: fenced blocks showing them redraw next frame.
  documentChanged(events) {
    if (this.live.size === 0) return;
    const paths = new Set();
    for (const event of events) {
      if (event.target === this.files) for (const key of event.keysChanged) paths.add(key);
      else paths.add(event.path[0]);
    }
    let changed = false;
    for (const view of this.live) {
      if (view.status && paths.has(view.status.path)) {
        this.repaint.add(view);
        changed = true;
      }
    }
    if (changed) this.requestFrame();
  }

  // A resync: the server replays the recent turns, so the transcript starts over.
  clear() {
    for (const entry of this.turns.values()) {
      this.resized.unobserve(entry.article);
      entry.article.remove();
    }
    if (this.earlier) this.earlier.remove();
    this.earlier = null;
    this.droppedTurns = 0;
    this.withHidden = [];
    this.turns.clear();
    this.pending.clear();
    this.repaint.clear();
    this.live.clear();
    this.freezing = [];
    this.stick = true;
  }

  append(node) {
    this.container.append(node);
    this.resized.observe(node);
  }

  atBottom() {
    const box = this.container;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  }

  scroll() {
    const box = this.container;
    const bottom = box.scrollHeight - box.clientHeight;
    if (box.scrollTop >= bottom - 1) return; // there already: no scroll, no event
    this.scrolled = true;
    box.scrollTop = bottom;
  }
}
