// The workspace's test-rounds switch under the editor (issue 30; templates/pairing/_auto_test.html):
// after a round of the model's changes the IDE runs the tests, and a failure goes back to the
// model to fix. The checkbox shows whether that happens here: the workspace's own choice, else
// the server's default (SPARK_AUTO_TEST). Changing it saves the workspace's choice through the
// workspace API (PATCH `auto_test`: true or false; "use the server's default" sends null). The
// room reads the choice at every turn, so it applies from the next one. Every page open on the
// workspace follows a change at once: the server tells them (workspace.settings, which the
// session hands on as the document's SETTINGS_CHANGED event).
import { SETTINGS_CHANGED } from "./settings_changed.js";
import { patchWorkspace } from "./workspace_patch.js";

const SAVED = "saved: it applies from the next turn";

// "true" | "false" | "null" (the template's data-choice) -> true | false | null.
export function parseChoice(raw) {
  if (raw === "true") return true;
  if (raw === "false") return false;
  return null;
}

// What the line says after the checkbox: whose choice it shows.
export function choiceSource(choice, serverDefault) {
  if (choice === null) return `(the server's default: ${serverDefault ? "on" : "off"})`;
  return "(this workspace's choice)";
}

export function wireAutoTest(root) {
  const box = root.querySelector('input[type="checkbox"]');
  const field = (name) => root.querySelector(`[data-auto-test="${name}"]`);
  const source = field("source");
  const reset = field("reset");
  const status = field("status");
  const serverDefault = root.dataset.default === "true";
  const editable = !box.disabled;
  let choice = parseChoice(root.dataset.choice);

  const show = () => {
    box.checked = choice === null ? serverDefault : choice;
    source.textContent = choiceSource(choice, serverDefault);
    if (reset) reset.hidden = choice === null;
    root.dataset.choice = choice === null ? "null" : String(choice);
  };

  const save = async (value) => {
    box.disabled = true;
    status.textContent = "saving…";
    try {
      const body = await patchWorkspace(root.dataset.url, { auto_test: value });
      choice = typeof body?.auto_test === "boolean" ? body.auto_test : null;
      status.textContent = SAVED;
    } catch (error) {
      status.textContent = `not saved: ${error.message}`;
    } finally {
      box.disabled = !editable;
      show();
    }
  };

  if (editable) {
    box.addEventListener("change", () => save(box.checked));
    reset?.addEventListener("click", () => save(null));
  }
  // Someone changed it on another page (or this one: the same value).
  document.addEventListener(SETTINGS_CHANGED, ({ detail }) => {
    const changed = detail?.changed;
    if (!changed || !Object.hasOwn(changed, "auto_test")) return;
    choice = typeof changed.auto_test === "boolean" ? changed.auto_test : null;
    if (detail.by) status.textContent = `changed by ${detail.by}: it applies from the next turn`;
    show();
  });
  show();
}
