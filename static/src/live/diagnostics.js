// The security watchdog's findings in the editor (docs/protocol.md, guard.diagnostics): a lint
// gutter mark and an underline on each flagged line, its tooltip naming the rule, the flaw and
// the fix to make. The server sends a file's whole current set whenever it changes (an empty
// set clears it) and every file's set to a page that joins; it keeps no history, so neither
// does the page: the newest set per path is all there is. A file not open in a tab keeps its
// set here until its tab opens.
import { lintGutter, linter, setDiagnostics } from "@codemirror/lint";
import { element } from "./dom.js";

// The watchdog's severities as CodeMirror's.
const SEVERITY = { high: "error", medium: "warning", low: "info" };

// The editor extensions a tab needs to show diagnostics: the gutter and the lint state (no
// lint source: the findings come from the server, not from a linter run here).
export function diagnosticsExtensions() {
  return [linter(null), lintGutter()];
}

// Where a finding is, as people say it: "users.py line 5".
export function findingPlace({ path, line }) {
  return Number.isInteger(line) && line > 0 ? `${path} line ${line}` : String(path || "");
}

// A finding's message without the "line 5 " it may start with (its place is shown beside it).
export function findingMessage({ message, line }) {
  const text = String(message || "");
  const prefix = `line ${line} `;
  return text.startsWith(prefix) ? text.slice(prefix.length) : text;
}

// One finding as a CodeMirror diagnostic over `doc` (a Text). The server's line is 1-based and
// refers to the text as it scanned it; the text may have moved on since (or the finding come
// for a longer version), so the line is clamped into the document. The underline covers the
// line from its first non-blank character.
export function toDiagnostic(finding, doc) {
  const wanted = Number.isInteger(finding.line) ? finding.line : 1;
  const line = doc.line(Math.min(Math.max(wanted, 1), doc.lines));
  const indent = /^\s*/.exec(line.text)[0].length;
  const from = indent < line.length ? line.from + indent : line.from;
  const rule = String(finding.rule || "");
  const message = findingMessage(finding);
  const fix = String(finding.fix || "");
  return {
    from,
    to: line.to,
    severity: SEVERITY[finding.severity] || "info",
    source: rule ? `watchdog · ${rule}` : "watchdog",
    message: fix ? `${message} Fix: ${fix}` : message,
    renderMessage: () => {
      const box = element("span", "guard-diagnostic");
      box.append(element("span", "guard-diagnostic-message", message));
      if (fix) box.append(element("span", "guard-diagnostic-fix", `Fix: ${fix}`));
      return box;
    },
  };
}

export class GuardDiagnostics {
  constructor() {
    this.byPath = new Map(); // path -> findings, as the server last sent them
  }

  // guard.diagnostics: the file's findings now; true when that changed what a tab shows.
  set({ path, findings }) {
    if (typeof path !== "string" || !path) return false;
    const list = Array.isArray(findings) ? findings.filter((item) => item && typeof item === "object") : [];
    const before = this.byPath.get(path);
    if (list.length) this.byPath.set(path, list);
    else this.byPath.delete(path);
    return JSON.stringify(before || []) !== JSON.stringify(list);
  }

  // A (re)join: the server sends every file's set again just after hello.
  clear() {
    this.byPath.clear();
  }

  findings(path) {
    return this.byPath.get(path) || [];
  }

  // The transaction spec that shows `path`'s findings in an editor state.
  spec(path, state) {
    return setDiagnostics(state, this.findings(path).map((finding) => toDiagnostic(finding, state.doc)));
  }
}
