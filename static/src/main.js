// Browser entry point: htmx for server-rendered partials, the editor on workspace pages.
import htmx from "htmx.org";
import { startWorkspace } from "./workspace.js";
import { wireFolderImport } from "./folder_import.js";

window.htmx = htmx;

function boot() {
  const ide = document.getElementById("ide");
  if (ide) startWorkspace(ide);
  document.querySelectorAll("form[data-folder-import]").forEach(wireFolderImport);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
