// The live pairing page: wires the socket, the Yjs peer, the editor tabs, the prompt box,
// the transcript, the status bar and the panels together, and follows the model around.
import { keepAcrossRedraws } from "./history_diffs.js";
import * as Y from "yjs";
import { fromBase64 } from "lib0/buffer";
import { FrameLoop } from "./frame.js";
import { SessionConnection } from "./connection.js";
import { YjsProvider } from "./provider.js";
import { EditorTabs } from "./tabs.js";
import { LiveRegions } from "./decorations.js";
import { PromptBox } from "./prompt.js";
import { inlinePrompt } from "./inline_prompt.js";
import { Transcript } from "./transcript.js";
import { StatusBar } from "./status.js";
import { Toasts, userName } from "./notices.js";
import { PeerColours, PresenceList, cursorColours } from "./peers.js";
import { FollowMode, followAsked } from "./follow.js";
import { PresenterMode } from "./presenter.js";
import { Landing, SavedTabs } from "./landing.js";
import { FileTree } from "./tree.js";
import { RunPanel } from "./run_panel.js";
import { RevertControls } from "./revert.js";
import { HunkReview } from "./hunk_review.js";
import { CheckpointControls } from "./checkpoints.js";
import { QueueList } from "./queue_list.js";
import { SETTINGS_CHANGED } from "./settings_changed.js";
import { PromptContext } from "./session_context.js";
import { mentionsIn } from "./mentions.js";
import { GuardDiagnostics, findingMessage, findingPlace } from "./diagnostics.js";
import { ERROR_CODE, EVENT, MESSAGE } from "../protocol.js";
import { explainEdit, followEdit, paintRegions } from "./session_edits.js";
import { EditSteerControl, showEditSteered } from "./edit_steer.js";
import { addressedPath, showPolicy, wirePage } from "./session_wire.js";
import { showModel } from "./model_picker.js";

const RUN_REFRESH_MS = 800;
// A catch-up's replayed turns come in one burst: the history panel redraws once, this long
// after the last of them.
const CAUGHT_UP_MS = 50;
const REVERT_ERRORS = new Set([ERROR_CODE.REVERT_UNAVAILABLE, ERROR_CODE.RESTORE_UNAVAILABLE]);

class LiveSession {
  constructor(root) {
    const data = root.dataset;
    this.canDrive = data.canDrive === "true";
    this.tree = new FileTree(data.treeUrl);
    this.running = null; // id of the turn the model is writing, if any
    this.joinedSeq = null; // the room's seq at our hello: turn events up to it are a replay
    this.me = null; // {name, role} from hello
    this.joins = null; // the sockets that joined the room, as the last presence counted them
    this.loop = new FrameLoop();
    this.doc = new Y.Doc();
    this.connection = new SessionConnection(data.wsPath, {
      onEvent: (event) => this.handle(event),
      onBinary: (bytes) => this.provider.receive(bytes),
      onState: (state, retryMs) => this.connectionState(state, retryMs),
      onRtt: (ms) => this.status.rtt(ms),
    });
    this.provider = new YjsProvider(this.doc, (bytes) => this.connection.sendBinary(bytes), this.loop);
    this.regions = new LiveRegions();
    this.diagnostics = new GuardDiagnostics();
    this.tabs = new EditorTabs({
      tabBar: root.querySelector("#tabs"), host: root.querySelector("#editor"),
      fileLabel: root.querySelector("[data-field=file]"), files: this.doc.getMap("files"),
      awareness: this.provider.awareness, canEdit: data.canEdit === "true", regions: this.regions,
      diagnostics: this.diagnostics, onByHand: () => this.byHand(), requestFrame: () => this.loop.request(),
      hunkMarks: (path) => (this.hunks ? this.hunks.gutter(path) : []),
      // Ctrl+K: a prompt about the selected lines (a driver's), with the prompt box's effort.
      inlinePrompt: this.canDrive
        ? (path) => inlinePrompt(path, (intent, text, range) => this.send(intent, text, this.prompt?.effort.value, range))
        : null,
    });
    this.colours = new PeerColours();
    this.presence = new PresenceList(
      document.getElementById("presence"), document.getElementById("presence-more"), this.provider.awareness, this.colours,
    );
    this.follow = new FollowMode({
      button: root.querySelector("#follow"), who: root.querySelector("[data-field=follow]"), tabs: this.tabs,
      awareness: this.provider.awareness, files: this.doc.getMap("files"), modelWriting: () => this.running !== null,
      onDriverAt: (path) => this.landing.driverAt(path),
    });
    this.landing = new Landing({
      tabs: this.tabs, saved: new SavedTabs(data.workspace, data.user), lastFile: data.lastFile,
      exists: (path) => this.doc.getMap("files").get(path) instanceof Y.Text,
      provisional: (on) => this.provider.awareness.setLocalStateField("landing", on),
    });
    this.presenter = new PresenterMode(document.getElementById("present"), {
      onChange: (on) => this.presenting(on),
    });
    this.panels(root);
    this.drawEachFrame();
  }

