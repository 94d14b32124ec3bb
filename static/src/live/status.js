// The status bar: connection, the current turn, and its live figures. Tokens per second is
// estimated here from the deltas while the turn runs (the server counts real tokens and
// its figure replaces the estimate at turn.finished); TTFT and steer latency likewise.

// Roughly how a BPE tokenizer cuts text: short word pieces, each punctuation mark, newlines.
const TOKEN_GUESS = /[A-Za-z0-9_]{1,4}|[^\sA-Za-z0-9_]|\n/g;

export function estimateTokens(text) {
  const found = text.match(TOKEN_GUESS);
  return found ? found.length : 0;
}

// A server figure, or nothing when the turn never got that far (no token, no TTFT).
function figure(value, before, after) {
  return typeof value === "number" ? `${before}${Math.round(value)}${after}` : "";
}

export class StatusBar {
  constructor(root) {
    this.fields = {};
    for (const node of root.querySelectorAll("[data-field]")) this.fields[node.dataset.field] = node;
    this.turn = null; // {id, startedAt, firstAt, firstTokens, lastAt, tokens, final}
    this.sentAt = null; // when this person's prompt or steer left, until its turn starts
    this.steerServer = null; // ms from the steer's arrival to the re-prompt sent (server)
    this.steerSeen = null; // ms from Enter here to the new turn's start arriving here
    this.changed = false;
  }

  connection(state, retryMs) {
    const labels = { connecting: "connecting…", reconnecting: "reconnecting…", live: "● live" };
    const text = state === "offline" ? `offline, retrying in ${(retryMs / 1000).toFixed(1)} s` : labels[state];
    this.set("connection", text, state);
  }

  rtt(ms) {
    this.set("rtt", `${Math.round(ms)} ms rtt`);
  }

  // This person pressed Enter: the live TTFT and steer figures count from here, as they
  // see it (a queued prompt waits for its turn, so it does not count).
  sent(kind) {
    if (kind === "steer" || !this.turn || this.turn.final) this.sentAt = performance.now();
  }

  started({ turn, steered_from: steeredFrom }) {
    const now = performance.now();
    const from = this.sentAt ?? now;
    this.turn = { id: turn, startedAt: from, firstAt: null, lastAt: null, tokens: 0, final: null };
    this.steerServer = null; // turn.steered brings it
    this.steerSeen = steeredFrom && this.sentAt !== null ? now - this.sentAt : null;
    this.sentAt = null;
    this.changed = true;
  }

  // The server's own figure, as soon as the re-prompt went out (before any token).
  steered({ steer_ms: steerMs }) {
    if (typeof steerMs !== "number") return;
    this.steerServer = steerMs;
    this.changed = true;
  }

  delta({ turn, text }) {
    if (!this.turn || this.turn.id !== turn) this.started({ turn });
    const now = performance.now();
    const tokens = estimateTokens(text);
    if (this.turn.firstAt === null) {
      this.turn.firstAt = now;
      this.turn.firstTokens = tokens; // arrived at firstAt: not part of the rate's interval
    }
    this.turn.lastAt = now;
    this.turn.tokens += tokens;
    this.changed = true;
  }

  finished({ turn, status, metrics }) {
    if (this.turn && this.turn.id !== turn && !this.turn.final) return; // another turn runs
    if (!this.turn || this.turn.id !== turn) this.turn = { id: turn, tokens: 0 };
    this.turn.final = { status, metrics: metrics || {} };
    if (metrics && typeof metrics.steer_ms === "number") this.steerServer = metrics.steer_ms;
    this.changed = true;
  }

  flush() {
    if (!this.changed) return;
    this.changed = false;
    const turn = this.turn;
    if (!turn) return;
    this.set("steer", this.steerText());
    if (turn.final) {
      const { status, metrics } = turn.final;
      this.set("turn", `${turn.id} ${status}`, status);
      this.set("rate", figure(metrics.tokens_per_s, "", " tok/s"));
      this.set("ttft", figure(metrics.ttft_ms, "TTFT ", " ms"));
      this.set("tokens", figure(metrics.tokens, "", " tok"));
      return;
    }
    this.set("turn", `${turn.id} running`, "running");
    if (turn.firstAt === null) return;
    const seconds = (turn.lastAt - turn.firstAt) / 1000;
    const rate = (turn.tokens - turn.firstTokens) / seconds;
    this.set("rate", seconds > 0.05 ? `≈${Math.round(rate)} tok/s` : "");
    this.set("ttft", `TTFT ≈${Math.round(turn.firstAt - turn.startedAt)} ms`);
    this.set("tokens", `≈${turn.tokens} tok`);
  }

  steerText() {
    const parts = [];
    if (this.steerServer !== null) parts.push(`steer ${Math.round(this.steerServer)} ms`);
    if (this.steerSeen !== null) parts.push(`≈${Math.round(this.steerSeen)} ms seen here`);
    return parts.join(" · ");
  }

  set(field, text, kind = "") {
    const node = this.fields[field];
    if (!node) return;
    if (node.textContent !== text) node.textContent = text;
    node.dataset.kind = kind;
  }
}
