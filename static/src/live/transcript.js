// The transcript: per turn, a header (prompt, steered from, effort: transcript_turns.js), the
// model's prose (in parts, its oldest text off the page: transcript_prose.js), each edit block
// as a chip and a small model's code fence as highlighted code (transcript_blocks.js), lines
// for its rounds and runs (transcript_runs.js), the watchdog's findings, then a footer with
// the outcome and why (transcript_labels.js); old finished turns fold to one button
// (transcript_fold.js). It renders what the server parsed:
// `turn.prose` (text outside blocks) and `edit.status` (a block's first status opens it, a
// final state closes it), in the order they came. Nothing here reads the model's raw text.
// A fence's code is the turn's own record: its final status carries the code the model wrote
// (`detail.code`), so a reloaded page, a late joiner and the replay show what the live page
// showed, whatever people typed into the file since; only while the fence is being written
// does the block show its lines of the document as they arrive.
// Work is buffered and drawn at most once per animation frame (flush()).
import { EDIT_STATES_IN_FLIGHT } from "../protocol.js";
import { element } from "./dom.js";
import { newBlockView, paintChip, recordedCode, region, showCode, writtenLines } from "./transcript_blocks.js";
import { foldTurn } from "./transcript_fold.js";
import { findingRow, personRef, turnFooter } from "./transcript_labels.js";
import { paragraph, roundLine, runLine } from "./transcript_runs.js";
import { FollowEnd } from "./transcript_scroll.js";
import { newEntry, paintHeader } from "./transcript_turns.js";
import { contextFinished, paintContext } from "./transcript_context.js";
import {
  PROSE_DOM_CHARS, hideHead, keepHidden, placeBlock, showMore, trimProse, writeProse,
} from "./transcript_prose.js";

// The names other modules and the tests import from here.
export { recordedCode, region } from "./transcript_blocks.js";
export { REASON_LABELS, STATE_LABELS, WATCHDOG, mergeSummary, reasonLabel, turnFigures } from "./transcript_labels.js";
export { partCut } from "./transcript_prose.js";

// Finished turns before the last FULL_TURNS fold to their heading and one button that tells
// their outcome (a finished turn is a few nodes, not a few dozen), and the transcript keeps the
// last MAX_TURNS turns (the turn history below has every turn, the replay every word).
const FULL_TURNS = 6;
const MAX_TURNS = 30;
// Prose drawn per animation frame, at most; the rest waits for the next frame. A stall (a
// hidden tab, a busy machine) must not come back as one long frame.
const FRAME_PROSE_CHARS = 16384;

