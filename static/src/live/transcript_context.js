// What a turn's request carried of the workspace (`turn.context`), in its transcript entry:
// the prompt's @-mentions as chips in its header (a click opens the file; a mention of a file
// that is not there is struck out, with a line saying it was skipped), and a "Context" fold
// under the header listing exactly which files and ranges went out (the request without its
// instructions): whole, cut to their head, symbols by their lines, left out for the budget,
// taken out by the person. Its summary has the request's estimated tokens, and once the turn
// has ended the model's own count (`turn.finished` metrics, as far as the provider gave them).
import { element } from "./dom.js";
import { lineRange, tokenWords } from "./context_strip.js";

function mentionChip(mention, why, path) {
  const chip = element("span", `chip mention-chip${why ? " struck" : ""}`, `@${mention}`);
  if (why) chip.title = `${why}: skipped`;
  else chip.dataset.path = path;
  return chip;
}

function row(kind, text) {
  const li = element("li", `context-row row-${kind.replace(" ", "-")}`);
  li.append(element("span", "context-kind", kind), element("span", "context-what", text));
  return li;
}

// The rows of the fold: every file and range the request carried, and what it did not.
function contextRows(context) {
  const rows = [];
  for (const path of context.whole || []) rows.push(row("whole", path));
  for (const cut of context.cut || []) rows.push(row("cut", `${cut.path} · first ${cut.lines} of ${cut.of} lines`));
  for (const symbol of context.symbols || []) {
    rows.push(row("symbol", `${symbol.mention} · ${lineRange(symbol.first, symbol.last)}`));
  }
  for (const path of context.left_out || []) rows.push(row("left out", `${path} · over the context budget`));
  for (const path of context.excluded || []) rows.push(row("excluded", `${path} · taken out before sending`));
  for (const missing of context.missing || []) rows.push(row("skipped", `@${missing.mention} · ${missing.why}`));
  return rows;
}

function summaryWords(context, metrics, usage) {
  const files = (context.whole || []).length + (context.cut || []).length;
  let words = `Context: ${files} file${files === 1 ? "" : "s"} · ${tokenWords(context.tokens, context.budget)} (estimate)`;
  if (metrics) {
    const counted = [];
    // The provider's own count of the request (turn.finished's usage; an estimate is not one,
    // and the metrics carry no input count).
    if (usage && !usage.estimated && typeof usage.input_tokens === "number") counted.push(`${usage.input_tokens} in`);
    if (typeof metrics.tokens === "number") counted.push(`${metrics.tokens} out`);
    if (counted.length) words += ` · model: ${counted.join(", ")}`;
  }
  return words;
}

// turn.context for `entry` (its header drawn by turn.started).
export function paintContext(entry, context) {
  const mentions = context.mentions || [];
  const missing = new Map((context.missing || []).map((item) => [item.mention, item.why]));
  const symbols = new Map((context.symbols || []).map((item) => [item.mention, item.path]));
  const excluded = new Set(context.excluded || []);
  for (const chip of entry.header.querySelectorAll(".mention-chip")) chip.remove(); // told twice: once
  for (const mention of mentions) {
    const path = symbols.get(mention) || (excluded.has(mention) ? mention : mention.split(":")[0]);
    const why = missing.get(mention) || (excluded.has(path) ? "taken out before sending" : "");
    entry.header.append(mentionChip(mention, why, path));
  }
  const box = element("div", "turn-context-box");
  for (const [mention, why] of missing) {
    box.append(element("p", "context-skipped", `@${mention}: ${why} — skipped`));
  }
  const details = element("details", "turn-context");
  details.append(element("summary", "", summaryWords(context, null)));
  // Its rows are drawn when the person opens it: a long session's closed boxes stay a few
  // nodes each.
  details.addEventListener("toggle", () => drawRows(details, context));
  box.append(details);
  if (entry.contextBox) entry.contextBox.remove(); // told twice (a replay): once on the page
  entry.header.after(box);
  entry.contextBox = box;
  entry.context = context;
}

// An opened context box's rows, once (a function of its own: a listener made in paintContext()
// would keep that call's locals).
function drawRows(details, context) {
  if (!details.open || details.querySelector(":scope > .context-rows")) return;
  const list = element("ul", "context-rows");
  list.append(...contextRows(context));
  details.append(list);
}

// The turn ended: the summary adds the model's own count.
export function contextFinished(entry, metrics, usage) {
  if (!entry.contextBox || !entry.context) return;
  entry.contextBox.querySelector("summary").textContent = summaryWords(entry.context, metrics || {}, usage);
}
