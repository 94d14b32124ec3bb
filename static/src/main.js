// Browser entry point: htmx for server-rendered partials, the live editor on workspace and
// session pages, the folder import on the workspace list.
import htmx from "htmx.org";
import { wireFolderImport } from "./folder_import.js";
import { startLiveSession } from "./live/session.js";

window.htmx = htmx;

function boot() {
  const live = document.getElementById("live");
  if (live) startLiveSession(live);
  document.querySelectorAll("form[data-folder-import]").forEach(wireFolderImport);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
