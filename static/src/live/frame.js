// One flush per animation frame for everything that arrives faster than the screen shows it:
// Yjs updates, live decorations, transcript text, status figures. Flushers run in the order
// they were added.

// Background tabs get no animation frames; this timer keeps them in sync at a slower pace.
const HIDDEN_TAB_DELAY_MS = 200;

export class FrameLoop {
  constructor() {
    this.flushers = [];
    this.scheduled = false;
    this.frame = 0;
    this.timer = 0;
  }

  add(flush) {
    this.flushers.push(flush);
  }

  request() {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => this.run();
    this.frame = requestAnimationFrame(run);
    this.timer = setTimeout(run, HIDDEN_TAB_DELAY_MS);
  }

  run() {
    if (!this.scheduled) return;
    this.scheduled = false;
    cancelAnimationFrame(this.frame);
    clearTimeout(this.timer);
    for (const flush of this.flushers) {
      try {
        flush();
      } catch (error) {
        // One broken flusher must not freeze the others; rethrown so it is still reported.
        queueMicrotask(() => { throw error; });
      }
    }
  }
}
