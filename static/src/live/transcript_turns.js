// A turn's entry in the transcript: its article (header, prose) and what the page keeps of it,
// and its header as turn.started tells it (prompt, steered from, effort, who asked).
import { element } from "./dom.js";
import { shortPrompt } from "./notices.js";
import { WATCHDOG } from "./transcript_labels.js";

const NO_PROMPT = "(turn in progress)"; // the heading until its turn.started arrives

// A new turn's entry; its article is not on the page yet.
export function newEntry(turn) {
  const article = element("article", "turn running");
  article.dataset.turn = turn;
  const header = element("header", "turn-head");
  header.append(element("span", "turn-prompt", NO_PROMPT));
  const prose = element("div", "prose");
  article.append(header, prose);
  return {
    article, header, prose, prompt: null, buffer: "", blocks: new Map(), done: false, steerMs: null,
    part: null, // the open part: {box, text (its last text node or null), chars}
    parts: [], // parts on the page, oldest first: {box, chars}
    shownChars: 0, // prose characters in those parts
    hidden: [], // parts taken off the page, oldest first
    hiddenChars: 0,
    droppedChars: 0, // prose that is no longer kept at all
    more: null, // the "show earlier" button
    expanded: false, // the person asked for the earlier prose: it stays
    outcome: null, // turn.finished's status, reason, metrics, error, by (the footer's)
    folded: null, // a folded turn's prose and blocks, in order: strings and block records
    unfolded: false, // the person opened a folded turn: it stays open
  };
}

// "steered from" the earlier turn's prompt (`earlier`: its entry, if on the page; its id in
// the tooltip).
function steerBadge(from, earlier) {
  const text = earlier && earlier.prompt ? `steered from “${shortPrompt(earlier.prompt)}”` : "steered";
  const badge = element("span", "badge steer", text);
  badge.dataset.steeredFrom = from;
  badge.title = `Steered from turn ${from}`;
  return badge;
}

// Lines of a file as people read them: "a.py:12–14" ("a.py:12" for one).
export function rangeLabel({ path, from_line: from, to_line: to }) {
  return `${path}:${from === to ? `${from}` : `${from}–${to}`}`;
}

// The lines a prompt was about (Ctrl+K): "a.py:12–14", a button that opens them.
function rangeBadge(range) {
  const { path, from_line: from } = range;
  const badge = element("button", "badge turn-range", rangeLabel(range));
  badge.type = "button";
  badge.dataset.rangePath = String(path);
  badge.dataset.line = String(from);
  badge.title = `The prompt is about these lines: open ${path} at line ${from}`;
  return badge;
}

// The header as turn.started says it. earlier: the entry of the turn it was steered from (or
// undefined); person(className, name, what): a person's name in their colour.
export function paintHeader(entry, { prompt, steered_from: steeredFrom, effort, author, range }, earlier, person) {
  entry.prompt = prompt || "";
  const header = entry.header;
  header.replaceChildren(element("span", "turn-prompt", entry.prompt));
  if (range && range.path) header.append(rangeBadge(range));
  if (steeredFrom) header.prepend(steerBadge(steeredFrom, earlier));
  if (effort) header.append(element("span", "badge", effort));
  if (author === WATCHDOG) {
    // The watchdog's correction of a halted turn: its prompt is the finding and the fix.
    entry.article.classList.add("watchdog-turn");
    const badge = element("span", "badge watchdog-steer", steeredFrom ? "steered by watchdog" : "by watchdog");
    badge.title = "The security watchdog halted the turn before and asked the model to fix the flaw";
    header.append(badge);
  } else if (author) {
    header.append(person("turn-author", String(author), steeredFrom ? "Steered by" : "Asked by"));
  }
}
