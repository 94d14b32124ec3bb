// The name of the document event a live page fires when the server says the workspace's
// settings changed (workspace.settings {changed, by}: docs/protocol.md); `detail` is that event.
// Each setting's control listens for it (auto_test.js) and shows the new value.
export const SETTINGS_CHANGED = "spark:workspace-settings";
