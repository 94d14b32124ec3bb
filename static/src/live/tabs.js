// Editor tabs over one CodeMirror view, each tab a Yjs-bound EditorState on the file's Y.Text
// (doc.getMap("files")). The model's edits and other people's typing arrive through Yjs.
import { EditorView } from "codemirror";
import { Compartment, Transaction } from "@codemirror/state";
import * as Y from "yjs";
import { ySyncAnnotation } from "y-codemirror.next";
import { moveCursor, positionMap } from "./remote_selections.js";
import { sameRegion, setLiveRegion } from "./decorations.js";
import { renderTabBar } from "../tabbar.js";
import { showAddress } from "./address.js";
import { LARGE_TYPE, caughtUp, newTab, rebuiltState, tabExtensions } from "./tab_state.js";
import { inSight, lineOfIndex, putCursorOnLine, regionEffects, revealLine } from "./tab_view.js";

// After a click or keystroke in the editor, the view stops following the model this long;
// after a person picks a tab, the model's other files do not take it away for this long.
const USER_FOCUS_MS = 4000;
// An update that brings more lines than this at once (at 20k tokens/s a 300-line file lands in
// two or three updates) is drawn in one frame and the view moved to the model's line in the
// next: applying the lines (the parse, the new lines drawn) and redrawing the view where they
// end (CodeMirror's measure, the lines scrolled into view, drawn again) made one frame of
// 34-47 ms, two frames dropped; apart, two lighter frames (docs/benchmarks.md).
const LINES_DRAWN_WITH_THE_SCROLL = 40;

export class EditorTabs {
  // onByHand(): the person scrolled or typed in the editor, or picked another tab;
  // diagnostics: the watchdog's findings per path (GuardDiagnostics), shown in each file's tab
  constructor({
    tabBar, host, fileLabel, files, awareness, canEdit, regions, diagnostics = null, onByHand = () => {},
    hunkMarks = null, inlinePrompt = null, requestFrame = () => {},
  }) {
    this.requestFrame = requestFrame; // a flush next frame (the frame loop's)
    this.hunkMarks = hunkMarks; // path -> the gutter of Keep / Undo marks (hunk_review.js), or null
    this.inlinePrompt = inlinePrompt; // path -> Ctrl+K's prompt box (inline_prompt.js), or null
    this.tabBar = tabBar;
    this.host = host;
    this.fileLabel = fileLabel;
    this.files = files;
    this.awareness = awareness;
    this.canEdit = canEdit;
    this.regions = regions;
    this.diagnostics = diagnostics;
    this.onByHand = onByHand;
    this.tabs = new Map(); // path -> {ytext, undo, state, scroll (a scroll effect, or null: the top)}
    this.waiting = new Map(); // path -> activate? (opened before its Y.Text exists)
    this.vanished = new Map(); // path -> was active: tabs closed because their file went away
    this.opening = new Map(); // path -> activate?: a file that just appeared, its tab on the way
    this.active = null;
    this.view = null;
    this.lastUserAction = -Infinity; // in the editor: stop scrolling and switching for a while
    this.lastFilePick = -Infinity; // a tab or tree click: stop switching files for a while
    this.staged = null; // {path, info, line}: the region for the next editor transaction
    this.stagedNextFrame = false; // a large update came this frame: the region waits for the next
    this.owesScroll = false; // the region waited a frame: the next transaction takes it, large or not
    this.shown = null; // {path, info}: the region the editor draws
    this.onTabsChanged = () => {}; // the tabs or the front one changed (landing.js keeps them)
    this.typeSize = new Compartment(); // presenter mode's large type, or the normal one
    this.largeType = false;
    const touched = () => { this.lastUserAction = performance.now(); };
    host.addEventListener("pointerdown", touched);
    host.addEventListener("keydown", touched);
    // Scrolling by hand (the view's own scrolling raises no wheel or touch events) and keys.
    for (const kind of ["wheel", "touchmove", "keydown"]) {
      host.addEventListener(kind, () => this.onByHand(), { passive: true });
    }
    tabBar.addEventListener("pointerdown", () => this.filePicked());
    this.filesObserver = (event) => this.filesChanged(event.keysChanged);
    files.observe(this.filesObserver);
  }

  filePicked() {
    this.lastFilePick = performance.now();
  }

