// The transcript's words: a block's state, why a turn ended, who ended it, a finished turn's
// figures and footer, a folded turn's button text, a watchdog finding's row. Plain functions:
// what they show is passed in.
import { EDIT_STATE, FINISH_REASON, TURN_STATUS } from "../protocol.js";
import { element } from "./dom.js";
import { findingMessage, findingPlace } from "./diagnostics.js";
import { usageText } from "./spend.js";

// A block's state as its chip says it, for every state the server defines (a test holds them
// to the generated list).
export const STATE_LABELS = Object.freeze({
  [EDIT_STATE.LOCATING]: "locating",
  [EDIT_STATE.STREAMING]: "writing",
  [EDIT_STATE.APPLIED]: "applied",
  [EDIT_STATE.ROLLED_BACK]: "rolled back",
  [EDIT_STATE.FAILED]: "failed",
});
// Why a turn ended (turn.finished `reason`), next to its outcome; "" where the outcome says it
// all. Every reason the server defines has one (a test holds them to the generated list); a
// reason this page does not know (a newer server) shows as its name.
export const REASON_LABELS = Object.freeze({
  [FINISH_REASON.ANSWERED]: "",
  [FINISH_REASON.NO_CHANGES]: "no changes",
  [FINISH_REASON.INCOMPLETE]: "cut short by the model",
  [FINISH_REASON.STOPPED]: "stopped",
  [FINISH_REASON.STEERED]: "",
  [FINISH_REASON.REVERTED]: "reverted",
  [FINISH_REASON.REPETITION]: "the model repeated itself",
  [FINISH_REASON.MODEL_UNAVAILABLE]: "the model could not be reached",
  [FINISH_REASON.MODEL_ERROR]: "the model answered with an error",
  [FINISH_REASON.NO_ANSWER]: "the model's connection ended without an answer",
  [FINISH_REASON.INTERNAL_ERROR]: "an error of the IDE (logged on the server)",
  [FINISH_REASON.STORAGE_FAILED]: "the document could not be saved, so the model was stopped",
  [FINISH_REASON.OWNER_LOST]: "the server running the turn went away",
  [FINISH_REASON.SHUTDOWN]: "the server shut down",
  [FINISH_REASON.GUARD_HALT]: "halted by the watchdog", // by status: GUARD_HALT_LABELS
  [FINISH_REASON.QUOTA]: "stopped: the course's AI token quota is used up",
  [FINISH_REASON.BUDGET_EXHAUSTED]: "stopped: the AI budget is spent",
  [FINISH_REASON.EXPLAIN_ONLY]: "explain-only: the model's edits were shown, not applied",
  [FINISH_REASON.CONNECTION_LOST]: "the connection to the model dropped",
  [FINISH_REASON.CONNECTION_EXPIRED]: "the model's connection reached its time limit",
  [FINISH_REASON.FIRST_BYTE_TIMEOUT]: "the model did not start answering in time",
  [FINISH_REASON.STALLED]: "the model stopped sending mid-answer",
  [FINISH_REASON.MODEL_PROTOCOL_ERROR]: "the model sent something that is not a valid event",
  [FINISH_REASON.ROUND_LIMIT]: "stopped at the round limit: the model was still calling tools",
  [FINISH_REASON.TESTS_PASSED]: "the tests pass",
  [FINISH_REASON.TESTS_FAILED]: "the tests still fail: the turn had no round left",
  [FINISH_REASON.PROVIDER_KEY_REJECTED]: "the provider refused the key (the error says which)",
  [FINISH_REASON.PROVIDER_KEY_MISSING]: "no key: the room's owner uses only their own keys",
});
// A watchdog halt (reason guard_halt), by how the turn ended: steered into a correction turn,
// or stopped because the model wrote the flaw again after the corrections it may have.
const GUARD_HALT_LABELS = {
  [TURN_STATUS.STEERED]: "halted by the watchdog: insecure code, the model was asked to fix it",
  [TURN_STATUS.CANCELLED]: "stopped by the watchdog: the model kept writing the flaw",
};
// The author of the turns the watchdog starts (turn.started `author`, turn.finished `by`).
export const WATCHDOG = "watchdog";
// What a turn.finished reason says, given its status ("" for nothing to add).
export function reasonLabel(status, reason) {
  if (reason === FINISH_REASON.GUARD_HALT && status in GUARD_HALT_LABELS) return GUARD_HALT_LABELS[status];
  if (Object.prototype.hasOwnProperty.call(REASON_LABELS, reason)) return REASON_LABELS[reason];
  return String(reason || "").replaceAll("_", " ");
}

// Who ended a turn (turn.finished `by`), for the reasons a person causes: "stopped by Ben".
const BY_LABELS = {
  [FINISH_REASON.STOPPED]: "stopped", [FINISH_REASON.STEERED]: "steered", [FINISH_REASON.REVERTED]: "reverted",
};

// What a structural merge did to the file (an applied block's `detail.merge`): "replaced
// is_prime · added reverse_string", "inserted"; "" when there is nothing to say.
export function mergeSummary(merge) {
  if (!merge || typeof merge !== "object") return "";
  const names = (list) => (Array.isArray(list) ? list.filter((name) => typeof name === "string") : []);
  const parts = [];
  const replaced = names(merge.replaced);
  const added = names(merge.added);
  if (replaced.length) parts.push(`replaced ${replaced.join(", ")}`);
  if (added.length) parts.push(`added ${added.join(", ")}`);
  if (merge.inserted === true) parts.push("inserted, the rest kept");
  // The file already had this code: {"replaced": [], "added": []} or {"inserted": false}.
  if (!parts.length && (merge.inserted === false || ("replaced" in merge && "added" in merge))) return "no change";
  return parts.join(" · ");
}

