// Browser entry point: htmx for server-rendered partials, the editor on workspace pages,
// the live pairing page on session pages.
import htmx from "htmx.org";
import { startWorkspace } from "./workspace.js";
import { wireFolderImport } from "./folder_import.js";
import { startLiveSession } from "./live/session.js";

window.htmx = htmx;

function boot() {
  const ide = document.getElementById("ide");
  if (ide) startWorkspace(ide);
  const live = document.getElementById("live");
  if (live) startLiveSession(live);
  document.querySelectorAll("form[data-folder-import]").forEach(wireFolderImport);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
