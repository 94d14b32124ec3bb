// The replay's view of the document at a moment: the list of files it held and one file,
// read-only in CodeMirror with the editor's highlighting. The file follows the model (the
// block it writes) unless the person picks one.
import { EditorView, basicSetup } from "codemirror";
import { EditorState } from "@codemirror/state";
import { editorNonce } from "../csp.js";
import { languageFor } from "../languages.js";

// The range of `after` that differs from `before`: {from, to (in before), insert}, or null.
export function textChange(before, after) {
  if (before === after) return null;
  let start = 0;
  const shorter = Math.min(before.length, after.length);
  while (start < shorter && before.charCodeAt(start) === after.charCodeAt(start)) start += 1;
  let end = 0;
  while (end < shorter - start
    && before.charCodeAt(before.length - 1 - end) === after.charCodeAt(after.length - 1 - end)) end += 1;
  return { from: start, to: before.length - end, insert: after.slice(start, after.length - end) };
}

export class DocumentView {
  // host: the editor's box; list: the file list; tabs: the tab bar, which holds the shown
  // file's tab (none while no file is shown: at a moment with no files); follow: the checkbox.
  constructor({ host, list, tabs, follow }) {
    this.host = host;
    this.list = list;
    this.tabs = tabs;
    this.followBox = follow;
    this.path = null; // the file shown
    this.shown = undefined; // its text as shown (null: not in the document at this moment; undefined: not drawn)
    this.paths = []; // the files listed
    this.view = null;
    this.missing = document.createElement("p");
    this.missing.className = "missing";
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-path]");
      if (!button) return;
      this.followBox.checked = false; // the person chose: the model no longer takes the view away
      this.show(button.dataset.path);
      this.onPick();
    });
    this.onPick = () => {};
  }

  get following() {
    return this.followBox.checked;
  }

  // The model writes `path`: show it, when following.
  modelAt(path) {
    if (path && this.following && path !== this.path) this.show(path);
  }

  show(path) {
    this.path = path;
    this.shown = undefined;
    if (this.view) {
      this.view.destroy();
      this.view = null;
    }
    if (!path) {
      this.tabs.replaceChildren();
      return;
    }
    const tab = document.createElement("span");
    tab.className = "tab active";
    tab.textContent = path;
    tab.title = path;
    this.tabs.replaceChildren(tab);
  }

  // Draw `files` (the document's path -> Y.Text map) as it is now.
  render(files) {
    const paths = [...files.keys()].sort();
    if (this.path === null && paths.length) this.show(paths[0]);
    if (paths.join("\n") !== this.paths.join("\n")) {
      this.paths = paths;
      this.list.replaceChildren(...paths.map((path) => this.fileItem(path)));
      if (!paths.length) {
        const empty = document.createElement("li");
        empty.className = "empty";
        empty.textContent = "No files at this moment";
        this.list.append(empty);
      }
    }
    for (const button of this.list.querySelectorAll("button[data-path]")) {
      button.classList.toggle("active", button.dataset.path === this.path);
    }
    const ytext = this.path === null ? undefined : files.get(this.path);
    this.draw(ytext === undefined ? null : ytext.toString());
  }

  fileItem(path) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.path = path;
    button.title = path;
    button.textContent = path;
    item.append(button);
    return item;
  }

  draw(text) {
    if (text === this.shown) return;
    if (text === null) {
      if (this.view) this.view.destroy();
      this.view = null;
      this.shown = null;
      this.missing.textContent = this.path
        ? `${this.path} is not in the workspace at this moment.`
        : "The workspace has no files at this moment.";
      this.host.replaceChildren(this.missing);
      return;
    }
    if (!this.view) {
      this.host.replaceChildren();
      this.view = new EditorView({ parent: this.host, state: this.state(text) });
      this.shown = text;
      return;
    }
    const change = textChange(this.shown, text);
    this.shown = text;
    if (!change) return;
    const effects = this.following ? EditorView.scrollIntoView(change.from + change.insert.length, { y: "nearest" }) : [];
    this.view.dispatch({ changes: change, effects });
  }

  state(text) {
    return EditorState.create({
      doc: text,
      extensions: [
        basicSetup, EditorState.readOnly.of(true), EditorView.editable.of(false), languageFor(this.path), editorNonce(),
      ],
    });
  }
}
