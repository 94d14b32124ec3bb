// Code runs in the live session (docs/protocol.md, code runs): the Run, Run tests and Stop
// buttons over the editor, Ctrl+Enter (Cmd+Enter on a Mac) for the open file, and the run
// panel under the editor that every participant sees the same run in, live: who started it,
// its output (stdout and stderr apart, in the order they came), a line for the program's
// stdin, and at the end how it ended and why. The room runs one thing at a time; run events
// are not replayed, so a page that joins mid-run picks the run up from its next output.
// When the security watchdog has high-severity findings in the files, the server answers a run
// with `error` run_needs_confirmation: a dialog lists them, and "Run anyway" sends the same run
// again with `confirm: true`.
import { FRAME_CHARS, OutputQueue, OutputView } from "./run_output.js";
import { element } from "./dom.js";
import { runCommand, runFigures } from "./run_words.js";
import { findingMessage } from "./diagnostics.js";
import { DRIVER_ROLES, ERROR_CODE, MESSAGE } from "../protocol.js";

// The events of a run, all ephemeral: they carry the room's current seq and are not replayed.
// How long a sent `run` waits for its run.started (or an error) before the buttons come back.
const START_WAIT_MS = 5000;
// Errors that answer a run message whatever else is going on.
const RUN_ERRORS = new Set([ERROR_CODE.RUN_BUSY, ERROR_CODE.NO_SUCH_RUN]);
// The server records a run's end just after announcing it: the history panel is asked again
// (up to RECORD_TRIES times, RECORD_RETRY_MS apart) until it shows the run over.
const RECORD_TRIES = 5;
const RECORD_RETRY_MS = 700;
const WATCHING = "The owner and collaborators run code; you see their runs here";
const CONFIRM_LISTED = 20; // findings listed in the dialog; the rest are counted

const isMac = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
export const RUN_KEY = isMac ? "⌘+Enter" : "Ctrl+Enter";

export class RunPanel {
  // toolbar: the buttons over the editor; panel: the run panel (both [data-run] inside);
  // send(message) -> false when the connection is down; activePath() -> the open file or null;
  // toast(message, kind); peerClass(username) -> the class of a person's colour;
  // requestFrame(); history: the history panel; refreshHistory(): ask it again soon; onDone():
  // the program's input line gave the keyboard back; confirm: the <dialog> that asks before
  // running code with high-severity findings.
  constructor(toolbar, panel, {
    send, activePath, toast, peerClass, requestFrame, history, refreshHistory, onDone, confirm = null,
  }) {
    const field = (root, name) => root.querySelector(`[data-run="${name}"]`);
    this.panel = panel;
    this.buttons = { run: field(toolbar, "run"), tests: field(toolbar, "tests"), stop: field(toolbar, "stop") };
    this.fields = {
      command: field(panel, "command"), by: field(panel, "by"), state: field(panel, "state"),
      stop: field(panel, "stop"), end: field(panel, "end"), form: field(panel, "input"),
    };
    this.input = this.fields.form.querySelector("input");
    this.queue = new OutputQueue();
    this.view = new OutputView(field(panel, "scroll"), field(panel, "output"));
    Object.assign(this, { send, activePath, toast, peerClass, requestFrame, refreshHistory, onDone });
    this.record = null; // {id, tries}: a run whose end the history panel does not show yet
    this.recordTimer = 0;
    if (history) history.addEventListener("htmx:afterSwap", () => this.checkRecord(history));
    this.canRun = false; // an owner or collaborator (hello)
    this.run = null; // the run shown: {id, command, path, tests, by, model, turn, done, lost, end}
    this.pending = false; // a `run` was sent, its run.started has not come yet
    this.pendingTimer = 0;
    this.stopping = false;
    this.buttons.run.addEventListener("click", () => this.runFile());
    this.buttons.tests.addEventListener("click", () => this.runTests());
    for (const button of [this.buttons.stop, this.fields.stop]) button.addEventListener("click", () => this.stop());
    field(panel, "hide").addEventListener("click", () => { panel.hidden = true; });
    this.fields.form.addEventListener("submit", (event) => { event.preventDefault(); this.sendLine(); });
    this.lastRequest = null; // the last `run` sent: "Run anyway" sends it again, confirmed
    this.confirm = confirm;
    this.confirming = null; // the run message the dialog asks about
    if (confirm) confirm.addEventListener("close", () => this.confirmed(confirm.returnValue === "run"));
    this.render();
  }

