// Ctrl+K / Cmd+K in the editor: a small prompt box at the selection (docs/pairing.md, "A
// prompt on a selection"). Enter sends the prompt about those lines (or steers the running turn
// with them; the Enter / Alt+Enter keys as the person set them, prompt.js); Shift+Enter is a new
// line; Esc closes it. Without a selection it is about the cursor's line, which the server
// widens to the function, class or block around it. The box is a CodeMirror tooltip over the
// selection's first line, and the lines it is about are marked while it is open; both follow
// the text as others (or the model) change it. The editor's own keys are untouched: typing in
// the box is not typing in the editor.
import { Prec, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, keymap, showTooltip, tooltips } from "@codemirror/view";
import { element } from "./dom.js";
import { enterIntent, keysHint } from "./prompt.js";

const opened = StateEffect.define(); // {from, to, cursor, create}
const closed = StateEffect.define();
const rangeLine = Decoration.line({ class: "cm-inline-range" });

// The lines the box is about, as the session protocol names them (1-based, inclusive): the
// selection's (a selection ending at the start of a line leaves that line out), or the cursor's.
export function rangeOf(doc, { from, to, cursor }, path) {
  const first = doc.lineAt(from);
  if (cursor) return { path, line: first.number };
  const end = doc.lineAt(to);
  const last = to > from && end.from === to ? end.number - 1 : end.number;
  return { path, from_line: first.number, to_line: Math.max(last, first.number) };
}

// The extension of a tab on `path`. send(intent, text, range) -> bool: the session sends it.
export function inlinePrompt(path, send) {
  const field = StateField.define({
    create: () => null,
    update(value, transaction) {
      for (const effect of transaction.effects) {
        if (effect.is(opened)) return effect.value;
        if (effect.is(closed)) return null;
      }
      if (!value || !transaction.docChanged) return value;
      const from = transaction.changes.mapPos(value.from, 1);
      return { ...value, from, to: Math.max(from, transaction.changes.mapPos(value.to, -1)) };
    },
    provide: (self) => [
      showTooltip.compute([self], (state) => {
        const value = state.field(self);
        return value ? { pos: value.from, above: true, arrow: false, create: value.create } : null;
      }),
      EditorView.decorations.compute([self], (state) => {
        const value = state.field(self);
        if (!value) return Decoration.none;
        const range = rangeOf(state.doc, value, path);
        const [first, last] = range.line ? [range.line, range.line] : [range.from_line, range.to_line];
        const marks = [];
        for (let number = first; number <= last; number += 1) marks.push(rangeLine.range(state.doc.line(number).from));
        return Decoration.set(marks);
      }),
    ],
  });

  function box(view) {
    const dom = element("form", "inline-prompt");
    dom.setAttribute("aria-label", "Prompt on the selection");
    const where = element("span", "inline-prompt-where");
    const input = element("textarea", "inline-prompt-text");
    input.rows = 1;
    input.setAttribute("aria-label", "Ask about these lines");
    input.placeholder = "Ask about these lines";
    const hint = element("span", "hint inline-prompt-keys");
    dom.append(where, input, hint);
    const paint = () => {
      const value = view.state.field(field, false);
      if (!value) return;
      const range = rangeOf(view.state.doc, value, path);
      where.textContent = range.line ? `Line ${range.line} (its block)` : range.from_line === range.to_line
        ? `Line ${range.from_line}` : `Lines ${range.from_line}–${range.to_line}`;
      hint.textContent = `${keysHint()} · Esc: close`;
      dom.style.maxWidth = `${Math.max(view.dom.clientWidth - 8, 160)}px`; // never wider than the editor
    };
    const close = () => {
      view.dispatch({ effects: closed.of(null) });
      view.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.isComposing) return;
      if (event.key === "Escape") {
        event.preventDefault();
        close();
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        const text = input.value.trim();
        const value = view.state.field(field, false);
        if (!text || !value) return;
        if (send(enterIntent(event.altKey), text, rangeOf(view.state.doc, value, path))) close();
      }
    });
    dom.addEventListener("submit", (event) => event.preventDefault());
    paint();
    return { dom, mount: () => input.focus(), update: paint };
  }

  const open = (view) => {
    if (view.state.readOnly) return false;
    const main = view.state.selection.main;
    view.dispatch({ effects: opened.of({ from: main.from, to: main.to, cursor: main.empty, create: box }) });
    return true;
  };

  // Tooltips stay inside the editor: on the first lines the box opens below them, not over the
  // tabs and the page's header.
  const inside = tooltips({ tooltipSpace: (view) => view.dom.getBoundingClientRect() });
  return [field, inside, Prec.high(keymap.of([{ key: "Mod-k", run: open, preventDefault: true }]))];
}
