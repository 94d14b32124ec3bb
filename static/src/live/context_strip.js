// The context strip under the prompt box (docs/pairing.md "Mentions and the context strip"):
// what the next request will carry of the workspace, as the server's packer decides it (a
// `context.preview` message, answered by a `context` event to this page only): the active
// file with the selection, the mentioned files and symbols, the other files packed, what the
// budget cut or left out, mentions that name nothing (struck out, skipped), and a meter of
// the request's estimated tokens out of the model's context budget. A chip's × takes that
// file out of the next request (sent as `exclude`); ↺ puts it back. The page asks only while
// the prompt box is in use, a moment after the last change (DEBOUNCE_MS), and never twice for
// the same question.
import { MESSAGE } from "../protocol.js";
import { element } from "./dom.js";
import { rangeOf } from "./inline_prompt.js";
import { mentionsIn } from "./mentions.js";

const DEBOUNCE_MS = 350;
const MOST_OTHERS = 8; // other packed files shown as chips; past that, "+N more"

function chip(className, label, title) {
  const node = element("span", `context-chip ${className}`);
  node.append(element("span", "context-label", label));
  if (title) node.title = title;
  return node;
}

function button(action, text, label, path) {
  const node = element("button", `context-${action}`, text);
  node.type = "button";
  node.dataset.contextAction = action;
  node.dataset.path = path;
  node.setAttribute("aria-label", label);
  return node;
}