  // The transcript, the status bar, the toasts, the run panel, the revert buttons, the prompt.
  panels(root) {
    const send = (message) => this.connection.send(message);
    const toast = (message, kind) => this.toasts.show(message, kind);
    const files = this.doc.getMap("files");
    this.hunks = new HunkReview({ send, toast, canDrive: () => this.canDrive, tabs: this.tabs, files });
    this.transcript = new Transcript(root.querySelector("#transcript"), {
      onBlockBox: (box, turn, block) => this.hunks.attach(box, turn, block),
      files: this.doc.getMap("files"), requestFrame: () => this.loop.request(), onOpenPath: (path) => this.tabs.open(path),
      onOpenLine: (path, line) => this.openAt(path, line), peerClass: (name) => this.colours.classOf(name),
    });
    this.status = new StatusBar(root.querySelector(".statusbar"), { requestFrame: () => this.loop.request() });
    this.toasts = new Toasts(document.getElementById("toasts"));
    this.runs = new RunPanel(root.querySelector("#run-controls"), root.querySelector("#run-panel"), {
      send: (message) => this.connection.send(message), activePath: () => this.tabs.active,
      toast: (message, kind) => this.toasts.show(message, kind), peerClass: (name) => this.colours.classOf(name),
      requestFrame: () => this.loop.request(), history: document.getElementById("history"),
      refreshHistory: () => this.historyChangedSoon(),
      onDone: () => this.tabs.view && this.tabs.view.focus(), confirm: document.getElementById("run-confirm"),
    });
    const history = document.getElementById("history");
    if (history) keepAcrossRedraws(history);
    this.reverts = new RevertControls({ dialog: document.getElementById("revert-confirm"), send, toast });
    this.checkpoints = new CheckpointControls({ send, toast, refresh: () => this.historyChanged() });
    this.queue = new QueueList(root.querySelector("#queue"), { send, toast, canDrive: this.canDrive });
    this.editSteer = new EditSteerControl(root.querySelector("#edit-steer"), { send, tabs: this.tabs });
    this.editSteer.wire(root.querySelector("#editor"));
    const form = root.querySelector("#prompt");
    this.prompt = form && this.canDrive
      ? new PromptBox(form, { onSend: (intent, text, effort) => this.send(intent, text, effort), onStop: () => this.stop() })
      : null;
    this.context = this.prompt
      ? new PromptContext(this.prompt, root, { send, files: () => this.doc.getMap("files"), tabs: this.tabs })
      : null;
  }

  // What is drawn once a frame. Order matters. The panels first: the transcript reads the
  // layout to stay scrolled to the end, which is cheap before the editor changes and costly
  // after. Then the document, then the decorations that point into it.
  // The model's region is staged before the document updates and rides on the editor
  // transaction that applies them (one editor update a frame, not two); if no update
  // comes this frame, it goes alone after.
  drawEachFrame() {
    this.loop.add(() => this.transcript.flush());
    this.loop.add(() => this.status.flush());
    this.loop.add(() => this.runs.flush());
    this.loop.add(() => paintRegions(this.regions, this.tabs, this.follow));
    this.loop.add(() => this.provider.flush());
    this.loop.add(() => this.tabs.applyStagedRegion());
  }

  start() {
    this.provider.onSynced = () => this.openInitial();
    this.filesObserver = (event, transaction) => {
      // A file the model (or someone) created or removed: the server-rendered tree follows.
      if (this.provider.synced && transaction.origin === this.provider) this.tree.refresh();
      if (this.context) this.context.changed();
    };
    this.doc.getMap("files").observe(this.filesObserver);
    this.presenter.start();
    document.addEventListener("keydown", (event) => this.hunks.key(event)); // Alt+Y / Alt+N: hunk_review.js
    if (followAsked()) this.follow.set("follow"); // a shared presenter link, or a reload while following
    this.connection.connect();
  }

