// The status bar: connection, the current turn (named by its prompt), and its live figures.
// Until the model's first token the turn says how long it has waited. Tokens per second is
// estimated here from the deltas while the turn runs (the server counts real tokens and
// its figure replaces the estimate at turn.finished); TTFT and steer latency likewise. A
// turn this page learnt of from the replay (it started before the page joined) has no TTFT
// estimate, and its rate counts from the first live delta. A finished turn's cost, and the
// session's tokens and cost so far, come with turn.finished (spend.js).
import { FINISH_REASON, MESSAGE, TURN_STATUS } from "../protocol.js";
import { setData, setText } from "./dom.js";
import { shortPrompt } from "./notices.js";
import { costText, sessionText } from "./spend.js";
import { REASON_LABELS } from "./transcript.js";

// Roughly how a BPE tokenizer cuts text: short word pieces, each punctuation mark, newlines.
const TOKEN_GUESS = /[A-Za-z0-9_]{1,4}|[^\sA-Za-z0-9_]|\n/g;

export function estimateTokens(text) {
  const found = text.match(TOKEN_GUESS);
  return found ? found.length : 0;
}

const WAITING_TICK_MS = 100; // the waiting time counts up at 10 Hz

// A server figure, or nothing when the turn never got that far (no token, no TTFT).
function figure(value, before, after) {
  return typeof value === "number" ? `${before}${Math.round(value)}${after}` : "";
}

export class StatusBar {
  // requestFrame(): ask for a flush() next frame (the waiting time's ticks)
  constructor(root, { requestFrame }) {
    this.fields = {};
    for (const node of root.querySelectorAll("[data-field]")) this.fields[node.dataset.field] = node;
    this.requestFrame = requestFrame;
    this.ticker = 0;
    // {id, label, startedAt (null: replayed), firstAt, firstTokens, lastAt, tokens, final}
    this.turn = null;
    this.sentAt = null; // when this person's prompt or steer left, until its turn starts
    this.steerServer = null; // ms from the steer's arrival to the re-prompt sent (server)
    this.steerSeen = null; // ms from Enter here to the new turn's start arriving here
    this.changed = false;
  }

  connection(state, retryMs) {
    const labels = {
      connecting: "connecting…", reconnecting: "reconnecting…", live: "● live", refused: "no access: reload the page",
    };
    const text = state === "offline" ? `offline, retrying in ${(retryMs / 1000).toFixed(1)} s` : labels[state];
    this.set("connection", text, state);
  }

  rtt(ms) {
    this.set("rtt", `${Math.round(ms)} ms rtt`);
  }

  // This person pressed Enter: the live TTFT and steer figures count from here, as they
  // see it (a queued prompt waits for its turn, so it does not count).
  sent(kind) {
    if (kind === MESSAGE.STEER || !this.turn || this.turn.final) this.sentAt = performance.now();
  }

  // What this person sent was refused: no turn of theirs is coming.
  refused() {
    this.sentAt = null;
  }

  // replayed: the turn started before this page joined (its waiting time is unknown here).
  started({ turn, prompt, steered_from: steeredFrom }, replayed = false) {
    const now = performance.now();
    const from = replayed ? null : this.sentAt ?? now;
    this.turn = {
      id: turn, label: prompt === undefined ? "turn" : shortPrompt(prompt),
      startedAt: from, firstAt: null, firstTokens: 0, lastAt: null, tokens: 0, final: null,
    };
    this.steerServer = null; // turn.steered brings it
    this.steerSeen = steeredFrom && !replayed && this.sentAt !== null ? now - this.sentAt : null;
    if (!replayed) this.sentAt = null;
    this.changed = true;
    this.tick(from !== null);
  }

  // While a turn waits for its first token, a flush every tick redraws the waiting time.
  tick(on) {
    clearInterval(this.ticker);
    this.ticker = on ? setInterval(() => { this.changed = true; this.requestFrame(); }, WAITING_TICK_MS) : 0;
  }

  // The server's own figure, as soon as the re-prompt went out (before any token).
  steered({ steer_ms: steerMs }) {
    if (typeof steerMs !== "number") return;
    this.steerServer = steerMs;
    this.changed = true;
  }