  // Ctrl+Enter (Cmd+Enter) anywhere but a text field (the prompt box, the input line) runs
  // the open file, in the editor too: caught before CodeMirror, whose Mod-Enter inserts a line.
  wireShortcut(target) {
    target.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.isComposing) return;
      const target = event.target instanceof Element ? event.target : null;
      if (!this.canRun || (target && target.closest("input, textarea, select"))) return;
      event.preventDefault();
      event.stopPropagation();
      this.runFile();
    }, true);
  }

  joined(role) {
    this.canRun = DRIVER_ROLES.has(role);
    this.fields.form.hidden = !this.canRun;
    this.render();
  }

  get active() {
    return this.run !== null && !this.run.done && !this.run.lost;
  }

  runFile() {
    const path = this.activePath();
    if (!path) {
      this.toast("Open the file to run first", "warn");
      return;
    }
    this.request({ type: MESSAGE.RUN, path });
  }

  runTests() {
    this.request({ type: MESSAGE.RUN, tests: true });
  }

  request(message) {
    if (!this.canRun || this.active || this.pending) return;
    if (this.confirm && this.confirm.open) return; // the dialog asks about a run already
    if (!this.send(message)) {
      this.toast("Not run: the connection is down, retrying", "error");
      return;
    }
    this.lastRequest = message;
    this.pending = true;
    clearTimeout(this.pendingTimer);
    this.pendingTimer = setTimeout(() => this.settle(), START_WAIT_MS);
    this.render();
  }

  settle() {
    clearTimeout(this.pendingTimer);
    this.pending = false;
    this.render();
  }

  stop() {
    if (!this.active || !this.canRun || this.stopping) return;
    if (!this.send({ type: MESSAGE.RUN_STOP, run: this.run.id })) {
      this.toast("Not stopped: the connection is down, retrying", "error");
      return;
    }
    this.stopping = true;
    this.render();
  }

  // Enter in the input line: the line goes to the program; the room echoes it to everyone
  // (run.output, stream "stdin"), where it shows in the output as typed.
  sendLine() {
    if (!this.active || !this.canRun) return;
    const text = `${this.input.value}\n`;
    if (!this.send({ type: MESSAGE.RUN_INPUT, run: this.run.id, text })) {
      this.toast("Not sent: the connection is down, retrying", "error");
      return;
    }
    this.input.value = "";
  }

  // run.started: the panel shows the new run (the last one's output goes; History keeps it).
  // A run of the model (`model`: its run tool, or the tests the IDE runs after its round) is
  // no run this page asked for: a `run` it sent meanwhile is answered run_busy.
  started({ run, path, tests, by, command, model, turn }) {
    const mine = this.pending && model !== true;
    this.settle();
    this.begin({
      id: run, command: String(command || ""), path: path || "", tests: tests === true, by: by || "",
      model: model === true, turn: String(turn || ""),
    });
    if (mine && this.canRun) this.input.focus({ preventScroll: true });
  }

  begin(run) {
    this.run = { ...run, done: false, lost: false };
    this.stopping = false;
    this.queue.clear();
    this.view.clear();
    this.fields.command.textContent = runCommand(run);
    this.fields.command.title = runCommand(run);
    this.fields.by.replaceChildren(...this.runner(run));
    this.panel.classList.toggle("model-run", run.model === true);
    this.fields.end.hidden = true;
    this.fields.end.replaceChildren();
    this.panel.hidden = false;
    this.render();
  }

  // Who ran it: "by Ada"; for a run of the model, an "AI" badge and "run by the model for
  // Ada's turn" (`by` is the turn's author).
  runner({ by, model }) {
    const who = () => {
      const ref = element("span", `person-ref ${this.peerClass(by)}`.trim(), by);
      ref.title = model ? `The turn of ${by}` : `Started by ${by}`;
      return ref;
    };
    if (!model) return by ? ["by ", who()] : [];
    const badge = element("span", "badge run-model", "AI");
    badge.title = "The model ran this (its run tool, or the tests after its round)";
    const words = element("span", "run-model-words", "run by the model");
    if (by) words.append(" for ", who(), "'s turn");
    return [badge, " ", words];
  }

  // A run this page has not seen start (it joined mid-run) is picked up from its output.
  current(id) {
    if (!this.run || this.run.id !== id) {
      this.begin({ id, command: "", path: "", tests: false, by: "", model: false, turn: "" });
    }
    return this.run;
  }

  output({ run, stream, text }) {
    const shown = this.current(run);
    if (shown.done) return;
    if (shown.lost) {
      shown.lost = false; // it is still going: the connection came back in time
      this.render();
    }
    this.queue.push(stream === "stderr" ? "stderr" : stream === "stdin" ? "stdin" : "stdout", String(text || ""));
    this.requestFrame();
  }

  finished(event) {
    const run = this.current(event.run);
    if (run.done) return;
    run.done = true;
    run.end = event;
    this.stopping = false;
    this.requestFrame(); // the end line goes after the output still queued
    this.render();
    if (document.activeElement === this.input) this.onDone();
    this.record = { id: run.id, tries: RECORD_TRIES };
    this.refreshHistory();
  }

  checkRecord(history) {
    const record = this.record;
    if (!record) return;
    const entry = history.querySelector(`.history-run[data-run="${CSS.escape(record.id)}"]`);
    record.tries -= 1;
    if ((entry && !entry.classList.contains("status-running")) || record.tries <= 0) {
      this.record = null;
      return;
    }
    clearTimeout(this.recordTimer);
    this.recordTimer = setTimeout(() => this.refreshHistory(), RECORD_RETRY_MS);
  }

  // An `error` the server answered a run message with: true when it was about a run (the
  // session shows it and leaves the prompt box alone).
  refused(event) {
    const ours = RUN_ERRORS.has(event.code) || event.ref === MESSAGE.RUN;
    if (!ours && !this.pending && !this.stopping) return false;
    this.stopping = false;
    this.settle();
    return true;
  }

  // error run_needs_confirmation: the watchdog found high-severity flaws in the files. The
  // dialog lists them (path:line, what is wrong); "Run anyway" sends the run again with
  // `confirm: true`, Cancel (or Esc) runs nothing. False for any other event.
  needsConfirmation(event) {
    if (event.code !== ERROR_CODE.RUN_NEEDS_CONFIRMATION) return false;
    this.settle();
    const ref = event.ref && typeof event.ref === "object" ? event.ref : {};
    const asked = this.lastRequest || { type: MESSAGE.RUN, ...(ref.tests ? { tests: true } : { path: ref.path }) };
    if (!this.confirm) { // no dialog on this page: the server's message says it all
      this.toast(event.message || "The watchdog found high-severity problems: not run", "error");
      return true;
    }
    this.confirming = { ...asked, confirm: true };
    const findings = Array.isArray(ref.findings) ? ref.findings : [];
    const field = (name) => this.confirm.querySelector(`[data-confirm="${name}"]`);
    const what = asked.tests ? "the tests" : asked.path || "the file";
    field("intro").textContent = findings.length
      ? `The watchdog found ${findings.length} high-severity problem${findings.length === 1 ? "" : "s"} `
        + `in the code. Run ${what} anyway?`
      : String(event.message || "The watchdog found high-severity problems in the code.");
    field("list").replaceChildren(...findings.slice(0, CONFIRM_LISTED).map((finding) => {
      const item = element("li", "run-confirm-finding");
      item.append(element("code", "run-confirm-place", `${finding.path}:${finding.line}`), " ",
        element("span", "run-confirm-message", findingMessage(finding)));
      if (finding.rule) item.append(" ", element("span", "run-confirm-rule", String(finding.rule)));
      return item;
    }));
    if (findings.length > CONFIRM_LISTED) {
      field("list").append(element("li", "hint", `and ${findings.length - CONFIRM_LISTED} more`));
    }
    this.confirm.returnValue = "";
    if (!this.confirm.open) this.confirm.showModal();
    field("cancel").focus(); // the safe answer is the default one
    return true;
  }

  // The dialog closed: run anyway, or not at all.
  confirmed(runAnyway) {
    const message = this.confirming;
    this.confirming = null;
    if (runAnyway && message) this.request(message);
  }

  // The connection went: run events are not replayed, so the end of a run may never come.
  // The buttons come back (the server answers run_busy if it still goes); output that comes
  // after a reconnect picks the run up again.
  disconnected() {
    this.pending = false;
    clearTimeout(this.pendingTimer);
    if (this.active) this.run.lost = true;
    this.stopping = false;
    this.render();
  }

  flush() {
    if (this.queue.dropped) {
      this.view.skipped(this.queue.dropped);
      this.queue.dropped = 0;
    }
    for (const { stream, text } of this.queue.take(FRAME_CHARS)) this.view.append(stream, text);
    if (!this.queue.empty) {
      this.requestFrame(); // the rest next frame
      return;
    }
    if (this.run && this.run.done && this.fields.end.hidden) this.showEnd(this.run.end);
  }

  showEnd({ status, message, truncated, sandboxed, error }) {
    const end = this.fields.end;
    end.dataset.status = status;
    end.replaceChildren(element("span", `badge outcome run-status ${status}`, String(status).replaceAll("_", " ")));
    end.append(element("span", "run-figures", runFigures(this.run.end)));
    if (message) end.append(element("span", "run-message", message));
    if (truncated) end.append(element("span", "badge run-cut", "output cut at the limit"));
    if (sandboxed === false && !error) {
      const warn = element("span", "badge run-unsandboxed", "not sandboxed");
      warn.title = "This server ran the code without the sandbox (an admin allowed it)";
      end.append(warn);
    }
    end.hidden = false;
  }

  // Buttons and labels follow the state: Stop instead of Run while a run goes.
  render() {
    const { run, tests, stop } = this.buttons;
    const active = this.active;
    const busy = active || this.pending;
    run.hidden = active;
    tests.hidden = active;
    stop.hidden = !active;
    run.disabled = !this.canRun || busy;
    tests.disabled = !this.canRun || busy;
    const stoppable = active && this.canRun && !this.stopping;
    stop.disabled = !stoppable;
    this.fields.stop.disabled = !stoppable;
    this.fields.stop.hidden = !active;
    this.fields.stop.textContent = this.stopping ? "Stopping…" : "Stop";
    run.title = this.canRun ? `Run the open file (${RUN_KEY})` : WATCHING;
    tests.title = this.canRun ? "Run the workspace's tests (pytest)" : WATCHING;
    this.input.disabled = !active || !this.canRun;
    this.panel.classList.toggle("running", active);
    const state = this.fields.state;
    if (!this.run || this.run.done) state.textContent = "";
    else if (this.run.lost) state.textContent = "connection lost: how it ended shows in History";
    else state.textContent = this.stopping ? "stopping…" : "running…";
  }
}