  // Presenter mode: large type (the editor measures its lines again). Whom the person
  // follows is theirs to say: entering it does not change it.
  presenting(on) {
    this.tabs.setLargeType(on);
  }

  // The document is here: the person's own tabs, and a file in front (landing.js); a
  // driver's place that came before the files, when following.
  openInitial() {
    this.landing.land(addressedPath());
    if (this.follow.following) this.follow.go();
  }

  // The person scrolled, typed or picked a file themselves.
  byHand() {
    this.follow.byHand();
    this.landing.byHand();
  }

  connectionState(state, retryMs) {
    this.status.connection(state, retryMs);
    if (state === "refused") this.toasts.show("You no longer have access to this workspace: reload the page", "error");
    if (state !== "offline" && state !== "refused") return;
    this.provider.disconnected();
    this.runs.disconnected();
    if (this.prompt) this.prompt.release(); // a prompt in flight may be lost: it can go again
  }

  replayed(event) {
    return typeof event.seq === "number" && this.joinedSeq !== null && event.seq <= this.joinedSeq;
  }

  handle(event) {
    if (this.context && this.context.handle(event)) return undefined; // the prompt's context strip, its @ list
    switch (event.type) {
      case EVENT.HELLO: return this.hello(event);
      case EVENT.TURN_STARTED: return this.turnStarted(event);
      case EVENT.TURN_DELTA:
        this.status.delta(event, this.replayed(event));
        return this.loop.request();
      case EVENT.TURN_PROSE:
        this.transcript.prose(event);
        return this.loop.request();
      case EVENT.EDIT_STATUS: return this.editStatus(event);
      case EVENT.EDIT_REVIEWED: return this.hunks.reviewed(event);
      case EVENT.TURN_CONTEXT: return this.transcript.context(event);
      case EVENT.TURN_ROUND:
        this.transcript.round(event);
        return this.loop.request();
      case EVENT.TURN_RAN: // a run of the model ended: a line in its turn
        this.transcript.ran(event);
        return this.loop.request();
      case EVENT.TURN_FINISHED: return this.turnFinished(event);
      case EVENT.PRESENCE: return this.presenceChanged(event.participants, event.joined);
      case EVENT.WORKSPACE_SETTINGS: // someone changed the workspace's settings: each control follows
        return document.dispatchEvent(new CustomEvent(SETTINGS_CHANGED, { detail: event }));
      case EVENT.CHECKPOINT_RESTORED: case EVENT.CHECKPOINT_CREATED:
        return this.checkpoints.told(event, this.replayed(event));
      case EVENT.ERROR:
        if (this.runs.needsConfirmation(event) || this.checkpoints.refused(event)) return undefined;
        if (this.runs.refused(event)) return this.toasts.show(`${event.message || event.code}`, "error");
        return this.refused(event);
      case EVENT.RESYNC: return this.resync();
      case EVENT.DOCUMENT_REPLACED: return this.documentReplaced(event);
      case EVENT.POLICY:
        this.editSteer.policy(event);
        return showPolicy(event);
      case EVENT.EDIT_STEER: return this.editSteer.state(event);
      case EVENT.TURN_EDIT_STEERED:
        showEditSteered(this.transcript, event);
        return this.loop.request();
      case EVENT.MODEL: return showModel(event);
      case EVENT.QUEUE: return this.queue.show(event);
      case EVENT.TURN_STEERED: return this.turnSteered(event);
      // Sent once the record says so: the Turns panel drawn now shows it (Revert / Undo revert).
      case EVENT.TURN_REVERTED:
      case EVENT.TURN_RESTORED:
      // A turn's record is stored after its turn.finished: its row gets its files and diff.
      case EVENT.HISTORY_CHANGED: return this.historyChanged();
      case EVENT.GUARD_FINDING: return this.guardFinding(event);
      case EVENT.GUARD_DIAGNOSTICS:
        if (this.diagnostics.set(event)) this.tabs.showDiagnostics(event.path);
        return undefined;
      case EVENT.RUN_STARTED: return this.runs.started(event);
      case EVENT.RUN_OUTPUT: return this.runs.output(event);
      case EVENT.RUN_FINISHED: return this.runs.finished(event);
      case EVENT.TURN_QUEUED:
        if (this.prompt) this.prompt.taken(event.prompt);
        return this.toasts.show(`Queued (${event.position} waiting): ${String(event.prompt || "").slice(0, 60)}`, "ok");
      default: return undefined; // pong (handled by the connection) and newer event types
    }
  }