  // replayed: a delta from before this page joined (it counts, but not for the rate).
  delta({ turn, text }, replayed = false) {
    if (!this.turn || this.turn.id !== turn) this.started({ turn }, true);
    const now = performance.now();
    const tokens = estimateTokens(text);
    this.turn.tokens += tokens;
    if (replayed || this.turn.firstAt === null) {
      this.turn.firstTokens += tokens; // not part of the rate's interval
    }
    if (!replayed && this.turn.firstAt === null) {
      this.turn.firstAt = now;
      this.tick(false);
    }
    this.turn.lastAt = now;
    this.changed = true;
  }

  finished({ turn, status, metrics, reason, usage, session_usage: sessionUsage }) {
    // The session's totals count every turn that ended, the newest last (a replay's too).
    const session = sessionText(sessionUsage);
    if (session !== null) this.set("session", session);
    if (this.turn && this.turn.id !== turn && !this.turn.final) return; // another turn runs
    if (!this.turn || this.turn.id !== turn) this.turn = { id: turn, label: "turn", tokens: 0 };
    this.turn.final = { status, metrics: metrics || {}, reason: reason || "", usage };
    this.tick(false);
    if (metrics && typeof metrics.steer_ms === "number") this.steerServer = metrics.steer_ms;
    this.changed = true;
  }

  flush() {
    if (!this.changed) return;
    this.changed = false;
    const turn = this.turn;
    if (!turn) return;
    this.set("steer", this.steerText());
    this.setTurn(turn);
    if (turn.final) {
      const { metrics } = turn.final;
      this.set("rate", figure(metrics.tokens_per_s, "", " tok/s"));
      this.set("ttft", figure(metrics.ttft_ms, "TTFT ", " ms"));
      this.set("tokens", figure(metrics.tokens, "", " tok"));
      this.set("cost", costText(turn.final.usage));
      return;
    }
    this.set("tokens", turn.tokens ? `≈${turn.tokens} tok` : "");
    this.set("cost", "");
    if (turn.firstAt === null) {
      this.set("rate", "");
      this.set("ttft", this.waitingText(), "waiting");
      return;
    }
    const seconds = (turn.lastAt - turn.firstAt) / 1000;
    const rate = (turn.tokens - turn.firstTokens) / seconds;
    this.set("rate", seconds > 0.05 ? `≈${Math.round(rate)} tok/s` : "");
    this.set("ttft", turn.startedAt === null ? "" : `TTFT ≈${Math.round(turn.firstAt - turn.startedAt)} ms`);
  }

  // The turn's prompt, shortened; its id only in the tooltip and a data attribute.
  setTurn(turn) {
    const status = turn.final ? turn.final.status : TURN_STATUS.RUNNING;
    // A watchdog halt says so: "steered" alone would read as a person's doing.
    const halted = turn.final && turn.final.reason === FINISH_REASON.GUARD_HALT;
    const shown = halted ? REASON_LABELS[FINISH_REASON.GUARD_HALT] : status;
    this.set("turn", `${turn.label} · ${shown}`, status);
    const node = this.fields.turn;
    if (node && node.dataset.turn !== turn.id) {
      node.dataset.turn = turn.id;
      node.title = `${turn.label} (turn ${turn.id})`;
    }
  }

  // How long the model has kept this person waiting; a replayed turn's wait began before
  // this page, and one that already has tokens gets its figures with the next delta.
  waitingText() {
    const { startedAt, tokens } = this.turn;
    if (startedAt === null) return tokens ? "" : "waiting for first token…";
    return `waiting for first token… ${((performance.now() - startedAt) / 1000).toFixed(1)} s`;
  }

  steerText() {
    const parts = [];
    if (this.steerServer !== null) parts.push(`steer ${Math.round(this.steerServer)} ms`);
    if (this.steerSeen !== null) parts.push(`(≈${Math.round(this.steerSeen)} ms here)`);
    return parts.join(" ");
  }

  set(field, text, kind = "") {
    const node = this.fields[field];
    if (!node) return;
    setText(node, text);
    setData(node, "kind", kind);
  }
}