export function lineRange(first, last) {
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

export function tokenWords(tokens, budget) {
  const used = Number(tokens) || 0;
  const of = Number(budget) || 0;
  return `≈ ${used.toLocaleString("en")} of ${of.toLocaleString("en")} tokens`;
}

export class ContextStrip {
  // host: the strip's element; input: the prompt's textarea; send(message) -> bool;
  // active(): the file open in the editor ("" for none); selection(): {first, last} lines
  // selected in it, or null.
  constructor(host, { input, send, active, selection }) {
    this.host = host;
    this.input = input;
    this.send = send;
    this.active = active;
    this.selection = selection;
    this.excluded = new Set(); // paths the person took out of the next request
    this.timer = null;
    this.forced = false; // the next question is asked even if the box is not in use
    this.last = ""; // the question asked last (as sent)
    this.context = null; // the last answer
    this.chips = element("div", "context-chips");
    this.meter = element("meter", "context-meter");
    this.meter.min = 0;
    this.words = element("span", "context-tokens");
    const gauge = element("span", "context-gauge");
    gauge.append(this.meter, this.words);
    host.replaceChildren(this.chips, gauge);
    input.addEventListener("input", () => this.soon());
    input.addEventListener("focus", () => this.soon());
    host.addEventListener("click", (event) => this.clicked(event));
  }

  // What goes with the next prompt: the mentions in its text, the files taken out.
  mentions() {
    return mentionsIn(this.input.value);
  }

  exclude() {
    return [...this.excluded];
  }

  // A prompt of this person was taken: the next one starts with everything in again.
  taken() {
    this.excluded.clear();
    this.soon(true);
  }

  // Something the next request depends on changed (the text, the open file, the files, a
  // turn ended): ask again a moment after the last change, while the box is in use (`force`:
  // in any case).
  soon(force = false) {
    clearTimeout(this.timer);
    this.forced = this.forced || force;
    this.timer = setTimeout(() => {
      const forced = this.forced;
      this.forced = false;
      this.ask(forced);
    }, DEBOUNCE_MS);
  }

  ask(force = false) {
    const inUse = document.activeElement === this.input || this.input.value.trim() !== "";
    if (!inUse && !force) return;
    const message = {
      type: MESSAGE.CONTEXT_PREVIEW, text: this.input.value.trim(), path: this.active() || "",
      mentions: this.mentions(), exclude: this.exclude(),
    };
    const question = JSON.stringify(message);
    if (question === this.last && !force) return;
    if (this.send(message)) this.last = question;
  }

  // The files changed, or a turn ended: the same question may have another answer now (what
  // the strip shows is faded until it comes).
  stale() {
    this.last = "";
    this.host.classList.add("stale");
    this.soon();
  }

  // The `context` event: the answer to the last question.
  show(event) {
    const context = event.context || {};
    this.context = context;
    const nodes = [];
    const active = context.active || "";
    const cut = new Map((context.cut || []).map((item) => [item.path, item]));
    const whole = context.whole || [];
    const mentioned = new Set(context.mentions || []);
    if (active && (whole.includes(active) || cut.has(active))) {
      const selected = this.selection();
      const note = selected ? ` · ${lineRange(selected.first, selected.last)} selected` : "";
      nodes.push(this.fileChip(active, "active", `${active}${note}`, cut.get(active), "The file open in the editor"));
    }
    for (const path of whole) {
      if (path !== active && mentioned.has(path)) nodes.push(this.fileChip(path, "mentioned", `@${path}`, null, "Mentioned: sent whole, first"));
    }
    for (const symbol of context.symbols || []) {
      const label = `@${symbol.mention} · ${lineRange(symbol.first, symbol.last)}`;
      nodes.push(this.fileChip(symbol.path, "mentioned symbol", label, null, "Mentioned: its source only"));
    }
    for (const missing of context.missing || []) {
      nodes.push(chip("missing", `@${missing.mention}`, `${missing.why}: skipped`));
    }
    const others = whole.filter((path) => path !== active && !mentioned.has(path));
    for (const path of [...cut.keys()]) if (path !== active) nodes.push(this.fileChip(path, "other", path, cut.get(path), ""));
    for (const path of others.slice(0, MOST_OTHERS)) nodes.push(this.fileChip(path, "other", path, null, "Sent whole"));
    if (others.length > MOST_OTHERS) {
      const more = chip("more", `+${others.length - MOST_OTHERS} more`, others.slice(MOST_OTHERS).join(", "));
      nodes.push(more);
    }
    for (const path of context.left_out || []) {
      const open = path === active ? " · open" : "";
      const node = chip("left-out", `${path}${open}`, "Not sent: over the context budget");
      node.dataset.path = path;
      nodes.push(node);
    }
    for (const path of context.excluded || []) {
      const node = chip("excluded", path, "You took it out of the next request");
      node.dataset.path = path;
      node.append(button("restore", "↺", `Put ${path} back`, path));
      nodes.push(node);
    }
    this.chips.replaceChildren(...nodes);
    this.meter.max = Math.max(Number(context.budget) || 1, 1);
    this.meter.value = Math.min(Number(context.tokens) || 0, this.meter.max);
    this.words.textContent = tokenWords(context.tokens, context.budget);
    this.host.hidden = false;
    this.host.classList.remove("stale");
  }

  // A file's chip with its × (cut: the head only was sent).
  fileChip(path, className, label, cut, title) {
    const words = cut ? `${label} · first ${cut.lines} of ${cut.of} lines` : label;
    const node = chip(`${className}${cut ? " cut" : ""}`, words, cut ? "Cut short by the context budget" : title);
    node.dataset.path = path;
    node.append(button("remove", "×", `Take ${path} out of the next request`, path));
    return node;
  }

  clicked(event) {
    const target = event.target.closest("[data-context-action]");
    if (!target) return;
    const path = target.dataset.path;
    if (target.dataset.contextAction === "remove") this.excluded.add(path);
    else this.excluded.delete(path);
    this.ask(true);
  }
}

// The lines selected in the editor ({first, last}), or null when nothing is selected: as
// Ctrl+K names them (a selection ending at the start of a line leaves that line out).
export function selectedLines(view) {
  if (!view) return null;
  const { from, to, empty } = view.state.selection.main;
  if (empty) return null;
  const range = rangeOf(view.state.doc, { from, to, cursor: false }, "");
  return { first: range.from_line, last: range.to_line };
}