  // The watchdog flagged or halted what the model wrote: in the transcript under its turn; a
  // halt as it happens is also a toast (a replayed one is history).
  guardFinding(event) {
    this.transcript.finding(event);
    if (event.action === "halted" && !this.replayed(event)) {
      this.toasts.show(`Watchdog halted the model: ${findingPlace(event)} — ${findingMessage(event)}`, "warn");
    }
    this.loop.request();
  }

  // A finding's place clicked: that file, at that line.
  openAt(path, line) {
    if (path !== this.tabs.active) this.follow.byHand();
    this.landing.byHand();
    this.tabs.filePicked();
    this.tabs.goToLine(path, line);
  }

  hello(event) {
    // The server sends every file's current diagnostics just after hello: those held go.
    this.diagnostics.clear();
    if (this.tabs.active) this.tabs.showDiagnostics(this.tabs.active);
    this.me = { name: userName(event.user), role: event.role };
    this.presence.me = this.me.name;
    this.runs.joined(event.role);
    this.editSteer.connected(event.user);
    this.provider.connected();
    this.joinedSeq = typeof event.seq === "number" ? event.seq : null;
    // The document's generation, named on reconnects: a newer one comes as document.replaced.
    if (this.connection.generation === null && typeof event.generation === "number") {
      this.connection.generation = event.generation;
    }
    this.setRunning(event.turn || null);
  }

  // Who is here. This page's own entry gives its colour to its cursor (Yjs awareness
  // `user`); when someone came (`joined` moved: a join told with a leave keeps the counts),
  // a driver's page tells its file and cursor again, so the newcomer sees them before they
  // move (the server relays awareness, it does not keep it).
  presenceChanged(participants, joined) {
    this.presence.update(participants);
    const mine = this.presence.mine();
    if (mine && this.me) {
      const user = { name: this.me.name, ...cursorColours(mine.colour), id: mine.user_id, role: this.me.role };
      const current = this.provider.awareness.getLocalState();
      if (JSON.stringify(current && current.user) !== JSON.stringify(user)) {
        this.provider.awareness.setLocalStateField("user", user);
      }
    }
    if (this.joins !== null && joined !== this.joins && this.tabs.canEdit) this.provider.announce();
    this.joins = joined;
  }

  turnStarted(event) {
    this.setRunning(event.turn);
    this.transcript.started(event);
    this.status.started(event, this.replayed(event));
    if (this.prompt) this.prompt.taken(event.prompt);
    this.loop.request();
    document.body.dispatchEvent(new CustomEvent("spark:turn-started", { detail: event }));
  }

  // The re-prompt of a steer went out: its latency (steer_ms) for the status bar and the turn.
  turnSteered(event) {
    this.status.steered(event);
    this.transcript.steered(event);
    this.loop.request();
    document.body.dispatchEvent(new CustomEvent("spark:turn-steered", { detail: event }));
  }

  // The server refused something this page sent (a prompt too long, too many messages…):
  // the prompt box keeps its text.
  refused(event) {
    if (event.code === ERROR_CODE.TOO_LARGE && event.ref === "yjs") {
      // The server never took that change (a paste past the size of one update), but this
      // page's copy holds it, and every later change builds on it: load the document again.
      this.toasts.show(`${event.message}: the document reloads without that change`, "error");
      setTimeout(() => window.location.reload(), 2500);
      return;
    }
    if (this.hunks.refused(event)) return; // a Keep / Undo refused: its button comes back
    this.toasts.show(`${event.message || event.code}`, "error");
    if (REVERT_ERRORS.has(event.code)) {
      this.historyChanged(); // its button comes back as it was
      return;
    }
    this.status.refused();
    if (this.prompt) this.prompt.release();
  }

  // A block's status: its chip, what the person should know, the file the model writes.
  editStatus(event) {
    this.regions.update(event);
    this.transcript.blockStatus(event);
    this.hunks.status(event);
    explainEdit(this.toasts, event);
    followEdit(event, {
      tabs: this.tabs, landing: this.landing, follow: this.follow, running: this.running, replayed: this.replayed(event),
    });
    this.loop.request();
  }

