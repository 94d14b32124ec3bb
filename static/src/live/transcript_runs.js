// The lines a turn's prose gets between the model's words: a round that begins ("↻ Round 2:
// the model got its 1 tool result and goes on."; after a test round, "↻ tests: 1 failed →
// round 4") and a run of the model, once it is over ("▶ ran `pytest -q`: failed (exit 1)").
// Lines of prose, so that they stay in order with the text and chips around them and fold
// with them; the run's output stays in the run panel and the history. A run's line comes from
// its turn.ran, a turn event kept in the event log: a late page and the replay show it too.
import { runOutcome } from "./run_words.js";
import { endingBreaks } from "./transcript_prose.js";

// `line` as the prose to add to the turn's `entry`: a paragraph of its own, one blank line
// from what comes before and after it.
export function paragraph(entry, line) {
  return `${"\n".repeat(2 - endingBreaks(entry))}${line}\n\n`;
}

// turn.round's line: after the tool calls were answered, or (`verdict`) after the IDE ran the
// tests on the round's changes and they failed.
export function roundLine({ round, calls, failed, verdict }) {
  if (verdict) return `↻ tests: ${verdict} → round ${round}`;
  const results = `${calls} tool result${calls === 1 ? "" : "s"}`;
  const failures = failed ? `, ${failed} failed` : "";
  return `↻ Round ${round}: the model got its ${results}${failures} and goes on.`;
}

// A model's run as its turn's line (turn.ran): "ran `pytest -q`: failed (exit 1)".
export function runLine(command, end) {
  return `▶ ran \`${command || "a command"}\`: ${runOutcome(end)}`;
}
