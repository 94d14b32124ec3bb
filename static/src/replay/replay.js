// The replay page (templates/replay/replay.html): plays a session back from its stored
// history at 1x-20x, with a scrubber whose marks show each turn's start and where people
// steered or stopped the model. The document at a moment is rebuilt with Yjs: the nearest
// checkpoint before it, then the updates after (forward playback only applies what is new).
// A fresh update (the room replaced its document by a new one) is where the document starts
// over: a seek, or playback, that reaches one builds a new document from it, as from a
// checkpoint. The transcript is the live page's, fed the stored events up to the moment.
import * as Y from "yjs";
import { FrameLoop } from "../live/frame.js";
import { Transcript } from "../live/transcript.js";
import { EDIT_STATE, EDIT_STATES_IN_FLIGHT, EVENT } from "../protocol.js";
import { Timeline, clock, shownChars } from "./timeline.js";
import { DocumentView } from "./viewer.js";
import { showEditSteered } from "../live/edit_steer.js";

// Forward, a seek that would apply more updates than this builds from a checkpoint instead
// (when one is nearer).
const REBUILD_UPDATES = 200;
const MARK_LABELS = {
  steer: "Steered", edit_steer: "Steered by editing", stop: "Stopped", turn: "Turn", review: "Hunk", restore: "Restored",
};

function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

class ReplayPlayer {
  constructor(root) {
    this.root = root;
    this.url = root.dataset.url;
    this.playButton = root.querySelector("[data-action=play]");
    this.speedSelect = root.querySelector("[data-field=speed]");
    this.skipBox = root.querySelector("[data-field=skip-idle]");
    this.scrubber = root.querySelector("#replay-scrubber");
    this.marksBox = root.querySelector("#replay-marks");
    this.clockLabel = root.querySelector("[data-field=clock]");
    this.stateLabel = root.querySelector("[data-field=state]");
    this.wallLabel = root.querySelector("[data-field=wall]");
    this.transcriptBox = root.querySelector("#replay-transcript");
    this.view = new DocumentView({
      host: root.querySelector("#replay-editor"), list: root.querySelector("#replay-files"),
      tabs: root.querySelector("[data-field=tabs]"), follow: root.querySelector("[data-field=follow]"),
    });
    this.view.onPick = () => this.render();
    this.loop = new FrameLoop();
    this.loop.add(() => this.transcript && this.transcript.flush());
    this.timeline = null;
    this.t = 0; // the moment shown
    this.playing = false;
    this.lastFrame = null; // performance.now() of the previous playback frame
    this.doc = null; // the document at this.t (holds `applied` updates)
    this.applied = 0;
    this.transcript = null;
    this.fed = 0; // events fed to the transcript in full
    this.partial = 0; // characters fed of events[fed] (a run of text still being written)
  }

  async load() {
    let data;
    try {
      const response = await fetch(this.url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      data = await response.json();
    } catch (error) {
      this.stateLabel.textContent = `could not load the replay: ${error.message}`;
      return;
    }
    this.timeline = new Timeline(data);
    if (this.timeline.empty) {
      this.stateLabel.textContent = "nothing to replay yet: this workspace has not been opened live";
      return;
    }
    this.scrubber.max = String(this.timeline.end);
    this.scrubber.disabled = false;
    this.playButton.disabled = false;
    this.drawMarks();
    this.wire();
    this.seek(0);
    this.root.dataset.ready = "true";
  }

  wire() {
    this.playButton.addEventListener("click", () => (this.playing ? this.pause() : this.play()));
    this.scrubber.addEventListener("input", () => this.seek(Number(this.scrubber.value)));
    this.marksBox.addEventListener("click", (event) => {
      const mark = event.target.closest(".replay-mark");
      if (mark) this.seek(Number(mark.dataset.t));
    });
    document.addEventListener("keydown", (event) => {
      if (event.key !== " " || event.target.closest("input, select, textarea, button")) return;
      event.preventDefault();
      if (this.playing) this.pause();
      else this.play();
    });
  }

  drawMarks() {
    const end = this.timeline.end || 1;
    const marks = this.timeline.marks.map((mark) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "replay-mark";
      button.dataset.kind = mark.kind;
      button.dataset.t = String(mark.t);
      button.dataset.turn = mark.turn;
      button.style.left = `${(100 * mark.t) / end}%`; // CSSOM, not a style attribute: fine under a CSP
      const label = MARK_LABELS[mark.kind] || mark.kind;
      button.title = `${clock(mark.t)} ${label}${mark.text ? `: ${mark.text.slice(0, 120)}` : ""}`;
      button.setAttribute("aria-label", button.title);
      return button;
    });
    this.marksBox.replaceChildren(...marks);
  }

  get speed() {
    return Number(this.speedSelect.value) || 1;
  }

  play() {
    if (this.t >= this.timeline.end) this.seek(0);
    this.playing = true;
    this.lastFrame = null;
    this.playButton.textContent = "Pause";
    this.playButton.setAttribute("aria-pressed", "true");
    requestAnimationFrame((now) => this.tick(now));
  }

  pause() {
    this.playing = false;
    this.playButton.textContent = "Play";
    this.playButton.setAttribute("aria-pressed", "false");
    this.render();
  }

