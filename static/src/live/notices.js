// Small notices: error toasts, presence list, invite links with copy buttons.

const TOAST_MS = 6000;

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

export function userName(user) {
  if (user && typeof user === "object") return user.name || user.username || String(user.id ?? "?");
  return String(user ?? "?");
}

export function renderPresence(list, participants) {
  const items = (participants || []).map(({ user, role }) => {
    const item = document.createElement("li");
    item.className = `person role-${role}`;
    item.textContent = userName(user);
    item.title = `${userName(user)} (${role})`;
    return item;
  });
  list.replaceChildren(...items);
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
