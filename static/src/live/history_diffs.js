// The history panel (#history) is drawn again by htmx after every turn and on a page's
// catch-up (its hx-trigger), but what it draws is under hx-disable: htmx reads every attribute
// of the content it wires, and Blink keeps a node for each attribute read as long as its
// element lives (a long session's panel held more of those than elements). So this module
// does the panel's own requests, from listeners on #history itself: a diff loads when it is
// first opened, and the "show all" buttons load the panel. A diff someone opened stays open
// across a redraw and is loaded again, and a checkpoint's name being typed stays as typed
// (its text, focus and caret): a redraw comes whenever anyone's turn or restore lands.
import htmx from "htmx.org";

const DIFF = "details.history-diff";
const TYPED = "[data-checkpoint-create] input[name=name]";

// One diff's highlighted text into its body, once.
function loadDiff(details) {
  if (details.dataset.loaded) return;
  details.dataset.loaded = "true";
  const body = details.querySelector(".diff-body");
  fetch(details.dataset.diff, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.text() : Promise.reject(new Error(String(response.status)))))
    .then((html) => {
      body.innerHTML = html;
      body.classList.remove("hint");
    })
    .catch(() => {
      delete details.dataset.loaded; // opening it again tries again
      body.textContent = "Could not load the diff.";
    });
}

export function keepAcrossRedraws(history) {
  let open = new Set(); // the URL of each diff open when the redraw came
  let typed = null; // the name being typed when the redraw came
  const mine = (event) => event.detail && event.detail.target === history;
  // "toggle" does not bubble: heard on its way down, for every copy of the panel.
  history.addEventListener("toggle", (event) => {
    const details = event.target;
    if (details.matches && details.matches(DIFF) && details.open) loadDiff(details);
  }, true);
  history.addEventListener("click", (event) => {
    const button = event.target.closest("[data-history-load]");
    if (button) htmx.ajax("GET", button.dataset.historyLoad, { target: history, swap: "innerHTML" });
  });
  history.addEventListener("htmx:beforeSwap", (event) => {
    if (!mine(event)) return;
    open = new Set([...history.querySelectorAll(`${DIFF}[open]`)].map((details) => details.dataset.diff));
    typed = typing(history.querySelector(TYPED));
  });
  // Opened again as soon as the new copy is in the page, so it never shows closed (its
  // toggle loads it).
  history.addEventListener("htmx:afterSwap", (event) => {
    if (!mine(event)) return;
    for (const details of history.querySelectorAll(DIFF)) {
      if (open.has(details.dataset.diff)) details.open = true;
    }
    open = new Set();
    const input = history.querySelector(TYPED);
    if (typed && input) {
      input.value = typed.value;
      if (typed.focused) {
        input.focus();
        input.setSelectionRange(typed.start, typed.end);
      }
    }
    typed = null;
  });
}

// What `input` holds, if anything, and whether the person is in it.
function typing(input) {
  if (!input) return null;
  const focused = document.activeElement === input;
  if (!input.value && !focused) return null;
  return { value: input.value, focused, start: input.selectionStart, end: input.selectionEnd };
}
