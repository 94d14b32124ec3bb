// The replay's data over time (pure: no page, no Yjs): which document updates and turn events
// have happened by a moment, the checkpoint or fresh update to seek from, how much of a merged
// run of text is out, and where playback may jump over a pause. Times are ms from the
// session's start.
//
// The data (GET /sessions/<id>/replay/data, spark_ide/replay/services.py):
//   checkpoints [{t, n, state}]: the whole document (base64 Yjs update) holding updates[0..n)
//   updates [[t, base64 Yjs update]], or [t, base64 Yjs update, 1] for a fresh one: the room
//     replaced its document by a new one (new item ids), and this is all of it; nothing before
//     it applies after it, so the document starts over from it (a checkpoint with n = i + 1).
//   events [{...turn event, seq, t, d?}], marks, end.

// With nothing happening for longer than this ahead, playback jumps to just before the next
// thing (LEAD_MS early, so it is seen coming).
export const IDLE_MS = 1500;
export const LEAD_MS = 300;

// The number of sorted `times` that are <= t.
export function countUpTo(times, t) {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (times[mid] <= t) low = mid + 1;
    else high = mid;
  }
  return low;
}

// How many characters of a merged run (an event with a duration `d`) are out at t: its text
// is spread evenly over its span; never the half of a surrogate pair.
export function shownChars(event, t) {
  const text = typeof event.text === "string" ? event.text : "";
  if (!event.d || t >= event.t + event.d) return text.length;
  if (t < event.t) return 0;
  let chars = Math.floor((text.length * (t - event.t)) / event.d);
  if (chars > 0 && chars < text.length && /[\uD800-\uDBFF]/.test(text[chars - 1])) chars -= 1;
  return chars;
}

export class Timeline {
  constructor(data) {
    this.start = data.start;
    this.end = Math.max(0, data.end || 0);
    this.checkpoints = data.checkpoints || [];
    this.updates = data.updates || [];
    this.events = data.events || [];
    this.marks = data.marks || [];
    this.updateTimes = this.updates.map((update) => update[0]);
    this.fresh = this.updates.flatMap((update, i) => (update[2] ? [i] : [])); // the fresh updates' indexes
    this.eventTimes = this.events.map((event) => event.t);
    // Runs of text end after they start: the latest end so far, per event, for "is a run still
    // being written at t".
    let until = 0;
    this.runEnds = this.events.map((event) => (until = Math.max(until, event.t + (event.d || 0))));
  }

  get empty() {
    return this.checkpoints.length === 0;
  }

  // How many updates the document holds at t.
  updatesAt(t) {
    return countUpTo(this.updateTimes, t);
  }

  // How many events have started by t.
  eventsAt(t) {
    return countUpTo(this.eventTimes, t);
  }

  // The checkpoint to build the document holding the first `count` updates from: the latest
  // that holds no more than those (the first one when t is before everything).
  checkpointFor(count) {
    let best = this.checkpoints[0] || null;
    for (const checkpoint of this.checkpoints) {
      if (checkpoint.n <= count) best = checkpoint;
      else break;
    }
    return best;
  }

  // The index of the latest fresh update among the first `count` updates, or -1.
  freshAtOrBefore(count) {
    const before = countUpTo(this.fresh, count - 1);
    return before > 0 ? this.fresh[before - 1] : -1;
  }

  // Where to build the document holding the first `count` updates from, as {n, state} (it holds
  // updates[0..n)): the checkpoint for it, or the latest fresh update among them when later.
  startFor(count) {
    const checkpoint = this.checkpointFor(count);
    const fresh = this.freshAtOrBefore(count);
    if (fresh < 0 || fresh < checkpoint.n) return checkpoint;
    return { t: this.updateTimes[fresh], n: fresh + 1, state: this.updates[fresh][1] };
  }

  // Where playback that reached t goes on from: t itself while something happens around it,
  // else just before the next update or event when that is more than IDLE_MS away.
  skipIdle(t) {
    const events = this.eventsAt(t);
    if (events > 0 && this.runEnds[events - 1] > t) return t; // a run of text is being written
    const nextUpdate = this.updateTimes[this.updatesAt(t)];
    const nextEvent = this.eventTimes[events];
    const next = Math.min(nextUpdate ?? Infinity, nextEvent ?? Infinity);
    if (next === Infinity) return t; // nothing more: play on to the end
    return next - t > IDLE_MS ? next - LEAD_MS : t;
  }
}

// "1:05.3": a time in the session.
export function clock(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100);
  const minutes = Math.floor(tenths / 600);
  const seconds = ((tenths % 600) / 10).toFixed(1).padStart(4, "0");
  return `${minutes}:${seconds}`;
}