  tick(now) {
    if (!this.playing) return;
    const elapsed = this.lastFrame === null ? 0 : Math.min(now - this.lastFrame, 250); // a hidden tab's pause is no jump
    this.lastFrame = now;
    let t = this.t + elapsed * this.speed;
    if (this.skipBox.checked) t = Math.max(t, this.timeline.skipIdle(t));
    if (t >= this.timeline.end) {
      this.seek(this.timeline.end);
      this.pause();
      return;
    }
    this.seek(t);
    requestAnimationFrame((next) => this.tick(next));
  }

  // Show the session as it was at t.
  seek(t) {
    const timeline = this.timeline;
    t = Math.min(Math.max(0, t), timeline.end);
    const count = timeline.updatesAt(t);
    const start = timeline.startFor(count);
    const behind = this.doc === null || count < this.applied;
    // A fresh update not applied yet: the document starts over from it (never applied onto the old one).
    const replaced = timeline.freshAtOrBefore(count) >= this.applied;
    if (behind || replaced || start.n - this.applied > REBUILD_UPDATES) this.rebuild(start);
    this.applyUpdates(count);
    this.feedTo(t);
    this.t = t;
    this.render();
  }

  // A new document from `start` (a checkpoint or a fresh update: timeline.startFor), and a new
  // transcript over it (fed again from the start).
  rebuild(start) {
    if (this.doc) this.doc.destroy();
    this.doc = new Y.Doc();
    Y.applyUpdate(this.doc, fromBase64(start.state));
    this.applied = start.n;
    const box = this.transcriptBox.cloneNode(false);
    this.transcriptBox.replaceWith(box);
    this.transcriptBox = box;
    this.transcript = new Transcript(box, {
      files: this.doc.getMap("files"), requestFrame: () => this.loop.request(), onOpenPath: (path) => this.pick(path),
    });
    this.fed = 0;
    this.partial = 0;
  }

  // The updates up to `count` onto the document (seek saw to it that none of them is fresh).
  applyUpdates(count) {
    const updates = this.timeline.updates;
    if (count <= this.applied) return;
    Y.transact(this.doc, () => {
      for (let i = this.applied; i < count; i += 1) Y.applyUpdate(this.doc, fromBase64(updates[i][1]));
    });
    this.applied = count;
  }

  // The transcript as of t: the events started by then, a run of text only as far as it got.
  feedTo(t) {
    const events = this.timeline.events;
    const started = this.timeline.eventsAt(t);
    const inRun = this.partial > 0 && this.fed < started && shownChars(events[this.fed], t) < this.partial;
    if (started < this.fed || (started === this.fed && this.partial > 0) || inRun) this.restartTranscript();
    while (this.fed < started) {
      const event = events[this.fed];
      const chars = shownChars(event, t);
      const text = typeof event.text === "string" ? event.text : null;
      if (text !== null && chars < text.length) {
        if (chars > this.partial) this.feed({ ...event, text: text.slice(this.partial, chars) });
        this.partial = chars;
        break;
      }
      this.feed(this.partial ? { ...event, text: text.slice(this.partial) } : event);
      this.partial = 0;
      this.fed += 1;
    }
    this.loop.request();
  }

  restartTranscript() {
    this.transcript.clear();
    this.fed = 0;
    this.partial = 0;
  }

  feed(event) {
    const transcript = this.transcript;
    switch (event.type) {
      case EVENT.TURN_STARTED: return transcript.started(event);
      case EVENT.TURN_PROSE: return transcript.prose(event);
      case EVENT.TURN_STEERED: return transcript.steered(event);
      case EVENT.TURN_CONTEXT: return transcript.context(event); // what its request carried
      case EVENT.TURN_EDIT_STEERED: return showEditSteered(transcript, event); // the line and its diff, as live
      case EVENT.TURN_ROUND: return transcript.round(event);
      case EVENT.TURN_RAN: return transcript.ran(event); // a run of the model, as the live page drew it
      case EVENT.TURN_FINISHED: return transcript.finished(event);
      case EVENT.GUARD_FINDING: return transcript.finding(event); // under its turn, as it was shown live
      case EVENT.EDIT_STATUS:
        transcript.blockStatus(event);
        if (EDIT_STATES_IN_FLIGHT.has(event.state) || event.state === EDIT_STATE.APPLIED) this.view.modelAt(event.path);
        return undefined;
      default: return undefined; // turn.queued, turn.reverted, turn.restored: the document shows what they did
    }
  }

  pick(path) {
    this.view.followBox.checked = false;
    this.view.show(path);
    this.render();
  }

  render() {
    const timeline = this.timeline;
    this.view.render(this.doc.getMap("files"));
    this.scrubber.value = String(Math.round(this.t));
    this.clockLabel.textContent = `${clock(this.t)} / ${clock(timeline.end)}`;
    const running = this.transcript && [...this.transcript.turns.values()].some((entry) => !entry.done);
    const where = this.t >= timeline.end ? "end" : this.playing ? `playing ${this.speed}×` : "paused";
    this.stateLabel.textContent = running ? `${where} · the model is writing` : where;
    this.root.dataset.state = this.t >= timeline.end ? "ended" : this.playing ? "playing" : "paused";
    this.wallLabel.textContent = new Date(timeline.start + this.t).toLocaleString();
  }
}

export function startReplay(root) {
  const player = new ReplayPlayer(root);
  player.load();
  return player;
}
