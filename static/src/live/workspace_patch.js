// A change to the workspace's settings through the workspace API (PATCH /api/workspaces/<id>):
// the test-rounds switch (auto_test.js) and the model picker (model_picker.js) both save this way.

// The CSRF token every page carries for htmx (base.html: the body's hx-headers).
export function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  } catch {
    return "";
  }
}

// PATCH `fields` to the workspace at `url`; the workspace as the server now has it, or an Error
// with the server's message (or its status when it sent none).
export async function patchWorkspace(url, fields) {
  const response = await fetch(url, {
    method: "PATCH",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify(fields),
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(body?.error?.message || `the server answered ${response.status}`);
  return body;
}
