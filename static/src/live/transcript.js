// The transcript: per turn, a header (prompt, steered from, effort), the model's prose, each
// edit block as a chip (kind, path, state, lines written, what a merge replaced) and a small
// model's code fence as highlighted code, then a footer with the outcome and why. It renders
// what the server parsed:
// `turn.prose` (text outside blocks) and `edit.status` (a block's first status opens it, a
// final state closes it), in the order they came. Nothing here reads the model's raw text.
// Work is buffered and drawn at most once per animation frame (flush()).
import { classHighlighter, highlightCode } from "@lezer/highlight";
import { languageFor } from "../languages.js";
import { IN_FLIGHT } from "./block_states.js";
import { shortPrompt } from "./notices.js";

const STATE_LABELS = {
  locating: "locating", streaming: "writing", applied: "applied", rolled_back: "rolled back", failed: "failed",
};
// In these states `detail.lines` is the region the block wrote: the chip counts its lines
// and a fenced block shows it from the document. One that failed or was rolled back keeps
// what it showed last.
const WRITTEN = new Set(["streaming", "applied"]);
const MAX_CODE_LINES = 400; // longer files show their start; the editor has the rest
// Why a turn ended, where the outcome alone does not say (turn.finished `reason`); other
// reasons show as their name.
const REASON_LABELS = {
  answered: "", steered: "", no_changes: "no changes", repetition: "the model repeated itself",
  incomplete: "cut short by the model", stopped: "stopped", reverted: "reverted",
};
const NO_PROMPT = "(turn in progress)"; // the heading until its turn.started arrives

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

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// The lines [start, end] (1-based, inclusive) of a text.
function region(text, [start, end]) {
  const lines = text.split("\n");
  return lines.slice(Math.max(start - 1, 0), Math.min(end, start - 1 + MAX_CODE_LINES)).join("\n");
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

export class Transcript {
  // files: the document's path -> Y.Text map (fenced blocks show their region of it);
  // requestFrame(): ask for a flush() next frame; onOpenPath(path): a chip was clicked.
  constructor(container, { files, requestFrame, onOpenPath }) {
    this.container = container;
    this.files = files;
    this.requestFrame = requestFrame;
    this.turns = new Map(); // turn id -> entry (see entry())
    this.pending = new Set(); // entries with buffered prose
    this.repaint = new Set(); // blocks whose status or document region changed
    this.live = new Set(); // fenced blocks that follow the document
    this.freezing = []; // [entry, flushes left] of finished turns whose code stops following
    // Follow the end unless the person scrolled up. Measured on their scroll, not per frame:
    // reading the layout after every append would force a layout of the page each time.
    this.stick = true;
    container.addEventListener("scroll", () => { this.stick = this.atBottom(); }, { passive: true });
    container.addEventListener("click", (event) => {
      const chip = event.target.closest(".chip[data-path]");
      if (chip) onOpenPath(chip.dataset.path);
    });
    files.observeDeep((events) => this.documentChanged(events));
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
    entry = { article, header, prose, prompt: null, text: null, buffer: "", blocks: new Map(), done: false };
    this.turns.set(turn, entry);
    this.append(article);
    return entry;
  }

  started({ turn, prompt, steered_from: steeredFrom, effort }) {
    const entry = this.entry(turn);
    entry.prompt = prompt || "";
    const header = entry.header;
    header.replaceChildren(element("span", "turn-prompt", entry.prompt));
    if (steeredFrom) header.prepend(this.steerBadge(steeredFrom));
    if (effort) header.append(element("span", "badge", effort));
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

  prose({ turn, text }) {
    const entry = this.entry(turn);
    if (entry.done) return;
    entry.buffer += text;
    this.pending.add(entry);
  }

  blockStatus({ turn, block, path, state, detail = {} }) {
    // A status of a turn we never saw start that is already over (a revert of an old turn)
    // has nothing to show here; the history panel shows it.
    if (!this.turns.has(turn) && !IN_FLIGHT.has(state)) return;
    const entry = this.entry(turn);
    let view = entry.blocks.get(block);
    if (!view) {
      this.drain(entry); // the prose before the block goes before it
      view = this.openBlock(entry, detail);
      entry.blocks.set(block, view);
    }
    view.status = { path, state, detail };
    if (!WRITTEN.has(state)) this.live.delete(view);
    else if (Array.isArray(detail.lines)) view.lines = detail.lines;
    this.repaint.add(view);
  }

  finished({ turn, status, reason, metrics, error }) {
    const entry = this.turns.get(turn);
    if (!entry || entry.done) return; // before this page, or told twice (a replay)
    entry.done = true;
    this.drain(entry);
    entry.article.classList.remove("running");
    entry.article.classList.add(`status-${status}`);
    // Its start came before what the server keeps for a new page: it is no longer "in progress".
    if (entry.prompt === null) entry.header.firstChild.textContent = "(an earlier prompt)";
    const footer = element("footer", "turn-foot");
    footer.append(element("span", `badge outcome ${status}`, status));
    const why = reason in REASON_LABELS ? REASON_LABELS[reason] : String(reason || "").replaceAll("_", " ");
    if (why) footer.append(element("span", "reason", why));
    if (metrics && metrics.tokens_per_s !== undefined) {
      footer.append(element("span", "metric", `${metrics.tokens} tok · ${Math.round(metrics.tokens_per_s)} tok/s · TTFT ${Math.round(metrics.ttft_ms)} ms`));
    }
    if (error) footer.append(element("span", "error", typeof error === "string" ? error : error.message || ""));
    entry.article.append(footer);
    // The document updates that came with the turn's last events are applied later in this
    // frame: its code blocks follow them through the next flush, then stop.
    this.freezing.push([entry, 2]);
    if (this.stick) this.scroll();
  }

  flush() {
    for (const view of this.repaint) this.paint(view);
    this.repaint.clear();
    this.freezing = this.freezing.filter((item) => {
      item[1] -= 1;
      if (item[1] > 0) return true;
      for (const view of item[0].blocks.values()) this.live.delete(view);
      return false;
    });
    if (this.pending.size === 0) return;
    for (const entry of this.pending) this.drain(entry);
    this.pending.clear();
    if (this.stick) this.scroll();
  }

  drain(entry) {
    if (!entry.buffer) return;
    if (!entry.text) {
      entry.text = document.createTextNode("");
      entry.prose.append(entry.text);
    }
    entry.text.appendData(entry.buffer);
    entry.buffer = "";
    this.pending.delete(entry);
  }

  // A chip; for a small model's code fence, a chip over the code it wrote.
  openBlock(entry, detail) {
    const view = {
      chip: element("button", "chip"),
      kind: element("span", "chip-kind", detail.kind || "edit"),
      path: element("span", "chip-path", "?"),
      count: element("span", "chip-count", ""),
      state: element("span", "chip-state"),
      merge: element("span", "chip-merge", ""),
      lines: null, // the region [first, last] as of the latest streaming/applied status
      status: null,
      code: null,
    };
    view.chip.type = "button";
    view.chip.append(view.kind, view.path, view.count, view.state, view.merge);
    if (detail.fenced) {
      const figure = element("figure", "code-block");
      view.code = element("code");
      view.shown = null; // the code text last drawn
      view.language = detail.language || null;
      figure.append(view.chip, element("pre"));
      figure.lastChild.append(view.code);
      view.box = figure;
      this.live.add(view);
    } else {
      view.box = view.chip;
    }
    entry.prose.append(view.box);
    entry.text = null; // prose after the block starts a new text node
    return view;
  }

  paint(view) {
    const { path, state, detail } = view.status;
    const chip = view.chip;
    chip.dataset.state = state;
    view.box.dataset.state = state;
    view.state.textContent = STATE_LABELS[state] || state;
    if (path) {
      chip.dataset.path = path;
      view.path.textContent = path;
    }
    if (view.lines) view.count.textContent = `+${view.lines[1] - view.lines[0] + 1}`;
    const merged = state === "applied" ? mergeSummary(detail.merge) : "";
    view.merge.textContent = merged;
    const label = `${chip.dataset.path || ""} ${STATE_LABELS[state] || state}`;
    const why = detail.message || detail.reason || merged;
    chip.title = why ? `${label}: ${why}` : label;
    if (view.code && view.lines && (this.live.has(view) || view.shown === null)) this.paintCode(view, path);
  }

  paintCode(view, path) {
    const text = this.files.get(path);
    const code = text ? region(text.toString(), view.lines) : "";
    if (code === view.shown) return;
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
    for (const entry of this.turns.values()) entry.article.remove();
    this.turns.clear();
    this.pending.clear();
    this.repaint.clear();
    this.live.clear();
    this.freezing = [];
    this.stick = true;
  }

  append(node) {
    this.container.append(node);
    if (this.stick) this.scroll();
  }

  atBottom() {
    const box = this.container;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  }

  scroll() {
    this.container.scrollTop = this.container.scrollHeight;
  }
}
