// Which session events to handle, given how the server sends them (docs/protocol.md §2).
// Turn events carry the room's seq and leave the server in seq order: a connection is sent
// what it missed before it joins the live stream, and merged runs take their newest seq. So a
// turn event at or below the last seq handled is a repeat and is dropped. Ephemeral events
// (the server's list, EPHEMERAL_EVENTS in the generated protocol.js: hello, presence, errors, a
// code run's events, a replaced document, ...) repeat the current seq and are always handled.
// After a `resync` the recent transcript comes again, from older seqs: the marks start over.
import { EPHEMERAL_EVENTS, EVENT } from "../protocol.js";

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
    if (EPHEMERAL_EVENTS.has(event.type) || seq === null) {
      if (event.type === EVENT.HELLO) this.helloSeq = seq;
      if (event.type === EVENT.RESYNC) this.lastSeq = null;
      return true;
    }
    if (this.lastSeq !== null && seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }
}