  // The person is working in the editor: do not scroll it or switch its file.
  userBusy() {
    return performance.now() - this.lastUserAction < USER_FOCUS_MS;
  }

  // May the view switch to the file the model writes?
  mayFollowTo(path) {
    if (this.active === null || this.active === path) return true;
    return !this.userBusy() && performance.now() - this.lastFilePick >= USER_FOCUS_MS;
  }

  has(path) {
    return this.tabs.has(path) || this.waiting.has(path) || this.opening.has(path);
  }

  // Presenter mode's large type (on) or the normal one, in every tab: the editor measures its
  // lines again (see tab_state.js LARGE_TYPE).
  setLargeType(on) {
    if (on === this.largeType) return;
    this.largeType = on;
    const effects = this.typeSize.reconfigure(on ? LARGE_TYPE : []);
    for (const [path, tab] of this.tabs) {
      if (path !== this.active || !this.view) tab.state = tab.state.update({ effects }).state;
    }
    if (this.view) this.view.dispatch({ effects });
  }

  // The open tabs' paths, in the tab bar's order.
  paths() {
    return [...this.tabs.keys()];
  }

  extensions(path, tab) {
    return tabExtensions(path, tab, {
      awareness: this.awareness, canEdit: this.canEdit, typeSize: this.typeSize, largeType: this.largeType,
      extendRemote: (transaction) => this.extendRemote(transaction), hunkMarks: this.hunkMarks,
      inlinePrompt: this.inlinePrompt,
    });
  }

  // A transaction that brings others' changes (the model's stream) from Yjs: it is not undone
  // here (undo is Yjs's, for one's own typing), so CodeMirror's history need not keep it; and
  // the model's region staged for this frame rides along (stageRegion).
  extendRemote(transaction) {
    if (!transaction.annotation(ySyncAnnotation)) return null;
    const spec = { annotations: Transaction.addToHistory.of(false) };
    const staged = this.staged;
    if (staged && this.view && transaction.startState === this.view.state && staged.path === this.active) {
      const added = transaction.newDoc.lines - transaction.startState.doc.lines;
      const large = added > LINES_DRAWN_WITH_THE_SCROLL && !this.owesScroll;
      if (large && staged.line !== null && !inSight(this.view, staged.line)) {
        this.stagedNextFrame = true; // applyStagedRegion, a frame later
        return spec;
      }
      this.staged = null;
      this.stagedNextFrame = false;
      this.owesScroll = false;
      spec.effects = regionEffects(this.view, staged, transaction.newDoc);
      this.shown = { path: staged.path, info: staged.info };
    }
    return spec;
  }

  // activate: show it now; focus: also move the keyboard focus there (a person's choice).
  // later: the model's doing, while it streams: a new tab is built in tasks of its own.
  open(path, { activate = true, focus = activate, later = false } = {}) {
    if (!this.tabs.has(path)) {
      const ytext = this.files.get(path);
      if (!(ytext instanceof Y.Text)) {
        this.waiting.set(path, activate || this.waiting.get(path) === true);
        return;
      }
      if (later) {
        this.openSoon(path, activate);
        return;
      }
      this.opening.delete(path);
      this.tabs.set(path, this.newTab(path, ytext));
    }
    if (activate) this.activate(path, { focus });
    else this.render();
  }

  newTab(path, ytext) {
    return newTab(ytext, (tab) => this.extensions(path, tab));
  }

  // following: the model's stream put it in front (its address is written when the page is
  // idle, address.js).
  activate(path, { focus = true, following = false } = {}) {
    const tab = this.tabs.get(path);
    if (!tab) {
      if (this.opening.has(path)) this.opening.set(path, true); // shown once it is built
      return;
    }
    if (path === this.active && this.view) {
      if (focus) this.view.focus();
      return;
    }
    this.stash();
    this.active = path;
    // Who is on which file (presence, following), told before the cursor the new view sets.
    this.awareness.setLocalStateField("file", path);
    // An inactive state is not bound to Yjs (the view's sync plugin is), so it may be behind.
    tab.state = caughtUp(tab.state, tab.ytext.toString());
    if (!this.view) {
      this.host.replaceChildren();
      this.view = new EditorView({ state: tab.state, parent: this.host });
    } else {
      this.view.setState(tab.state);
    }
    // Where the tab was scrolled, as an effect: CodeMirror applies it when it measures,
    // where setting scrollTop here would lay the new editor out at once, a second time.
    const scroll = tab.scroll || EditorView.scrollIntoView(0, { y: "start" });
    // The watchdog's findings as they are now: an inactive tab's state did not hear of changes.
    const found = this.diagnostics ? this.diagnostics.spec(path, this.view.state).effects : [];
    this.shown = { path, info: this.regions.get(path) };
    this.view.dispatch({ effects: [setLiveRegion.of(this.shown.info), scroll, ...found] });
    this.fileLabel.textContent = path;
    showAddress(path, { later: following });
    this.render();
    if (focus) this.view.focus();
  }