  turnFinished(event) {
    if (this.running === event.turn) this.setRunning(null);
    this.regions.finishTurn(event.turn);
    this.transcript.finished(event);
    this.status.finished(event);
    if (this.context) this.context.changed();
    this.loop.request();
    document.body.dispatchEvent(new CustomEvent("spark:turn-finished", { detail: event }));
    // The history panel redraws when the server says the turn's record is written
    // (history.changed), which is not replayed: a page catching up redraws it once after the
    // turns it was sent.
    if (this.replayed(event)) this.historyChangedSoon(CAUGHT_UP_MS);
  }

  // The server could not bring us up to date event by event: the transcript starts over (the
  // recent turns follow as a replay) and the document re-syncs. The hello just before told
  // which turn runs now.
  resync() {
    this.provider.requestSync();
    this.regions.clear();
    this.transcript.clear();
    this.hunks.clear();
    this.toasts.show("Back in sync: the transcript was reloaded from the server", "ok");
    this.loop.request();
    this.historyChanged();
  }

  // The server replaced the workspace's document by a new one built from the same texts (a
  // long-lived document keeps every deleted item): this page moves to it without a reload.
  // Binary frames before this event were the old document's, those after it the new one's.
  documentReplaced(event) {
    if (typeof event.state !== "string" || typeof event.generation !== "number") return;
    // Frames still queued are the old document's; their replies (a step 2 answering the
    // server's step 1) go out as such, before `document.adopted`.
    this.provider.apply();
    const doc = new Y.Doc();
    doc.clientID = this.doc.clientID; // the awareness is keyed by it; the new document has no item of it
    Y.applyUpdate(doc, fromBase64(event.state), this.provider); // from the server: nothing goes back
    this.adopt(doc);
    // What this page sends from now on is the new document's; the keystrokes it sent before
    // come back merged into it, as the server's updates.
    this.connection.send({ type: MESSAGE.DOCUMENT_ADOPTED, generation: event.generation });
    this.connection.generation = event.generation;
    this.provider.announce(); // this page's cursor, now relative to the new document
  }

  // Everything that held the old document or its files moves to the new one. The old one is
  // not destroyed: y-protocols' Awareness, which this page keeps, destroys itself with it.
  adopt(doc) {
    const files = doc.getMap("files");
    this.doc.getMap("files").unobserve(this.filesObserver);
    files.observe(this.filesObserver);
    this.provider.adopt(doc);
    this.tabs.rebind(files);
    this.follow.rebind(files);
    this.transcript.rebind(files);
    this.hunks.rebind(files);
    this.doc = doc;
  }

  setRunning(turn) {
    if (turn !== this.running) this.landing.turnEnded();
    this.running = turn;
    if (this.prompt) this.prompt.running(turn !== null);
  }

  // Enter: steer the running turn, or start one when idle. Alt+Enter: queue behind it (the
  // person may have swapped them: prompt.js). range: the lines it is about (Ctrl+K), or null.
  send(intent, text, effort, range = null) {
    let message;
    if (intent === "steer" && this.running) {
      message = { type: MESSAGE.STEER, text };
    } else {
      message = { type: MESSAGE.PROMPT, text, effort };
      const path = range ? range.path : this.tabs.active;
      if (path) message.path = path;
    }
    if (range) {
      message.range = range;
      message.mentions = mentionsIn(text); // the inline box's own @-words (the strip is the prompt box's)
    } else if (this.context) {
      this.context.carry(message);
    }
    if (!this.connection.send(message)) {
      this.toasts.show("Not sent: the connection is down, retrying", "error");
      return false;
    }
    if (this.context && !range) this.context.sent();
    this.status.sent(message.type);
    return true;
  }

  stop() {
    if (this.running) this.connection.send({ type: MESSAGE.STOP });
  }

  historyChanged() {
    document.body.dispatchEvent(new CustomEvent("spark:history-changed"));
  }

  // The panel redrawn once, `ms` from now (a later ask moves it): a run is recorded after its
  // events, and no event says when, so the panel asks a moment later; a catch-up's burst of
  // replayed turns redraws it once.
  historyChangedSoon(ms = RUN_REFRESH_MS) {
    clearTimeout(this.historyTimer);
    this.historyTimer = setTimeout(() => this.historyChanged(), ms);
  }
}

export function startLiveSession(root) {
  const session = new LiveSession(root);
  wirePage(root, session, session.canDrive); // the page's clicks and events (session_wire.js)
  session.start();
  return session;
}
