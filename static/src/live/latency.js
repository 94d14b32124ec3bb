// The latency panel: what the model's speed looks like to the people in the session. The
// last turn's time to first token and tokens per second, the last steer's latency and the
// model, over a small chart of the recent turns. Every figure is the server's own, from
// turn.finished and turn.steered (the status bar shows live estimates while a turn runs).
// It listens to the page's events on document.body: spark:turn-started, spark:turn-steered,
// spark:turn-finished (each with the server event as detail); a replayed turn (a reload, a
// resync) counts once.
import { setText } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
export const KEEP_TURNS = 20; // turns on the chart
const WIDTH = 240;
const ROW = 26; // height of each of the chart's two rows
const GAP = 8;

// 4.2 ms, 38 ms, 1.2 s: as precise as the figure deserves.
export function formatMs(ms) {
  if (typeof ms !== "number") return "–";
  if (ms >= 1000) return `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

export function formatRate(perSecond) {
  return typeof perSecond === "number" ? `${Math.round(perSecond)} tok/s` : "–";
}

function number(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

export class LatencyPanel {
  constructor(root, { events = document.body, keep = KEEP_TURNS } = {}) {
    this.root = root;
    this.keep = keep;
    this.fields = {};
    for (const node of root.querySelectorAll("[data-latency]")) this.fields[node.dataset.latency] = node;
    this.turns = []; // [{id, label, ttft, rate, tokens, status, model, steer}], oldest first
    this.prompts = new Map(); // turn id -> prompt, until the turn ends
    this.running = null;
    this.steer = null; // the last steer's latency (ms, server)
    this.model = null;
    events.addEventListener("spark:turn-started", (event) => this.started(event.detail));
    events.addEventListener("spark:turn-steered", (event) => this.steered(event.detail));
    events.addEventListener("spark:turn-finished", (event) => this.finished(event.detail));
    this.render();
  }

  started({ turn, prompt }) {
    this.prompts.set(turn, typeof prompt === "string" ? prompt : "");
    if (this.prompts.size > this.keep) this.prompts.delete(this.prompts.keys().next().value); // never ended
    this.running = turn;
    this.render();
  }

  steered({ steer_ms: steerMs }) {
    if (number(steerMs) === null) return;
    this.steer = steerMs;
    this.render();
  }

  finished({ turn, status, metrics: given }) {
    const metrics = given || {}; // a turn lost with its server has no figures
    if (this.running === turn) this.running = null;
    const label = (this.prompts.get(turn) || "").replace(/\s+/g, " ").trim().slice(0, 60);
    this.prompts.delete(turn);
    const entry = {
      id: turn, label, status, ttft: number(metrics.ttft_ms), rate: number(metrics.tokens_per_s),
      tokens: number(metrics.tokens), model: typeof metrics.model === "string" ? metrics.model : null,
      steer: number(metrics.steer_ms),
    };
    const known = this.turns.findIndex((t) => t.id === turn);
    if (known >= 0) this.turns[known] = entry; // a replay of a turn shown already
    else this.turns.push(entry);
    if (this.turns.length > this.keep) this.turns.splice(0, this.turns.length - this.keep);
    if (entry.model) this.model = entry.model;
    if (entry.steer !== null) this.steer = entry.steer;
    this.render();
  }

  // The last turn that has figures (a turn that failed before any token has none).
  last() {
    for (let i = this.turns.length - 1; i >= 0; i -= 1) if (this.turns[i].ttft !== null) return this.turns[i];
    return null;
  }

  render() {
    const last = this.last();
    this.set("ttft", last ? formatMs(last.ttft) : "–");
    this.set("rate", last ? formatRate(last.rate) : "–");
    this.set("steer", this.steer === null ? "–" : formatMs(this.steer));
    this.set("model", this.model || "");
    this.set("state", this.running ? "running…" : "");
    if (this.fields.last) this.fields.last.dataset.turn = last ? last.id : "";
    if (this.fields.empty) this.fields.empty.hidden = this.turns.length > 0;
    this.drawChart();
  }

  // Two rows of bars, one per turn, oldest left: TTFT above, tokens/s below, each scaled to
  // its largest figure on the chart (written beside the row).
  drawChart() {
    const svg = this.fields.chart;
    if (!svg) return;
    const shown = this.turns.filter((t) => t.ttft !== null || t.rate !== null);
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${WIDTH} ${ROW * 2 + GAP}`);
    svg.setAttribute("preserveAspectRatio", "none"); // the bars fill the box, whatever its width
    const maxTtft = Math.max(0, ...shown.map((t) => t.ttft ?? 0));
    const maxRate = Math.max(0, ...shown.map((t) => t.rate ?? 0));
    this.set("ttft-max", maxTtft ? `max ${formatMs(maxTtft)}` : "");
    this.set("rate-max", maxRate ? `max ${formatRate(maxRate)}` : "");
    const slot = WIDTH / this.keep;
    shown.forEach((turn, i) => {
      const x = (this.keep - shown.length + i) * slot; // newest at the right edge
      const group = document.createElementNS(SVG, "g");
      group.setAttribute("class", `latency-turn status-${turn.status}`);
      group.dataset.turn = turn.id;
      group.dataset.ttftMs = turn.ttft ?? "";
      group.dataset.tokensPerS = turn.rate ?? "";
      const title = document.createElementNS(SVG, "title");
      const what = turn.label ? `“${turn.label}”` : `turn ${turn.id}`;
      title.textContent = `${what}: TTFT ${formatMs(turn.ttft)}, ${formatRate(turn.rate)}, `
        + `${turn.tokens ?? 0} tokens${turn.steer !== null ? `, steer ${formatMs(turn.steer)}` : ""} (${turn.status})`;
      group.append(title);
      group.append(bar("latency-bar ttft", x, slot, turn.ttft, maxTtft, 0));
      group.append(bar("latency-bar rate", x, slot, turn.rate, maxRate, ROW + GAP));
      svg.append(group);
    });
  }

  set(field, text) {
    const node = this.fields[field];
    if (node) setText(node, text);
  }
}

function bar(className, x, slot, value, max, top) {
  const rect = document.createElementNS(SVG, "rect");
  const height = value && max ? Math.max(1, (value / max) * ROW) : 0;
  rect.setAttribute("class", className);
  rect.setAttribute("x", (x + 1).toFixed(1));
  rect.setAttribute("width", Math.max(1, slot - 2).toFixed(1));
  rect.setAttribute("y", (top + ROW - height).toFixed(1));
  rect.setAttribute("height", height.toFixed(1));
  return rect;
}

export function startLatencyPanel(root) {
  return new LatencyPanel(root);
}
