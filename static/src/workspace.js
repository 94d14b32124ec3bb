// The workspace page: file tabs over one CodeMirror 6 view, autosave through the JSON API.
import { EditorView, basicSetup } from "codemirror";
import { EditorState } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { languageFor } from "./languages.js";
import { renderTabBar } from "./tabbar.js";

const SAVE_DELAY_MS = 600;

function csrfToken() {
  const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
  return headers["X-CSRFToken"] || "";
}

function fileUrl(workspaceId, path) {
  const encoded = path.split("/").map(encodeURIComponent).join("/");
  return `/api/workspaces/${workspaceId}/files/${encoded}`;
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    return body.error ? body.error.message : `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

class Workspace {
  constructor(root) {
    this.id = root.dataset.workspace;
    this.canEdit = root.dataset.canEdit === "true";
    this.tabs = new Map(); // path -> {state, dirty, saving, timer}
    this.active = null;
    this.tabBar = root.querySelector("#tabs");
    this.editorHost = root.querySelector("#editor");
    this.saveStatus = root.querySelector("#status-save");
    this.fileStatus = root.querySelector("#status-file");
    this.view = null;
  }

  extensions(path) {
    return [
      basicSetup,
      languageFor(path),
      EditorState.readOnly.of(!this.canEdit),
      keymap.of([{ key: "Mod-s", preventDefault: true, run: () => { this.saveNow(this.active); return true; } }]),
      EditorView.updateListener.of((update) => {
        if (update.docChanged && this.active) this.changed(this.active);
      }),
    ];
  }

  async open(path) {
    if (!this.tabs.has(path)) {
      const response = await fetch(fileUrl(this.id, path), { headers: { Accept: "text/plain" } });
      if (!response.ok) {
        this.status(`Cannot open ${path}: ${await errorMessage(response)}`, "error");
        return;
      }
      const text = await response.text();
      const state = EditorState.create({ doc: text, extensions: this.extensions(path) });
      this.tabs.set(path, { state, dirty: false, saving: null, timer: null });
    }
    this.activate(path);
  }

  activate(path) {
    if (this.active && this.view && this.tabs.has(this.active)) {
      this.tabs.get(this.active).state = this.view.state;
    }
    this.active = path;
    const tab = this.tabs.get(path);
    if (!this.view) {
      this.editorHost.replaceChildren();
      this.view = new EditorView({ state: tab.state, parent: this.editorHost });
    } else {
      this.view.setState(tab.state);
    }
    this.fileStatus.textContent = path;
    history.replaceState(null, "", `#${path}`);
    this.renderTabs();
    this.view.focus();
  }

  renderTabs() {
    const tabs = [...this.tabs.entries()].map(([path, tab]) => ({
      path, active: path === this.active, extraClass: tab.dirty ? "dirty" : "",
    }));
    renderTabBar(this.tabBar, tabs, { onPick: (path) => this.activate(path), onClose: (path) => this.close(path) });
  }

  changed(path) {
    const tab = this.tabs.get(path);
    tab.dirty = true;
    clearTimeout(tab.timer);
    tab.timer = setTimeout(() => this.saveNow(path), SAVE_DELAY_MS);
    this.status("Unsaved changes");
    this.renderTabs();
  }

  currentText(path) {
    const tab = this.tabs.get(path);
    return path === this.active ? this.view.state.doc.toString() : tab.state.doc.toString();
  }

  async saveNow(path) {
    const tab = path && this.tabs.get(path);
    if (!tab || !this.canEdit) return;
    clearTimeout(tab.timer);
    if (tab.saving) await tab.saving; // one PUT at a time per file, in order
    if (!tab.dirty) return;
    tab.dirty = false;
    const text = this.currentText(path);
    this.status("Saving…");
    tab.saving = fetch(fileUrl(this.id, path), {
      method: "PUT",
      headers: { "Content-Type": "text/plain; charset=utf-8", "X-CSRFToken": csrfToken() },
      body: text,
    }).then(async (response) => {
      if (response.ok) {
        this.status(tab.dirty ? "Unsaved changes" : "All changes saved", "ok");
      } else {
        tab.dirty = true;
        this.status(`Not saved: ${await errorMessage(response)}`, "error");
      }
    }, () => {
      tab.dirty = true;
      this.status("Not saved: the server cannot be reached", "error");
    }).finally(() => { tab.saving = null; this.renderTabs(); });
    await tab.saving;
  }

  async close(path) {
    await this.saveNow(path);
    this.tabs.delete(path);
    if (this.active === path) {
      this.active = null;
      const next = [...this.tabs.keys()].pop();
      if (next) this.activate(next);
      else this.clearEditor();
    }
    this.renderTabs();
  }

  clearEditor() {
    if (this.view) this.view.destroy();
    this.view = null;
    this.editorHost.replaceChildren();
    this.fileStatus.textContent = "";
    history.replaceState(null, "", "#");
  }

  renamed(path, newPath) {
    const tab = this.tabs.get(path);
    if (!tab) return;
    if (this.active === path) tab.state = this.view.state;
    this.tabs.delete(path);
    const state = EditorState.create({ doc: tab.state.doc, extensions: this.extensions(newPath) });
    this.tabs.set(newPath, { ...tab, state });
    if (this.active === path) { this.active = null; this.activate(newPath); } else this.renderTabs();
  }

  deleted(path) {
    const tab = this.tabs.get(path);
    if (!tab) return;
    clearTimeout(tab.timer);
    tab.dirty = false;
    this.close(path);
  }

  hasUnsaved() {
    return [...this.tabs.values()].some((tab) => tab.dirty || tab.saving);
  }

  status(text, kind = "") {
    this.saveStatus.textContent = text;
    this.saveStatus.className = kind;
  }
}

export function startWorkspace(root) {
  const workspace = new Workspace(root);
  root.addEventListener("click", (event) => {
    const link = event.target.closest("[data-open]");
    if (!link) return;
    event.preventDefault();
    workspace.open(link.dataset.open);
  });
  document.body.addEventListener("spark:open", (event) => workspace.open(event.detail.path));
  document.body.addEventListener("spark:renamed", (event) => workspace.renamed(event.detail.path, event.detail.new_path));
  document.body.addEventListener("spark:deleted", (event) => workspace.deleted(event.detail.path));
  window.addEventListener("beforeunload", (event) => {
    if (workspace.hasUnsaved()) event.preventDefault();
  });
  const initial = decodeURIComponent(window.location.hash.slice(1));
  if (initial) workspace.open(initial);
  window.sparkWorkspace = workspace;
  return workspace;
}
