// The browser benchmark's probe, installed before any page script (Playwright init script).
// It only counts and timestamps: animation frames, long tasks, session socket frames, and
// (when asked) the moment the editor shows a given line. Nothing here parses the stream.
(() => {
  const bench = {
    recording: false,
    startAt: 0,
    endAt: 0,
    frames: 0,
    lastFrameAt: 0,
    gaps: [],
    longTasks: [], // [startTime, duration], every one since the page loaded
    socketFrames: 0,
    binaryFrames: 0,
    lastBinaryAt: null,
    needle: null, // a line to look for: the frame that brings it, then the editor showing it
    needleFrameAt: null,
    needleShownAt: null,
    binaryBeforeShown: null, // the last binary frame before the editor showed it (fallback)
    finished: [], // [performance.now(), turn.finished event] as the page handled them
    observer: null,
    poll: 0,
  };
  window.__bench = bench;

  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) bench.longTasks.push([entry.startTime, entry.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch {
    bench.longTasks = null; // not supported: reported as such, never as zero
  }

  // Frames that took over 50 ms (Long Animation Frames): what ran in them, so a long gap
  // between frames says where its time went (null where the API is missing).
  bench.longFrames = [];
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        bench.longFrames.push({
          start: entry.startTime,
          ms: entry.duration,
          styleAndLayoutMs: entry.startTime + entry.duration - entry.styleAndLayoutStart,
          // Who ran, for how long, of which forced style and layout, and where (the function
          // and its place in the bundle: named with an unminified --bundle).
          scripts: entry.scripts.map((script) => [
            script.invoker, script.duration, script.forcedStyleAndLayoutDuration,
            `${script.sourceFunctionName || "?"}@${script.sourceCharPosition}`,
          ]),
        });
      }
    }).observe({ type: "long-animation-frame", buffered: true });
  } catch {
    bench.longFrames = null;
  }

  const onFrame = (at) => {
    if (bench.recording) {
      bench.frames += 1;
      if (bench.lastFrameAt) bench.gaps.push(at - bench.lastFrameAt);
    }
    bench.lastFrameAt = at;
    requestAnimationFrame(onFrame);
  };
  requestAnimationFrame(onFrame);

  const decoder = new TextDecoder();
  const Native = window.WebSocket;
  class TimedSocket extends Native {
    constructor(...args) {
      super(...args);
      // Added before the page's own listener, so it runs first: the time the page got it.
      this.addEventListener("message", (message) => {
        const now = performance.now();
        bench.socketFrames += 1;
        if (typeof message.data === "string") return;
        bench.binaryFrames += 1;
        bench.lastBinaryAt = now;
        if (bench.needle !== null && bench.needleFrameAt === null
            && decoder.decode(message.data).includes(bench.needle)) bench.needleFrameAt = now;
      });
    }
  }
  window.WebSocket = TimedSocket;

  // Server-rendered panels swapped in by htmx (the turn history after every turn, the file
  // tree): their time, to tell their long tasks from the live page's own.
  let swapStart = null;
  bench.swaps = [];
  document.addEventListener("htmx:beforeSwap", () => { swapStart = performance.now(); }, true);
  document.addEventListener("htmx:afterSwap", (event) => {
    if (swapStart !== null) bench.swaps.push([swapStart, performance.now(), event.target.id || ""]);
    swapStart = null;
  }, true);

  // The IDE page tells of each finished turn on document.body (not bubbling: caught in capture).
  window.addEventListener("spark:turn-finished", (event) => {
    bench.finished.push([performance.now(), event.detail]);
  }, true);

  // The editor holds `needle` as line `number` of its document (not as the ghost of an
  // unfinished line): read from the view's state, found from its content DOM, in O(log n).
  function editorHolds(needle, number) {
    const content = document.querySelector("#editor .cm-content");
    const tile = content && (content.cmTile || content.cmView);
    const view = tile && ((tile.root && tile.root.view) || (tile.rootView && tile.rootView.view));
    if (!view) return false;
    const doc = view.state.doc;
    return doc.lines >= number && doc.line(number).text === needle;
  }

  bench.begin = () => {
    bench.recording = true;
    bench.startAt = performance.now();
    bench.frames = 0;
    bench.gaps = [];
    bench.socketFrames = 0;
    bench.binaryFrames = 0;
  };

  bench.end = () => {
    bench.recording = false;
    bench.endAt = performance.now();
    const inWindow = bench.longTasks === null ? null
      : bench.longTasks.filter(([start]) => start >= bench.startAt && start <= bench.endAt);
    const swaps = bench.swaps.filter(([start]) => start >= bench.startAt && start <= bench.endAt);
    // A long task that holds a swap: the panel's HTML parsed and put in, not the live page.
    const swapping = inWindow === null ? null : inWindow.filter(([start, duration]) =>
      swaps.some(([from, to]) => from >= start && to <= start + duration));
    return {
      ms: bench.endAt - bench.startAt,
      frames: bench.frames,
      gaps: bench.gaps,
      longTasks: inWindow,
      swapLongTasks: swapping,
      swaps: swaps.map(([from, to, target]) => [to - from, target]),
      socketFrames: bench.socketFrames,
      binaryFrames: bench.binaryFrames,
      longFrames: bench.longFrames === null ? null
        : bench.longFrames.filter(({ start }) => start >= bench.startAt && start <= bench.endAt),
    };
  };

  // Watch for `needle` as line `number` of the editor's document: checked on every change
  // of the editor's DOM (CodeMirror updates it in the same dispatch as its state), and every
  // 20 ms in case the change lies outside the rendered viewport.
  bench.watch = (needle, number) => {
    bench.needle = needle;
    bench.needleFrameAt = null;
    bench.needleShownAt = null;
    bench.binaryBeforeShown = null;
    if (bench.observer) bench.observer.disconnect();
    clearInterval(bench.poll);
    const check = () => {
      if (bench.needleShownAt !== null || !editorHolds(needle, number)) return;
      bench.needleShownAt = performance.now();
      bench.binaryBeforeShown = bench.lastBinaryAt;
      bench.observer.disconnect();
      clearInterval(bench.poll);
    };
    bench.observer = new MutationObserver(check);
    bench.observer.observe(document.getElementById("editor"), {
      childList: true, subtree: true, characterData: true, attributes: true,
    });
    bench.poll = setInterval(check, 20);
    check();
  };

  bench.watched = () => ({
    frameAt: bench.needleFrameAt, shownAt: bench.needleShownAt, binaryBeforeShown: bench.binaryBeforeShown,
  });
})();
