// The transcript: per turn, a header (prompt, steered from, effort), the model's prose as
// plain text, each edit block collapsed to a chip (path, state, lines written), a footer with
// the outcome. Deltas are buffered and drawn at most once per animation frame.
import { EditBlockSplitter, dropOpeningFence, takePathLine } from "./edit_blocks.js";

const STATE_LABELS = {
  pending: "…", locating: "locating", streaming: "writing", applied: "applied",
  rolled_back: "rolled back", failed: "failed",
};

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export class Transcript {
  // onOpenPath(path): a chip was clicked
  constructor(container, { onOpenPath }) {
    this.container = container;
    this.onOpenPath = onOpenPath;
    this.turns = new Map(); // turn id -> entry (see entry())
    this.pending = new Set(); // turns with buffered text
    this.repaint = new Set(); // chips whose state changed since the last frame
    // Follow the end unless the person scrolled up. Measured on their scroll, not per frame:
    // reading the layout after every append would force a layout of the page each time.
    this.stick = true;
    container.addEventListener("scroll", () => { this.stick = this.atBottom(); }, { passive: true });
    container.addEventListener("click", (event) => {
      const chip = event.target.closest(".chip[data-path]");
      if (chip) onOpenPath(chip.dataset.path);
    });
  }

  entry(turn) {
    let entry = this.turns.get(turn);
    if (entry) return entry;
    const article = element("article", "turn running");
    article.dataset.turn = turn;
    const header = element("header", "turn-head");
    header.append(element("span", "turn-prompt", "(turn in progress)"));
    const prose = element("div", "prose");
    article.append(header, prose);
    entry = {
      article, header, prose, text: null, splitter: new EditBlockSplitter(), buffer: "",
      chips: [], states: new Map(), done: false,
    };
    this.turns.set(turn, entry);
    this.append(article);
    return entry;
  }

  started({ turn, prompt, steered_from: steeredFrom, effort }) {
    const entry = this.entry(turn);
    const header = entry.header;
    header.replaceChildren(element("span", "turn-prompt", prompt || ""));
    if (steeredFrom) header.prepend(element("span", "badge steer", `steered from ${steeredFrom}`));
    if (effort) header.append(element("span", "badge", effort));
  }

  delta({ turn, text }) {
    const entry = this.entry(turn);
    entry.buffer += text;
    this.pending.add(turn);
  }

  blockStatus({ turn, block, path, state, detail }) {
    // A status of a turn we never saw start that is already over (a revert of an old turn)
    // has nothing to show here; the history panel shows it.
    if (!this.turns.has(turn) && (state !== "locating" && state !== "streaming")) return;
    const entry = this.entry(turn);
    entry.states.set(block, { path, state, detail: detail || {} });
    const chip = entry.chips[block];
    if (chip) {
      chip.status = entry.states.get(block);
      this.repaint.add(chip);
    }
  }

  finished({ turn, status, metrics, error }) {
    const entry = this.turns.get(turn);
    if (!entry || entry.done) return; // before this page, or told twice (a replay)
    entry.done = true;
    this.drain(entry);
    this.apply(entry, entry.splitter.finish());
    entry.article.classList.remove("running");
    entry.article.classList.add(`status-${status}`);
    const footer = element("footer", "turn-foot");
    footer.append(element("span", `badge outcome ${status}`, status));
    if (metrics && metrics.tokens_per_s !== undefined) {
      footer.append(element("span", "metric", `${metrics.tokens} tok · ${Math.round(metrics.tokens_per_s)} tok/s · TTFT ${Math.round(metrics.ttft_ms)} ms`));
    }
    if (error) footer.append(element("span", "error", typeof error === "string" ? error : error.message || ""));
    entry.article.append(footer);
    if (this.stick) this.scroll();
  }

  flush() {
    for (const chip of this.repaint) this.paintChip(chip, chip.status);
    this.repaint.clear();
    if (this.pending.size === 0) return;
    for (const turn of this.pending) this.drain(this.turns.get(turn));
    this.pending.clear();
    if (this.stick) this.scroll();
  }

  drain(entry) {
    if (!entry.buffer) return;
    const text = entry.buffer;
    entry.buffer = "";
    this.apply(entry, entry.splitter.feed(text));
  }

  apply(entry, operations) {
    const grown = new Set();
    for (const op of operations) {
      if (op.prose !== undefined) {
        if (!entry.text) {
          entry.text = document.createTextNode("");
          entry.prose.append(entry.text);
        }
        entry.text.appendData(op.prose);
      } else if (op.open) {
        this.openChip(entry, op.open);
      } else if (op.line) {
        const chip = entry.chips[entry.chips.length - 1];
        chip.lines += 1;
        grown.add(chip);
      }
    }
    for (const chip of grown) chip.count.textContent = `+${chip.lines}`;
  }

  openChip(entry, opened) {
    let path = opened.path;
    if (opened.pathFromProse && entry.text) {
      const taken = takePathLine(entry.text.data);
      entry.text.data = taken.prose;
      path = taken.path;
    } else if (entry.text) {
      entry.text.data = dropOpeningFence(entry.text.data);
    }
    const chip = {
      button: element("button", "chip"),
      path: element("span", "chip-path", path || "?"),
      count: element("span", "chip-count", ""),
      state: element("span", "chip-state"),
      lines: 0,
      status: null, // the latest {path, state, detail} from edit.status
    };
    chip.button.type = "button";
    chip.button.append(element("span", "chip-kind", opened.kind), chip.path, chip.count, chip.state);
    entry.chips.push(chip);
    entry.prose.append(chip.button);
    entry.text = null; // prose after the block starts a new text node
    chip.status = entry.states.get(entry.chips.length - 1) || { path, state: "pending", detail: {} };
    this.paintChip(chip, chip.status);
  }

  paintChip(chip, { path, state, detail }) {
    const button = chip.button;
    button.dataset.state = state;
    chip.state.textContent = STATE_LABELS[state] || state;
    if (path) {
      button.dataset.path = path;
      chip.path.textContent = path;
    }
    const label = `${button.dataset.path || ""} ${STATE_LABELS[state] || state}`;
    const why = detail.message || detail.reason;
    button.title = why ? `${label}: ${why}` : label;
  }

  // A resync: the turns that were running ended unseen, except `running`, which goes on
  // after a visible gap in its text.
  lostEvents(running) {
    for (const [turn, entry] of this.turns) {
      entry.buffer = "";
      if (entry.done) continue;
      if (turn === running) {
        entry.prose.append(element("span", "gap", " … "));
        entry.text = null;
        entry.splitter = new EditBlockSplitter(); // we may be anywhere in a block now
      } else {
        entry.done = true;
        entry.article.classList.replace("running", "status-unknown");
      }
    }
    this.pending.clear();
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
