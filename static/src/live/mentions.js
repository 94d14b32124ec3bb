// @-mentions in the prompt box (docs/pairing.md "Mentions and the context strip"). Typing `@`
// opens a list of the workspace's files (the document's paths, which the file tree shows);
// after `@file.py:` the list is that Python file's top-level definitions, which the server
// reads (the `symbols` message; one implementation, editing/pystructure.py). Up/Down move,
// Enter or Tab picks, Esc closes; a click picks too. The prompt's mentions are its `@path`
// and `@path:name` words (mentionsIn): they go with the prompt as `mentions`, and the
// server puts them first in the model's context.
import { MESSAGE } from "../protocol.js";
import { element } from "./dom.js";

const MOST_SHOWN = 12; // items in the list, at most
const MOST_MENTIONS = 20; // as the server takes (live/context.py MAX_MENTIONS)
// An `@word` after the start, a space or an opening bracket; a word that looks like a path
// (a dot or a slash in it) is a mention: `@property` is not, `@app.py` is.
const MENTION = /(^|[\s([{])@([^\s@()[\]{}<>"'`,;]+)/g;
const TRAILING = /[.:!?]+$/; // "look at @app.py." ends the sentence, not the path
const TYPING = /(^|[\s([{])@([^\s@()[\]{}<>"'`,;]*)$/; // the `@word` being typed before the caret

// The mentions in a prompt's text, each once, in order.
export function mentionsIn(text) {
  const found = [];
  for (const match of String(text || "").matchAll(MENTION)) {
    const word = match[2].replace(TRAILING, "");
    if (/[./]/.test(word.split(":")[0]) && !found.includes(word)) found.push(word);
  }
  return found.slice(0, MOST_MENTIONS);
}

// The candidates for `query` among `paths`: a path containing it (case ignored), those whose
// file name starts with it first, then the shorter.
export function matchPaths(paths, query) {
  const wanted = query.toLowerCase();
  const scored = [];
  for (const path of paths) {
    const lower = path.toLowerCase();
    const at = lower.indexOf(wanted);
    if (at < 0) continue;
    const name = lower.slice(lower.lastIndexOf("/") + 1);
    scored.push([name.startsWith(wanted) ? 0 : lower.startsWith(wanted) ? 1 : 2, path.length, path]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : 1));
  return scored.slice(0, MOST_SHOWN).map((item) => item[2]);
}

export class MentionMenu {
  // input: the prompt's textarea; paths(): the workspace's paths; send(message) -> bool.
  constructor(input, { paths, send }) {
    this.input = input;
    this.paths = paths;
    this.send = send;
    this.symbols = new Map(); // path -> [{name, kind, first, last}] as the server listed them
    this.asked = new Set(); // paths whose symbols were asked and not yet answered
    this.items = []; // [{value, label, hint}] shown
    this.active = 0;
    this.typed = null; // {start, end, query}: the `@word` being completed
    this.list = element("ul", "mention-menu");
    this.list.id = "mention-menu";
    this.list.setAttribute("role", "listbox");
    this.list.setAttribute("aria-label", "Files and symbols to mention");
    this.list.hidden = true;
    input.insertAdjacentElement("afterend", this.list);
    input.setAttribute("aria-controls", this.list.id);
    input.setAttribute("aria-autocomplete", "list");
    input.addEventListener("input", () => this.update());
    input.addEventListener("click", () => this.update());
    input.addEventListener("blur", () => this.close());
    this.list.addEventListener("mousedown", (event) => {
      const item = event.target.closest("[data-mention]");
      if (!item) return;
      event.preventDefault(); // the box keeps the focus
      this.pick(Number(item.dataset.index));
    });
  }

  get open() {
    return !this.list.hidden;
  }

  // The `@word` before the caret, and what it may become.
  update() {
    const caret = this.input.selectionStart;
    const before = this.input.value.slice(0, caret);
    const match = caret === this.input.selectionEnd ? TYPING.exec(before) : null;
    if (!match) {
      this.close();
      return;
    }
    const query = match[2];
    this.typed = { start: caret - query.length - 1, end: caret, query };
    this.items = this.candidates(query);
    this.active = Math.min(this.active, Math.max(this.items.length - 1, 0));
    this.draw();
  }

  candidates(query) {
    const colon = query.lastIndexOf(":");
    const path = colon > 0 ? query.slice(0, colon) : "";
    if (path.endsWith(".py") && this.paths().includes(path)) {
      const names = this.symbolsOf(path);
      if (names === null) return [{ value: null, label: "Reading its definitions…", hint: "" }];
      const wanted = query.slice(colon + 1).toLowerCase();
      return names.filter((symbol) => symbol.name.toLowerCase().startsWith(wanted)).slice(0, MOST_SHOWN)
        .map((symbol) => ({ value: `${path}:${symbol.name}`, label: `${path}:${symbol.name}`, hint: `${symbol.kind} · line ${symbol.first}` }));
    }
    return matchPaths(this.paths(), query).map((found) => ({
      value: found, label: found, hint: found.endsWith(".py") ? "file · add : for its definitions" : "file",
    }));
  }

  // A Python file's definitions as the server listed them (null: asked, not answered yet).
  symbolsOf(path) {
    if (this.symbols.has(path)) return this.symbols.get(path);
    if (!this.asked.has(path) && this.send({ type: MESSAGE.SYMBOLS, path })) this.asked.add(path);
    return null;
  }

  // The `symbols` event: the list is drawn again if it waits for them.
  told(event) {
    this.symbols.set(event.path, Array.isArray(event.symbols) ? event.symbols : []);
    this.asked.delete(event.path);
    if (this.open) this.update();
  }

  // The file's text changed: its definitions are asked again when next wanted.
  forget() {
    this.symbols.clear();
  }

  draw() {
    if (this.items.length === 0) {
      this.close();
      return;
    }
    this.list.replaceChildren(...this.items.map((item, index) => {
      const li = element("li", "mention-item");
      li.setAttribute("role", "option");
      li.id = `mention-${index}`;
      li.dataset.index = String(index);
      if (item.value !== null) li.dataset.mention = item.value;
      li.setAttribute("aria-selected", String(index === this.active));
      li.append(element("span", "mention-label", item.label), element("span", "mention-hint", item.hint));
      return li;
    }));
    this.list.hidden = false;
    this.input.setAttribute("aria-activedescendant", `mention-${this.active}`);
  }

  close() {
    this.list.hidden = true;
    this.typed = null;
    this.active = 0;
    this.input.removeAttribute("aria-activedescendant");
  }

  // A key in the box while the list is open: true when the list took it.
  key(event) {
    if (!this.open) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.items.length) % this.items.length;
      this.draw();
    } else if (event.key === "Enter" || event.key === "Tab") {
      if (event.shiftKey || event.altKey) return false;
      this.pick(this.active);
    } else if (event.key === "Escape") {
      this.close();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }

  // The item at `index` replaces the `@word` being typed (a space after it).
  pick(index) {
    const item = this.items[index];
    const typed = this.typed;
    if (!item || item.value === null || !typed) return;
    const value = this.input.value;
    const insert = `@${item.value} `;
    this.input.value = value.slice(0, typed.start) + insert + value.slice(typed.end).replace(/^ /, "");
    const caret = typed.start + insert.length;
    this.input.setSelectionRange(caret, caret);
    this.close();
    this.input.dispatchEvent(new Event("input", { bubbles: true })); // the context strip follows
  }
}
