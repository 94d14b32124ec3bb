// Which session events to show, and when, given how the server sends them: every broadcast
// event has a seq, but a connection's outbox merges runs (a merged delta carries the last
// seq of its run) and may reorder under pressure, so seqs have gaps and are not monotonic.
// Answers to one connection (hello, pong, error, resync) repeat the session's current seq.
//
// After a reconnect the server streams live events from the moment we joined, and replays
// what we missed when our `resume` arrives, so live events can come before the replay and
// again inside it. While catching up we hold live events back; once the replay starts they
// are dropped (the replay covers them). A seq already handled is never handled twice.

const DIRECT = new Set(["hello", "pong", "error", "resync"]);
const CATCH_UP_MS = 1500; // a replay that never comes: show what we held
const SEEN_KEPT = 20000;

export class EventOrder {
  // late(events): held events released when no replay came in time.
  constructor(late) {
    this.late = late;
    this.lastSeq = null; // highest seq handled; null until the first hello
    this.seen = new Set();
    this.reconnected = false;
    this.catchUp = null; // {until, held: [], heldMax, timer}
  }

  disconnected() {
    this.reconnected = this.lastSeq !== null;
  }

  // The events to handle now, in order (none, this one, or several).
  accept(event) {
    const seq = typeof event.seq === "number" ? event.seq : null;
    if (event.type === "hello") return this.hello(event, seq);
    if (seq === null || DIRECT.has(event.type)) {
      if (event.type === "resync") return [...this.endCatchUp(true), event];
      return [event];
    }
    if (this.seen.has(seq)) return [];
    if (this.catchUp) {
      const { until, heldMax } = this.catchUp;
      if (seq > until && seq > heldMax) {
        this.catchUp.held.push(event);
        this.catchUp.heldMax = seq;
        return [];
      }
      this.endCatchUp(false); // the replay has begun: it carries what we held
    }
    return this.handled(event, seq) ? [event] : [];
  }

  hello(event, seq) {
    const out = [event];
    if (this.lastSeq === null || seq === null) {
      this.lastSeq = seq;
    } else if (this.reconnected && seq < this.lastSeq) {
      // A restarted server numbers from zero again: our marks mean nothing there, and the
      // page reloads its state as after a `resync`.
      this.seen.clear();
      this.lastSeq = seq;
      out.push({ type: "resync", reason: "the server restarted" });
    } else if (this.reconnected && seq > this.lastSeq) {
      const timer = setTimeout(() => this.late(this.endCatchUp(true)), CATCH_UP_MS);
      this.catchUp = { until: seq, held: [], heldMax: seq, timer };
    }
    this.reconnected = false;
    return out;
  }

  // keep: hand back the held events (no replay came), else drop them.
  endCatchUp(keep) {
    if (!this.catchUp) return [];
    const { held, timer } = this.catchUp;
    clearTimeout(timer);
    this.catchUp = null;
    return keep ? held.filter((event) => this.handled(event, event.seq)) : [];
  }

  handled(event, seq) {
    if (this.seen.has(seq)) return false;
    this.seen.add(seq);
    if (this.lastSeq === null || seq > this.lastSeq) this.lastSeq = seq;
    if (this.seen.size > SEEN_KEPT) {
      const floor = this.lastSeq - SEEN_KEPT / 2;
      for (const old of this.seen) if (old < floor) this.seen.delete(old);
    }
    return true;
  }
}
