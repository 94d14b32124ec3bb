// Follow the driver: the view goes where the model writes (its file, the line it is on) and,
// while the model is idle, where a driver's cursor is (their Yjs awareness `file` and
// `cursor`). Doing something by hand in the editor (scrolling, typing, picking another file)
// stops following; "Follow again" goes back to where the action is.
//
// Modes: "auto" (the default: the model's file opens and the view follows it unless the
// person is busy in the editor), "follow" (always, and the drivers' cursors too), "manual"
// (nothing moves the view but the person).
//
// Following is only ever the person's choice: the Follow button, or opening a link that asks
// for it (`?follow=1`, the presenter link shared with an audience). The page's address says
// whether the person follows, so a reload keeps it; nothing else (presenter mode included)
// turns it on.
import * as Y from "yjs";
import { DRIVER_ROLES } from "../protocol.js";

const LABELS = { auto: "Follow", follow: "Stop following", manual: "Follow" };
const PARAM = "follow";

// Does the page's address ask to follow (a shared presenter link, or a reload while following)?
export function followAsked(location = window.location) {
  return new URL(location.href).searchParams.get(PARAM) === "1";
}

// The address says whether the person follows, so that a reload keeps it.
function rememberFollowing(on) {
  const url = new URL(window.location.href);
  if (on) url.searchParams.set(PARAM, "1");
  else url.searchParams.delete(PARAM);
  if (url.href !== window.location.href) history.replaceState(history.state, "", url);
}

export class FollowMode {
  // button: the toggle; who: where it says whom the view follows; tabs: EditorTabs;
  // awareness: the Yjs peer's; files: the document's Y.Map of files;
  // modelWriting(): is a turn running now? onDriverAt(path): a driver's page said it has
  // `path` open (landing.js).
  constructor({ button, who, tabs, awareness, files, modelWriting, onDriverAt = () => {} }) {
    this.button = button;
    this.who = who;
    this.tabs = tabs;
    this.awareness = awareness;
    this.files = files;
    this.modelWriting = modelWriting;
    this.onDriverAt = onDriverAt;
    this.mode = "auto";
    this.stoppedByHand = false;
    this.target = null; // where the action was last: {kind: "model"|"driver", path, line?, client?}
    this.seen = new Map(); // client id -> its file and cursor as last seen
    this.drawn = null;
    button.addEventListener("click", () => this.set(this.mode === "follow" ? "manual" : "follow"));
    awareness.on("change", ({ added, updated, removed }) => this.awarenessChanged(added.concat(updated), removed));
    this.render();
  }

  // The server replaced the document (session.js documentReplaced): drivers' cursors are
  // looked up in the new one's files (their pages tell them again once they adopt it).
  rebind(files) {
    this.files = files;
  }

  get following() {
    return this.mode === "follow";
  }

  set(mode) {
    this.mode = mode;
    this.stoppedByHand = false;
    rememberFollowing(mode === "follow");
    this.render();
    if (mode === "follow") this.go();
  }

  // The person scrolled, typed or picked another file themselves.
  byHand() {
    if (this.mode !== "follow") return;
    this.mode = "manual";
    this.stoppedByHand = true;
    rememberFollowing(false);
    this.render();
  }

  // May the view switch to `path`, a file the model writes?
  mayFollowTo(path) {
    if (this.mode === "follow") return true;
    if (this.mode === "manual") return this.tabs.active === null;
    return this.tabs.mayFollowTo(path);
  }

  // May the view scroll to the model's line?
  mayScroll() {
    if (this.mode === "auto") return !this.tabs.userBusy();
    return this.mode === "follow";
  }

  // The model writes `path`, up to `line` (null: not known yet).
  modelAt(path, line) {
    this.target = { kind: "model", path, line };
    this.render();
  }

  awarenessChanged(changed, removed) {
    const own = this.awareness.doc.clientID;
    for (const client of removed) this.seen.delete(client);
    const states = this.awareness.getStates();
    for (const client of changed) {
      const state = states.get(client);
      // Only a driver's cursor is followed (a viewer's, or one that names no role, is not),
      // and only a file they chose: not one their page just landed on (landing.js).
      if (client === own || !state || !state.user || !DRIVER_ROLES.has(state.user.role)) continue;
      const where = JSON.stringify([state.file ?? null, state.cursor ?? null, Boolean(state.landing)]);
      if (this.seen.get(client) === where) continue; // their name or colour changed, not their place
      this.seen.set(client, where);
      if (typeof state.file !== "string" || !state.file || state.landing) continue;
      this.target = { kind: "driver", path: state.file, client, name: state.user.name };
      this.onDriverAt(state.file);
      if (this.mode === "follow" && !this.modelWriting()) this.go();
      else this.render();
    }
  }

  // To where the action is: the model's file and line, or the driver's file and cursor.
  go() {
    const target = this.target;
    this.render();
    if (!target || (!this.tabs.has(target.path) && !(this.files.get(target.path) instanceof Y.Text))) return;
    if (this.tabs.active !== target.path) this.tabs.open(target.path, { focus: false });
    if (this.tabs.active !== target.path) return; // not built yet: the model's next status comes
    if (target.kind === "model") {
      if (typeof target.line === "number") this.tabs.revealLine(target.line);
      return;
    }
    const index = this.cursorIndex(target);
    if (index !== null) this.tabs.revealIndex(index);
  }

  // Where the driver's caret is in the file they have open, or null.
  cursorIndex({ client, path }) {
    const state = this.awareness.getStates().get(client);
    const head = state && state.cursor && state.cursor.head;
    if (!head) return null;
    try {
      const at = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(head), this.files.doc);
      return at && at.type === this.files.get(path) ? at.index : null;
    } catch {
      return null; // another browser's awareness: a malformed one is not followed
    }
  }

  // Drawn only when something shown changed: the model's statuses call this many times a second.
  render() {
    const following = this.mode === "follow";
    const label = this.stoppedByHand ? "Follow again" : LABELS[this.mode];
    const who = following ? this.whom() : "";
    const drawn = `${label}|${who}`;
    if (drawn === this.drawn) return;
    this.drawn = drawn;
    this.button.textContent = label;
    this.button.setAttribute("aria-pressed", String(following));
    this.button.classList.toggle("again", this.stoppedByHand);
    this.button.title = following
      ? "Stop following: the view stays where you put it"
      : "Follow the driver: the view goes where the model writes, or where a driver's cursor is";
    this.who.textContent = who;
  }

  whom() {
    if (!this.target) return "following";
    return this.target.kind === "model" ? "following the model" : `following ${this.target.name}`;
  }
}
