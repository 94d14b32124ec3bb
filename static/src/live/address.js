// The page's address names the file in front ("#path": a reload or a shared link opens it).
// Writing it (history.replaceState) is a round trip to the browser's own process: 5 to 22 ms
// of the main thread measured at 20k tokens/s, in the very task that switches the editor to
// the file the model just started writing. A switch the model's stream makes (`later`) is
// written when the page is idle (at most ADDRESS_DELAY_MS after), once for any number of
// switches meanwhile: the last one. Any other switch writes it at once, with anything waiting:
// a person who picks a tab and reloads gets that tab (a reload takes the address as it is; one
// written as the page unloads is not taken).

const ADDRESS_DELAY_MS = 500;

let wanted = null; // the hash to write ("" for none), null: nothing waits
const idle = window.requestIdleCallback
  ? (write) => window.requestIdleCallback(write, { timeout: ADDRESS_DELAY_MS })
  : (write) => setTimeout(write, 50);

function write() {
  const hash = wanted;
  wanted = null;
  if (hash === null) return;
  if (window.location.hash === hash || (hash === "" && !window.location.hash)) return;
  history.replaceState(history.state, "", hash || "#");
}

// `path` is in front now (null: no file); `later`: the model's follow put it there.
export function showAddress(path, { later = false } = {}) {
  const first = wanted === null;
  wanted = path === null ? "" : `#${encodeURI(path)}`;
  if (!later) write();
  else if (first) idle(write);
}
