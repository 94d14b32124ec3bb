// Small notices: error toasts, invite links with copy buttons, the top bar's
// panels, short labels.

const TOAST_MS = 6000;
const EDGE_PX = 8; // a top bar panel keeps this far from the window's edges

export class Toasts {
  constructor(container) {
    this.container = container;
  }

  show(message, kind = "error") {
    const toast = document.createElement("div");
    toast.className = `toast ${kind}`;
    toast.setAttribute("role", kind === "error" ? "alert" : "status");
    toast.textContent = message;
    toast.title = "Dismiss";
    toast.addEventListener("click", () => toast.remove());
    this.container.append(toast);
    setTimeout(() => toast.remove(), TOAST_MS);
  }
}

const SHORT_PROMPT_CHARS = 48;

// A prompt as a label (status bar, steered-from badge): its first line, at most
// SHORT_PROMPT_CHARS characters. Turn ids stay in tooltips and data attributes.
export function shortPrompt(prompt) {
  const line = String(prompt || "").trim().split("\n", 1)[0].replace(/\s+/g, " ");
  if (!line) return "(no prompt)";
  return line.length > SHORT_PROMPT_CHARS ? `${line.slice(0, SHORT_PROMPT_CHARS - 1).trimEnd()}…` : line;
}

export function userName(user) {
  if (user && typeof user === "object") return user.name || user.username || String(user.id ?? "?");
  return String(user ?? "?");
}

async function copy(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Plain http on another host: the Clipboard API is off, the old way still works.
  const area = document.createElement("textarea");
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const done = document.execCommand("copy");
  area.remove();
  if (!done) throw new Error("copy refused");
}

// Buttons with data-copy="<input id>" copy that input's value.
export function wireCopyButtons(root, toasts) {
  root.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const input = document.getElementById(button.dataset.copy);
    try {
      await copy(input.value);
      toasts.show("Link copied", "ok");
    } catch {
      input.select();
      toasts.show("Copy it by hand: the browser refused", "error");
    }
  });
}

// A top bar panel (the content of a <details> there: Invite, People) opens under its summary
// and moves sideways as far as it must to lie inside the window.
export function keepPanelsInView(root) {
  root.addEventListener("toggle", (event) => {
    const details = event.target;
    if (!(details instanceof HTMLDetailsElement) || !details.open || !details.closest(".topbar")) return;
    const panel = details.querySelector(":scope > :not(summary)");
    if (!panel) return;
    panel.style.translate = "";
    const box = panel.getBoundingClientRect();
    const right = window.innerWidth - EDGE_PX;
    const shift = box.left < EDGE_PX ? EDGE_PX - box.left : Math.min(right - box.right, 0);
    if (shift) panel.style.translate = `${Math.round(shift)}px 0`;
  }, true); // toggle does not bubble
}
