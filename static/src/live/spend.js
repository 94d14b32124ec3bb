// A turn's tokens and cost as turn.finished carries them (`usage`, `session_usage`: input
// counts the cached input too; cost_usd a decimal string, null when the model has no price;
// estimated: the provider gave no count), as the status bar and a turn's footer say them.
// Money as the server's pages write it (spark_ide/live/usage.py usd()).

const TOKENS = new Intl.NumberFormat("en-US");

export function usd(text) {
  const value = Number(text);
  if (!Number.isFinite(value)) return "";
  return value >= 1 ? `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
    : `$${value.toFixed(4)}`;
}

function known(usage) {
  return usage && typeof usage === "object" && typeof usage.input_tokens === "number";
}

// "1,200 in (800 cached) · 340 out · $0.0042" (≈ before the counts when estimated).
export function usageText(usage) {
  if (!known(usage)) return "";
  const about = usage.estimated ? "≈" : "";
  const cached = usage.cached_input_tokens ? ` (${TOKENS.format(usage.cached_input_tokens)} cached)` : "";
  const parts = [
    `${about}${TOKENS.format(usage.input_tokens)} in${cached}`, `${about}${TOKENS.format(usage.output_tokens)} out`,
  ];
  if (usage.cost_usd !== null && usage.cost_usd !== undefined) parts.push(usd(usage.cost_usd));
  return parts.join(" · ");
}

// "session 12,340 tok · $0.0420": the session's turns so far (the page's server-drawn text,
// then each turn.finished's session_usage).
export function sessionText(usage) {
  if (!known(usage)) return null;
  const about = usage.estimated ? "≈" : "";
  const cost = usage.cost_usd !== null && usage.cost_usd !== undefined ? ` · ${usd(usage.cost_usd)}` : "";
  return `session ${about}${TOKENS.format(usage.input_tokens + usage.output_tokens)} tok${cost}`;
}

// The last turn's cost in the status bar ("" when its model has no price).
export function costText(usage) {
  return known(usage) && usage.cost_usd !== null && usage.cost_usd !== undefined ? `turn ${usd(usage.cost_usd)}` : "";
}
