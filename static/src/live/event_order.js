// Which session events to handle, given how the server sends them (docs/protocol.md §2).
// Turn events carry the room's seq and leave the server in seq order: a connection is sent
// what it missed before it joins the live stream, and merged runs take their newest seq. So a
// turn event at or below the last seq handled is a repeat and is dropped. Ephemeral events
// (hello, pong, error, presence, resync, a code run's events, policy, the watchdog's diagnostics,
// a replaced document: every binary frame after it is of the new one) repeat the current seq
// and are always handled.
// After a `resync` the recent transcript comes again, from older seqs: the marks start over.

const EPHEMERAL = new Set([
  "hello", "pong", "error", "presence", "resync", "run.started", "run.output", "run.finished", "policy",
  "guard.diagnostics", "document.replaced",
]);

export class EventOrder {
  constructor() {
    this.lastSeq = null; // the highest turn-event seq handled; null: nothing yet
    this.helloSeq = null; // the room's seq when we (re)joined
  }

  // The seq to resume after on a reconnect (the server replays what came after it).
  get resumeAfter() {
    if (this.lastSeq !== null && this.helloSeq !== null) return Math.max(this.lastSeq, this.helloSeq);
    return this.lastSeq ?? this.helloSeq;
  }

  // True when the page should handle `event`.
  accept(event) {
    const seq = typeof event.seq === "number" ? event.seq : null;
    if (EPHEMERAL.has(event.type) || seq === null) {
      if (event.type === "hello") this.helloSeq = seq;
      if (event.type === "resync") this.lastSeq = null;
      return true;
    }
    if (this.lastSeq !== null && seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }
}
