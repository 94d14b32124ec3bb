// One flush per animation frame for everything that arrives faster than the screen shows it:
// Yjs updates, live decorations, transcript text, status figures. Flushers run in the order
// they were added.

// Background tabs get no animation frames; a timer keeps them in sync at a slower pace. It is
// armed once and left to run out, not set and cleared on every frame (a timer's setTimeout and
// clearTimeout pair, 60 times a second, showed in the page's profiles): whenever a flush is
// requested, one timer is pending, so a page without frames flushes within this delay.
const HIDDEN_TAB_DELAY_MS = 200;

export class FrameLoop {
  constructor() {
    this.flushers = [];
    this.scheduled = false;
    this.frame = 0;
    this.timer = 0;
    this.onFrame = () => this.run();
    this.onTimer = () => {
      this.timer = 0;
      if (!this.scheduled) return;
      cancelAnimationFrame(this.frame);
      this.run();
    };
  }

  add(flush) {
    this.flushers.push(flush);
  }

  request() {
    if (this.scheduled) return;
    this.scheduled = true;
    this.frame = requestAnimationFrame(this.onFrame);
    if (!this.timer) this.timer = setTimeout(this.onTimer, HIDDEN_TAB_DELAY_MS);
  }

  run() {
    if (!this.scheduled) return;
    this.scheduled = false;
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