  // The tab's state again on its Y.Text, the selection moved by `map` (tab_state.js).
  rebuilt(path, tab, map) {
    return rebuiltState(tab, this.extensions(path, tab), map);
  }

  stash() {
    const tab = this.active && this.tabs.get(this.active);
    if (!tab || !this.view) return;
    tab.state = this.view.state;
    tab.scroll = this.view.scrollSnapshot();
  }

  close(path) {
    this.waiting.delete(path);
    this.opening.delete(path);
    const tab = this.tabs.get(path);
    if (!tab) return;
    tab.undo.destroy();
    this.tabs.delete(path);
    if (this.active === path) {
      this.active = null;
      const next = [...this.tabs.keys()].pop();
      if (next) this.activate(next, { focus: false });
      else this.clearEditor();
    }
    this.render();
  }

  clearEditor() {
    if (this.view) this.view.destroy();
    this.view = null;
    const hint = document.createElement("p");
    hint.className = "hint empty";
    hint.textContent = "Open a file from the tree, or ask the model below.";
    this.host.replaceChildren(hint);
    this.fileLabel.textContent = "";
    this.awareness.setLocalStateField("file", null);
    showAddress(null);
  }

  // The server renamed a file. Its removal may reach the document before the rename's answer
  // reaches the page, and close the tab first: the tab it was is remembered (vanished).
  renamed(path, newPath) {
    const gone = this.vanished.get(path);
    this.vanished.delete(path);
    if (!this.tabs.has(path) && gone === undefined) return;
    const wasActive = this.active === path || gone === true;
    this.close(path);
    this.open(newPath, { activate: wasActive, focus: false });
  }

  // Files appear (a sync, the model's <write>, someone's new file), vanish or get replaced.
  filesChanged(keys) {
    for (const path of keys) {
      const ytext = this.files.get(path);
      if (this.waiting.has(path) && ytext instanceof Y.Text) {
        const activate = this.waiting.get(path);
        this.waiting.delete(path);
        this.openSoon(path, activate);
        continue;
      }
      const tab = this.tabs.get(path);
      if (!tab || tab.ytext === ytext) continue;
      if (!(ytext instanceof Y.Text)) {
        this.vanished.set(path, this.active === path);
        this.close(path);
        continue;
      }
      const wasActive = this.active === path;
      if (wasActive) this.stash();
      tab.undo.destroy();
      this.tabs.set(path, this.newTab(path, ytext));
      if (wasActive) { this.active = null; this.activate(path, { focus: false }); }
    }
  }

  // The server replaced the document by a new one built from the same texts (session.js
  // documentReplaced): every tab moves to its file's Y.Text there, and the view shows the same
  // file, selection and scroll. A tab whose file the new document lacks closes.
  rebind(files) {
    const old = this.files;
    old.unobserve(this.filesObserver);
    this.files = files;
    files.observe(this.filesObserver);
    moveCursor(this.awareness, old, files);
    const focused = this.view !== null && this.view.hasFocus;
    this.stash();
    const gone = [];
    for (const [path, tab] of this.tabs) {
      const ytext = files.get(path);
      if (ytext instanceof Y.Text) this.retarget(path, tab, ytext);
      else gone.push(path);
    }
    // The view still shows the old state (bound to the old text): the active tab's new one,
    // before a closed tab would make another tab active.
    const shown = this.active;
    if (shown !== null && !gone.includes(shown)) {
      this.active = null;
      this.activate(shown, { focus: focused });
    }
    for (const path of gone) {
      this.vanished.set(path, this.active === path);
      this.close(path);
    }
    this.filesChanged([...this.waiting.keys()]); // files asked for before they existed
  }

