// A run in words, as the run panel and the transcript say it: its command, how long it
// took, how it ended. Plain functions of run.started and run.finished.

// The command a run stands for, as a terminal would show it: the whole command the server
// names (run.started `command`), or, from a server that names none, the one its path or
// `tests` stand for.
export function runCommand({ command, path, tests }) {
  if (command) return command;
  if (tests) return "pytest";
  return path ? `python ${path}` : "(a run that started before this page joined)";
}

// "41 ms", "2.3 s", "1 min 5 s".
export function duration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// A finished run's figures: "exit 1 · 41 ms", "no exit code · 15 s".
export function runFigures({ exit_code: exitCode, duration_ms: ms }) {
  const parts = [typeof exitCode === "number" ? `exit ${exitCode}` : "no exit code"];
  const took = duration(ms);
  if (took) parts.push(took);
  return parts.join(" · ");
}

// How a run ended, in a few words: "failed (exit 1)", "ok (exit 0)", "timeout", "not run:
// there is no file 'x.py' to run" (run.finished `error`: it never started).
export function runOutcome({ status, exit_code: exitCode, error, message }) {
  if (error) return message ? `not run: ${message}` : "not run";
  const words = String(status || "over").replaceAll("_", " ");
  return typeof exitCode === "number" ? `${words} (exit ${exitCode})` : words;
}
