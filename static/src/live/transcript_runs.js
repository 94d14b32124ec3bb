// The lines a turn's prose gets between the model's words: a round that begins ("↻ Round 2:
// the model got its 1 tool result and goes on."; after a test round, "↻ tests: 1 failed →
// round 4") and a run of the model, once it is over ("▶ ran `pytest -q`: failed (exit 1)").
// Lines of prose, so that they stay in order with the text and chips around them and fold
// with them; the run's output stays in the run panel and the history.
import { runCommand, runOutcome } from "./run_words.js";
import { endingBreaks } from "./transcript_prose.js";

// Runs of the model whose end has not come, at most this many (an end that never comes, the
// connection having gone, must not make the map grow).
const OPEN_RUNS = 16;

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

// A model's run as its turn's line: "ran `pytest -q`: failed (exit 1)".
export function runLine(command, end) {
  return `▶ ran \`${command}\`: ${runOutcome(end)}`;
}

// The runs of the model going on, by run id: the turn each is for and its command
// (run.started `model`, `turn`, `command`), until run.finished says how it ended.
export class ModelRuns {
  constructor() {
    this.open = new Map(); // run id -> {turn, command}
  }

  // run.started: a run of the model for a turn is remembered; a person's run is not.
  started(event) {
    const { run, model, turn } = event;
    if (model !== true || !turn || !run) return;
    this.open.set(String(run), { turn: String(turn), command: runCommand(event) });
    if (this.open.size > OPEN_RUNS) this.open.delete(this.open.keys().next().value);
  }

  // run.finished: {turn, line} for the line of the turn it ran for, or null (not the model's).
  finished(event) {
    const run = this.open.get(String(event.run));
    if (!run) return null;
    this.open.delete(String(event.run));
    return { turn: run.turn, line: runLine(run.command, event) };
  }
}