  // A tab on its file's Y.Text of a new document: a new undo history (the old one undoes items
  // the new document does not hold), and its state built again, the selection kept.
  retarget(path, tab, ytext) {
    const before = tab.state.doc.toString();
    tab.undo.destroy();
    tab.ytext = ytext;
    tab.undo = new Y.UndoManager(ytext);
    // The new text may lack a keystroke still on its way (merged back a moment later): the
    // selection moves through the difference, not by its raw offsets.
    tab.state = this.rebuilt(path, tab, positionMap(before, ytext.toString()));
  }

  // A file the model is writing just appeared in the document (inside the transaction that
  // brought it). Its tab is made in a task of its own and shown in the next one: building an
  // editor state and swapping the view to it are each a frame's worth of work, which must not
  // land in the frame that applies the stream's updates.
  openSoon(path, activate) {
    const already = this.opening.get(path);
    this.opening.set(path, activate || already === true);
    if (already !== undefined) return;
    setTimeout(() => {
      if (!this.opening.has(path)) return; // closed meanwhile
      const ytext = this.files.get(path);
      if (!(ytext instanceof Y.Text)) {
        this.opening.delete(path);
        return;
      }
      if (!this.tabs.has(path)) this.tabs.set(path, this.newTab(path, ytext));
      setTimeout(() => {
        if (!this.opening.has(path)) return;
        const show = this.opening.get(path);
        this.opening.delete(path);
        if (show && this.tabs.has(path)) this.activate(path, { focus: false, following: true });
        else this.render();
      }, 0);
    }, 0);
  }

  // The model's current region for the active file, and the line to scroll to (null: stay),
  // for the next editor transaction: the one applying this frame's document updates, else
  // its own (applyStagedRegion).
  stageRegion(path, info, line) {
    this.staged = { path, info, line };
  }

  // Does the editor draw `info` for `path` (or will it, with the staged region), the ghost's
  // text aside? Then a new status needs no editor transaction (session_edits.js paintRegions).
  drawsRegion(path, info) {
    const drawn = this.staged || this.shown;
    return Boolean(this.view && drawn && path === this.active && drawn.path === path && sameRegion(drawn.info, info));
  }

  applyStagedRegion() {
    if (this.stagedNextFrame) {
      this.stagedNextFrame = false;
      this.owesScroll = true;
      this.requestFrame();
      return;
    }
    const staged = this.staged;
    this.staged = null;
    this.owesScroll = false;
    if (!staged || !this.view || staged.path !== this.active) return;
    this.shown = { path: staged.path, info: staged.info };
    this.view.dispatch({ effects: regionEffects(this.view, staged, this.view.state.doc) });
  }

  // Drawn again only when a tab, the active one or a "model is writing here" mark changed:
  // the model's statuses ask for this on every frame of a stream.
  render() {
    const tabs = [...this.tabs.keys()].map((path) => ({
      path, active: path === this.active, extraClass: this.regions.get(path) ? "busy" : "",
    }));
    const drawn = JSON.stringify(tabs);
    if (drawn === this.drawn && this.tabBar.childElementCount === tabs.length) return;
    this.drawn = drawn;
    renderTabBar(this.tabBar, tabs, { onPick: (path) => this.picked(path), onClose: (path) => this.close(path) });
    this.onTabsChanged();
  }

  picked(path) {
    if (path !== this.active) this.onByHand();
    this.activate(path);
  }

  // The watchdog's findings for `path` changed: the open editor shows them now; another
  // tab's are drawn when it is next shown (activate).
  showDiagnostics(path) {
    if (!this.diagnostics || path !== this.active || !this.view) return;
    this.view.dispatch(this.diagnostics.spec(path, this.view.state));
  }

  // Open `path` with the cursor at the start of `line` (clamped into the file), in the middle
  // of the view: a finding's location clicked in the transcript.
  goToLine(path, line) {
    this.open(path);
    if (this.active !== path || !this.view) return;
    putCursorOnLine(this.view, line);
  }

  // Bring a line (or a position) of the active file into view, unless it is well in sight.
  revealLine(line) {
    if (this.view) revealLine(this.view, line);
  }

  revealIndex(index) {
    if (this.view) revealLine(this.view, lineOfIndex(this.view, index));
  }
}
