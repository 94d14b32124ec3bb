// One flush per animation frame for everything that arrives faster than the screen shows it:
// Yjs updates, live decorations, transcript text, status figures. Flushers run in the order
// they were added.

// Background tabs get no animation frames; a timer keeps them in sync at a slower pace. It is
// armed once and left to run out, not set and cleared on every frame (a timer's setTimeout and
// clearTimeout pair, 60 times a second, showed in the page's profiles): whenever a flush is
// requested, one timer is pending, so a page without frames flushes within this delay. A page
// that had frames since the timer was armed is left to them: the timer is armed again instead
// of flushing (a flush from the timer, between two frames of a stream, took the frame's work
// out of the frame into a task of its own, 6-20 ms, and showed in the traces' longest gaps).
const HIDDEN_TAB_DELAY_MS = 200;

export class FrameLoop {
  constructor() {
    this.flushers = [];
    this.scheduled = false;
    this.frame = 0;
    this.timer = 0;
    this.framed = false; // a frame ran since the timer was armed
    this.onFrame = () => {
      this.framed = true;
      this.run();
    };
    this.onTimer = () => {
      this.timer = 0;
      if (!this.scheduled) return;
      if (this.framed) {
        this.arm(); // frames come: the one requested flushes
        return;
      }
      cancelAnimationFrame(this.frame);
      this.run();
    };
  }

  arm() {
    this.framed = false;
    this.timer = setTimeout(this.onTimer, HIDDEN_TAB_DELAY_MS);
  }

  add(flush) {
    this.flushers.push(flush);
  }

  request() {
    if (this.scheduled) return;
    this.scheduled = true;
    this.frame = requestAnimationFrame(this.onFrame);
    if (!this.timer) this.arm();
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
