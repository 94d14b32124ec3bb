// The row of file tabs of the live editor.

// tabs: [{path, active, extraClass}]; onPick(path) and onClose(path) are called on clicks.
export function renderTabBar(bar, tabs, { onPick, onClose }) {
  const buttons = tabs.map(({ path, active, extraClass }) => {
    const button = document.createElement("button");
    button.className = "tab" + (active ? " active" : "") + (extraClass ? ` ${extraClass}` : "");
    button.setAttribute("role", "tab");
    button.setAttribute("aria-selected", String(active));
    button.dataset.path = path;
    button.title = path;
    button.textContent = path.split("/").pop();
    const close = document.createElement("span");
    close.className = "close";
    close.textContent = "×";
    close.title = "Close";
    close.addEventListener("click", (event) => { event.stopPropagation(); onClose(path); });
    button.append(close);
    button.addEventListener("click", () => onPick(path));
    return button;
  });
  bar.replaceChildren(...buttons);
}
