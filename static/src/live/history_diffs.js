// The history panel is drawn again after every turn and on a page's catch-up (#history's
// hx-trigger). A diff someone opened stays open across a redraw and is loaded again; and a
// diff opened in the moment between a redraw's swap and htmx wiring the new panel (its settle)
// is loaded too, where its "toggle" would have gone unheard.
import htmx from "htmx.org";

const DIFF = "details.history-diff";

export function keepOpenDiffs(history) {
  let open = new Set(); // the hx-get of each diff open when the redraw came
  const mine = (event) => event.detail && event.detail.target === history;
  history.addEventListener("htmx:beforeSwap", (event) => {
    if (!mine(event)) return;
    open = new Set([...history.querySelectorAll(`${DIFF}[open]`)].map((details) => details.getAttribute("hx-get")));
  });
  // Opened again as soon as the new copy is in the page, so it never shows closed.
  history.addEventListener("htmx:afterSwap", (event) => {
    if (!mine(event)) return;
    for (const details of history.querySelectorAll(DIFF)) {
      if (open.has(details.getAttribute("hx-get"))) details.open = true;
    }
    open = new Set();
  });
  // Loaded once htmx has wired the new copy. Its trigger is "toggle once": a second toggle
  // after the one htmx heard sends nothing.
  history.addEventListener("htmx:afterSettle", (event) => {
    if (!mine(event)) return;
    for (const details of history.querySelectorAll(DIFF)) {
      if (details.open) htmx.trigger(details, "toggle");
    }
  });
}
