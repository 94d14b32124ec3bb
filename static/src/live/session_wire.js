// The live page's clicks and page events that are not any one part's: a file link, a revert
// or restore button, the tree's open, rename and delete, the course's AI policy line.
import { keepPanelsInView, wireCopyButtons } from "./notices.js";

// parts: the session's tabs, follow, landing, reverts, checkpoints, tree, runs, toasts and
// provider; canDrive: this person may revert and restore turns and checkpoints.
export function wirePage(root, { tabs, follow, landing, reverts, checkpoints, tree, runs, toasts, provider }, canDrive) {
  root.addEventListener("click", (event) => {
    if (canDrive && checkpoints.clicked(event.target)) return;
    const link = event.target.closest("[data-open]");
    if (link) {
      event.preventDefault();
      if (link.dataset.open !== tabs.active) follow.byHand();
      landing.byHand();
      tabs.filePicked();
      tabs.open(link.dataset.open);
      return;
    }
    const revert = event.target.closest("[data-revert]");
    if (revert && canDrive) reverts.ask(revert.dataset.revert, revert);
    const restore = event.target.closest("[data-restore]");
    if (restore && canDrive) reverts.restore(restore.dataset.restore, restore);
  });
  root.addEventListener("submit", (event) => {
    if (canDrive && checkpoints.submitted(event.target)) event.preventDefault();
  });
  // Any click in the tab bar or the editor: where the person landed is theirs now.
  for (const part of [root.querySelector("#tabs"), root.querySelector("#editor")]) {
    part.addEventListener("pointerdown", () => landing.byHand());
  }
  const body = document.body;
  tree.wire(body);
  body.addEventListener("spark:open", (event) => { landing.byHand(); tabs.open(event.detail.path); });
  body.addEventListener("spark:renamed", (event) => tabs.renamed(event.detail.path, event.detail.new_path));
  body.addEventListener("spark:deleted", (event) => tabs.close(event.detail.path));
  runs.wireShortcut(document);
  wireCopyButtons(document.body, toasts);
  keepPanelsInView(document.body);
  window.addEventListener("pagehide", () => provider.leave());
}

// The course's AI rules as they stand (mode, effort cap, tokens left): one line by the prompt.
export function showPolicy(event) {
  const line = document.getElementById("ai-policy");
  if (!line) return;
  line.textContent = String(event.label || "");
  line.hidden = !line.textContent;
}

// The file the page's address names after its "#" ("" for none).
export function addressedPath() {
  const named = window.location.hash.slice(1);
  try {
    return decodeURIComponent(named);
  } catch {
    return named; // a path with a lone "%" was written to the address as it is
  }
}