// A finished turn's figures as its footer shows them: "812 tok · 19873 tok/s · TTFT 4 ms ·
// steer 1 ms"; a figure the turn never got (no token, not steered) is left out.
export function turnFigures(metrics, steerMs = null) {
  const parts = [];
  const number = (value) => typeof value === "number" && Number.isFinite(value);
  if (number(metrics.tokens)) parts.push(`${metrics.tokens} tok`);
  if (number(metrics.tokens_per_s)) parts.push(`${Math.round(metrics.tokens_per_s)} tok/s`);
  if (number(metrics.ttft_ms)) parts.push(`TTFT ${Math.round(metrics.ttft_ms)} ms`);
  const steer = number(metrics.steer_ms) ? metrics.steer_ms : steerMs;
  if (number(steer)) parts.push(`steer ${steer < 10 ? steer.toFixed(1) : Math.round(steer)} ms`);
  return parts.join(" · ");
}

// A person's name in their colour (a dot before it), as in the presence list; peerClass(name)
// gives the class of their colour.
export function personRef(peerClass, className, name, what) {
  const span = element("span", `person-ref ${className} ${peerClass(name)}`.trim(), name);
  span.title = `${what} ${name}`;
  return span;
}

// A finished turn's footer: its outcome, why, its figures. person(className, name, what)
// draws a person's name (personRef).
export function turnFooter({ status, reason, metrics, error, by, usage }, steerMs, person) {
  const footer = element("footer", "turn-foot");
  if (reason) footer.dataset.reason = reason;
  footer.append(element("span", `badge outcome ${status}`, status));
  const why = reasonLabel(status, reason);
  if (by && reason in BY_LABELS) {
    const label = element("span", "reason", `${BY_LABELS[reason]} by `);
    label.append(person("turn-by", String(by), `${BY_LABELS[reason]} by`));
    footer.append(label);
  } else if (why) {
    footer.append(element("span", "reason", why));
  }
  const figures = turnFigures(metrics || {}, steerMs);
  if (figures) footer.append(element("span", "metric", figures));
  const spent = usageText(usage);
  if (spent) {
    const node = element("span", "metric usage", spent);
    node.title = "Tokens: input (with the cached input among them) and output; the cost by the model's prices"
      + (usage.estimated ? " (≈: estimated, the provider gave no count)" : "");
    footer.append(node);
  }
  if (metrics && typeof metrics.model === "string" && metrics.model) {
    footer.append(element("span", "badge model", metrics.model));
  }
  if (error) footer.append(element("span", "error", typeof error === "string" ? error : error.message || ""));
  return footer;
}

// What a folded turn's button says (its outcome, how much it hides) and its tooltip.
export function foldWords({ status, reason, metrics }, chars, blocks, droppedChars) {
  const what = [`${Math.max(1, Math.round(chars / 1024))} KB`];
  if (blocks) what.push(`${blocks} edit${blocks === 1 ? "" : "s"}`);
  const why = reasonLabel(status, reason);
  const tokens = metrics && typeof metrics.tokens === "number" ? ` · ${metrics.tokens} tok` : "";
  return {
    text: `${status}${why ? ` (${why})` : ""}${tokens}: show this answer (${what.join(", ")})`,
    title: droppedChars
      ? `Its first ${Math.round(droppedChars / 1024)} KB are no longer kept on this page (the replay has every word)`
      : "An earlier answer, folded to keep the page light",
  };
}

// A guard.finding's row under its turn: a halt stands out (where, what, the fix asked for, a
// link to the correction turn), a flag is one quiet line.
export function findingRow(event) {
  const halted = event.action === "halted";
  const severity = ["high", "medium", "low"].includes(event.severity) ? event.severity : "low";
  const row = element("div", `guard-finding ${halted ? "halted" : "flagged"} severity-${severity}`);
  row.dataset.rule = String(event.rule || "");
  const place = element("button", "guard-loc", halted ? findingPlace(event) : `${event.path}:${event.line}`);
  place.type = "button";
  place.dataset.guardPath = String(event.path || "");
  place.dataset.line = String(event.line || 1);
  place.title = `Open ${event.path} at line ${event.line}`;
  const message = element("span", "guard-message", findingMessage(event));
  const rule = element("span", "guard-rule", String(event.rule || ""));
  rule.title = `Rule ${event.rule} (${event.tier || "watchdog"}), ${severity} severity`;
  if (halted) {
    row.setAttribute("role", "alert");
    row.append(element("strong", "guard-title", "Watchdog halted the model:"), " ", place, " — ", message, " ", rule);
    if (event.fix) row.append(element("span", "guard-fix", `Fix asked for: ${event.fix}`));
    if (event.correction) {
      const link = element("button", "guard-correction", "→ correction turn");
      link.type = "button";
      link.dataset.correction = String(event.correction);
      link.title = "Show the turn in which the model corrects it";
      row.append(link);
    }
  } else {
    row.append(element("span", "guard-flag", `⚑ ${severity}`), " ", place, " ", message, " ", rule);
    if (event.fix) row.title = `Fix: ${event.fix}`;
  }
  return row;
}