export class Transcript {
  // files: the document's path -> Y.Text map (a fence being written shows its region of it);
  // requestFrame(): ask for a flush() next frame; onOpenPath(path): a chip was clicked;
  // peerClass(username): the class that gives a person's colour ("" for none).
  // onOpenLine(path, line): a finding's location was clicked. onBlockBox(box, turn, block): a
  // block's box was put on the page (hunk_review.js puts its Keep / Undo after it).
  constructor(container, {
    files, requestFrame, onOpenPath, onOpenLine = onOpenPath, peerClass = () => "", onBlockBox = () => {},
  }) {
    this.container = container;
    this.onBlockBox = onBlockBox;
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
    this.follow = new FollowEnd(container); // follows the end unless the person scrolled up
    container.addEventListener("click", (event) => {
      const chip = event.target.closest(".chip[data-path]");
      if (chip) onOpenPath(chip.dataset.path);
      const place = event.target.closest(".guard-loc[data-guard-path]");
      if (place) onOpenLine(place.dataset.guardPath, Number(place.dataset.line));
      const lines = event.target.closest(".turn-range[data-range-path]");
      if (lines) onOpenLine(lines.dataset.rangePath, Number(lines.dataset.line));
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
    entry = newEntry(turn);
    this.turns.set(turn, entry);
    this.container.append(entry.article);
    this.follow.observe(entry.article);
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

  // A finished turn's prose and chips leave the page for a one-line button (transcript_fold.js).
  fold(entry) {
    const forget = (view) => {
      this.live.delete(view);
      this.repaint.delete(view);
    };
    foldTurn(entry, forget, () => this.unfold(entry));
    this.withHidden = this.withHidden.filter((other) => other !== entry);
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
        writeProse(entry, piece);
        continue;
      }
      const view = this.openBlock(entry, { kind: piece.status.detail.kind, fenced: piece.fenced, language: piece.language });
      this.live.delete(view);
      view.status = piece.status;
      view.lines = piece.lines;
      // The turn is over: the code it showed is its record.
      if (view.code && piece.shown !== null) view.recorded = { code: piece.shown, more: piece.more || 0 };
      for (const [block, record] of entry.blocks) {
        if (record !== piece) continue;
        entry.blocks.set(block, view);
        this.onBlockBox(view.box, entry.article.dataset.turn, block);
      }
      this.paint(view);
    }
    if (entry.droppedChars) showMore(entry);
    entry.article.append(this.footer(entry));
  }

  // Only the last MAX_TURNS turns stay; a running turn is never dropped.
  dropOldTurns() {
    if (this.turns.size <= MAX_TURNS) return;
    for (const [turn, entry] of this.turns) {
      if (this.turns.size <= MAX_TURNS) break;
      if (!entry.done) continue;
      this.follow.unobserve(entry.article);
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

  started(event) {
    const entry = this.entry(event.turn);
    paintHeader(entry, event, this.turns.get(event.steered_from), (...args) => this.person(...args));
  }

  // turn.context: the mentions in its header, what its request carried (transcript_context.js).
  context({ turn, context }) {
    const entry = this.turns.get(turn);
    if (entry && context) paintContext(entry, context);
  }

  // A person's name in their colour (a dot before it), as in the presence list.
  person(className, name, what) {
    return personRef(this.peerClass, className, name, what);
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
    entry.findings.append(findingRow(event));
  }

  // Bring a turn into view and mark it a moment (the link from a halt to its correction).
  showTurn(turn) {
    const entry = this.turns.get(turn);
    if (!entry) return;
    this.follow.show(entry.article);
    entry.article.classList.remove("flash");
    void entry.article.offsetWidth; // the animation starts again
    entry.article.classList.add("flash");
  }

  // turn.round (the model goes on: its calls answered, or the tests failed after its round)
  // and turn.ran (a run of the model ended): a line of its turn's prose (transcript_runs.js).
  // Both are in the event log, so a late page and the replay draw them as the live page did.
  round({ turn, ...event }) {
    this.prose({ turn, text: paragraph(this.entry(turn), roundLine(event)) });
  }

  ran({ turn, command, ...end }) {
    const entry = this.turns.get(turn);
    if (entry) this.prose({ turn, text: paragraph(entry, runLine(command, end)) });
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
      this.onBlockBox(view.box, turn, block);
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

  finished({ turn, status, reason, metrics, error, by, usage }) {
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
    keepHidden(this.withHidden, entry);
    entry.article.classList.remove("running");
    entry.article.classList.add(`status-${status}`);
    // Its start came before what the server keeps for a new page: it is no longer "in progress".
    if (entry.prompt === null) entry.header.firstChild.textContent = "(an earlier prompt)";
    entry.outcome = { status, reason, metrics, error, by, usage };
    contextFinished(entry, metrics, usage);
    entry.article.append(this.footer(entry));
    // A fence whose final status never came (its server went away mid-block) follows the
    // document updates that came with the turn's last events (applied later in this frame)
    // through the next flush, then stops; one with its final status stopped at it.
    this.freezing.push([entry, 2]);
    this.foldSoon();
  }

  // A finished turn's footer: its outcome, why, its figures.
  footer(entry) {
    return turnFooter(entry.outcome, entry.steerMs, (...args) => this.person(...args));
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
    if (!entry.expanded && text.length > PROSE_DOM_CHARS) text = hideHead(entry, text);
    let cut = Math.min(text.length, budget);
    if (cut < text.length && /[\uD800-\uDBFF]/.test(text[cut - 1])) cut -= 1; // not inside a pair
    entry.buffer = text.slice(cut);
    if (!entry.buffer) this.pending.delete(entry);
    text = text.slice(0, cut);
    writeProse(entry, text);
    trimProse(entry);
    return text.length;
  }

  // A chip; for a small model's code fence, a chip over the code it wrote.
  openBlock(entry, detail) {
    const view = newBlockView(detail);
    if (view.code) this.live.add(view);
    placeBlock(entry, view.box);
    return view;
  }

  paint(view) {
    paintChip(view);
    if (!view.code) return;
    const path = view.status.path;
    if (view.recorded) showCode(view, path, view.recorded.code, view.recorded.more);
    else if (view.lines && this.live.has(view)) this.paintCode(view, path);
  }

  // A fence being written: its region of the document as it is now.
  paintCode(view, path) {
    const text = this.files.get(path);
    showCode(view, path, text ? region(text.toString(), view.lines) : "", 0);
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
      this.follow.unobserve(entry.article);
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
    this.follow.stick = true;
  }
}
