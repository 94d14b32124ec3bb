// The room's model beside the prompt (issue 34; templates/pairing/_model_picker.html): the
// catalogue's entry the next turn runs on. The workspace's owner picks another: the page saves it
// through the workspace API (PATCH `model`), and the room opens that model's connection at once.
// Every page on the room follows its `model` event (sent on join and at each switch), so all of
// them show the model the next turn runs on.
import { patchWorkspace } from "./workspace_patch.js";

export function wireModelPicker(root) {
  const select = root.querySelector("select");
  const status = root.querySelector('[data-model="status"]');
  const editable = !select.disabled;

  const save = async (name) => {
    select.disabled = true;
    status.textContent = "switching…";
    try {
      const body = await patchWorkspace(root.dataset.url, { model: name });
      showModel({ name: body.model });
      status.textContent = "the next turn runs on it";
    } catch (error) {
      select.value = root.dataset.current; // unchanged: the room's model as it is
      status.textContent = `not switched: ${error.message}`;
    } finally {
      select.disabled = !editable;
    }
  };

  if (editable) select.addEventListener("change", () => save(select.value));
}

// The room's `model` event (or the API's answer): show ``event.name`` as the current model.
export function showModel(event) {
  const root = document.getElementById("model-picker");
  const name = String(event.name || "");
  if (!root || !name) return;
  const select = root.querySelector("select");
  if (![...select.options].some((option) => option.value === name)) {
    select.add(new Option(name, name)); // a model this page was not offered (a course's copy)
  }
  select.value = name;
  select.title = event.model ? `${event.provider} ${event.model}` : "";
  root.dataset.current = name;
}
