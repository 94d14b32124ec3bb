// Browser entry point: htmx for server-rendered partials, the live editor, its latency panel
// the test-rounds switch and the model picker on workspace and session pages, a session's replay, the
// resizable panels of both, the folder import on the workspace list.
import htmx from "htmx.org";
import { cspNonce } from "./csp.js";
import { wireFolderImport } from "./folder_import.js";
import { wireAutoTest } from "./live/auto_test.js";
import { wireModelPicker } from "./live/model_picker.js";
import { startLatencyPanel } from "./live/latency.js";
import { startLiveSession } from "./live/session.js";
import { startReplay } from "./replay/replay.js";
import { startSplitters } from "./splitter.js";

// Under the page's Content-Security-Policy: htmx evaluates no attribute as code (hx-on,
// "js:" values, trigger filters) and runs no <script> it swaps in (the policy would refuse
// them anyway; refused here they do not even reach the browser), and its indicator styles
// carry the page's nonce. Set before DOMContentLoaded, when htmx reads its config.
htmx.config.allowEval = false;
htmx.config.allowScriptTags = false;
htmx.config.inlineStyleNonce = cspNonce();
window.htmx = htmx;

function boot() {
  const live = document.getElementById("live");
  const latency = document.getElementById("latency");
  if (latency) startLatencyPanel(latency); // first: it hears every turn event the session sends
  if (live) startLiveSession(live);
  const autoTest = document.getElementById("auto-test");
  if (autoTest) wireAutoTest(autoTest); // the workspace's test-rounds switch
  const modelPicker = document.getElementById("model-picker");
  if (modelPicker) wireModelPicker(modelPicker); // the room's model (issue 34)
  const replay = document.getElementById("replay");
  if (replay) startReplay(replay);
  startSplitters(); // the live and replay pages' resizable panels
  document.querySelectorAll("form[data-folder-import]").forEach(wireFolderImport);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
