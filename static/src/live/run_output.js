// A code run's output on the page: stdout and stderr interleaved in the order they came, what
// the person typed for the program among them. Text arrives in many small events; it is queued
// (OutputQueue) and drawn at most FRAME_CHARS a frame (OutputView), and the page keeps about
// PAGE_CHARS of it: the server caps a run's output (64 KB), this keeps the page light even if
// a server does not.

export const FRAME_CHARS = 16384;
export const PAGE_CHARS = 131072;
// A span holds at most this much: appending to a long text node lays out all of it again.
const SPAN_CHARS = 4096;
// And at most this many spans (output that switches streams on every line makes many).
const MAX_SPANS = 2000;
const STREAM_CLASSES = { stdout: "out", stderr: "err", stdin: "in" };

// Where to cut `text` to take at most `limit` characters: never between a surrogate pair.
export function cutAt(text, limit) {
  if (text.length <= limit) return text.length;
  const high = text.charCodeAt(limit - 1);
  return high >= 0xd800 && high <= 0xdbff ? limit - 1 : limit;
}

// Output waiting for the next frame, as pieces {stream, text} with neighbours of one stream
// merged. What could never be shown (more than PAGE_CHARS behind it) is dropped at once,
// counted in `dropped`: a hidden tab gets no frames and must not pile up a run's output.
export class OutputQueue {
  constructor(limit = PAGE_CHARS) {
    this.limit = limit;
    this.pieces = [];
    this.chars = 0;
    this.dropped = 0;
  }

  get empty() {
    return this.pieces.length === 0;
  }

  push(stream, text) {
    if (!text) return;
    const last = this.pieces[this.pieces.length - 1];
    if (last && last.stream === stream) last.text += text;
    else this.pieces.push({ stream, text });
    this.chars += text.length;
    while (this.chars > this.limit) {
      const head = this.pieces[0];
      const over = this.chars - this.limit;
      let cut = cutAt(head.text, over);
      if (cut < over) cut = Math.min(head.text.length, over + 1); // the whole pair goes
      if (cut === head.text.length) this.pieces.shift();
      else head.text = head.text.slice(cut);
      this.chars -= cut;
      this.dropped += cut;
    }
  }

  // The oldest pieces, `budget` characters at most; the rest stays queued.
  take(budget) {
    const out = [];
    while (budget > 0 && this.pieces.length) {
      const head = this.pieces[0];
      const cut = cutAt(head.text, budget);
      if (cut === 0) break; // only half a pair fits: it waits for the next frame
      out.push({ stream: head.stream, text: head.text.slice(0, cut) });
      if (cut === head.text.length) this.pieces.shift();
      else head.text = head.text.slice(cut);
      this.chars -= cut;
      budget -= cut;
    }
    return out;
  }

  clear() {
    this.pieces = [];
    this.chars = 0;
    this.dropped = 0;
  }
}

// The output box: spans of one stream each, oldest first; past PAGE_CHARS the oldest leave the
// page and a note at the top says how much is no longer shown. It follows the end unless the
// person scrolled up to read.
export class OutputView {
  // scroller: the scrolling box; pre: the <pre> inside it the text goes into
  constructor(scroller, pre) {
    this.scroller = scroller;
    this.pre = pre;
    this.spans = []; // {node, text (its Text node), stream, chars}
    this.shown = 0;
    this.hidden = 0; // characters that left the page (or never reached it)
    this.note = null;
    this.stick = true;
    this.ownScroll = false; // the next scroll event is ours: it leaves `stick` as it is
    // The scroll happens after the browser's own layout of the frame (no forced layout).
    this.resized = new ResizeObserver(() => { if (this.stick) this.toEnd(); });
    this.resized.observe(pre);
    scroller.addEventListener("scroll", () => {
      if (this.ownScroll) this.ownScroll = false;
      else this.stick = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 24;
    }, { passive: true });
  }

  append(stream, text) {
    while (text) {
      let span = this.spans[this.spans.length - 1];
      if (!span || span.stream !== stream || span.chars >= SPAN_CHARS) {
        const node = document.createElement("span");
        node.className = STREAM_CLASSES[stream] || "out";
        const textNode = document.createTextNode("");
        node.append(textNode);
        this.pre.append(node);
        span = { node, text: textNode, stream, chars: 0 };
        this.spans.push(span);
      }
      const cut = Math.max(1, cutAt(text, SPAN_CHARS - span.chars));
      span.text.appendData(text.slice(0, cut));
      span.chars += cut;
      this.shown += cut;
      text = text.slice(cut);
    }
    this.trim();
  }

  // Output that was dropped before it was drawn.
  skipped(chars) {
    if (chars <= 0) return;
    this.hidden += chars;
    this.showNote();
  }

  trim() {
    let moved = false;
    while ((this.shown > PAGE_CHARS || this.spans.length > MAX_SPANS) && this.spans.length > 1) {
      const span = this.spans.shift();
      span.node.remove();
      this.shown -= span.chars;
      this.hidden += span.chars;
      moved = true;
    }
    if (moved) this.showNote();
  }

  showNote() {
    if (!this.note) {
      this.note = document.createElement("p");
      this.note.className = "run-earlier";
      this.scroller.prepend(this.note);
    }
    const kb = Math.max(1, Math.round(this.hidden / 1024));
    this.note.textContent = `The first ${kb} KB of this output are no longer shown here (History keeps the run)`;
  }

  clear() {
    this.pre.replaceChildren();
    this.spans = [];
    this.shown = 0;
    this.hidden = 0;
    if (this.note) this.note.remove();
    this.note = null;
    this.stick = true;
  }

  toEnd() {
    const box = this.scroller;
    const bottom = box.scrollHeight - box.clientHeight;
    if (box.scrollTop >= bottom - 1) return;
    this.ownScroll = true;
    box.scrollTop = bottom;
  }
}
