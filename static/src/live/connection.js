// The session WebSocket (PROTOCOL.md §2): JSON events in order, binary Yjs frames, reconnect
// with backoff, then `resume` from the last event seen so nothing is missed or shown twice.

const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000];
const PING_EVERY_MS = 15000;

function socketUrl(path) {
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${window.location.host}${path}`;
}

export class SessionConnection {
  // handlers: onEvent(event), onBinary(Uint8Array), onState(state, detail), onRtt(ms)
  constructor(path, handlers) {
    this.url = socketUrl(path);
    this.handlers = handlers;
    this.socket = null;
    this.lastSeq = null; // seq of the last event handled; null until the first hello
    this.attempt = 0;
    this.stopped = false;
    this.retryTimer = 0;
    this.pingTimer = 0;
    this.pings = new Map(); // ping id -> performance.now() when sent
    this.nextPingId = 1;
  }

  connect() {
    clearTimeout(this.retryTimer);
    const socket = new WebSocket(this.url);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    this.handlers.onState(this.lastSeq === null ? "connecting" : "reconnecting");
    socket.addEventListener("open", () => {
      if (this.lastSeq !== null) this.send({ type: "resume", after: this.lastSeq });
      this.pingTimer = setInterval(() => this.ping(), PING_EVERY_MS);
    });
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", () => this.closed(socket));
  }

  receive(data) {
    if (typeof data !== "string") {
      this.handlers.onBinary(new Uint8Array(data));
      return;
    }
    let event;
    try {
      event = JSON.parse(data);
    } catch {
      return; // not ours to show; the server only sends JSON text frames
    }
    if (!this.fresh(event)) return;
    if (event.type === "pong") this.pong(event);
    this.handlers.onEvent(event);
  }

  // Drops events replayed twice after a resume. A hello never moves the mark on a reconnect:
  // the replayed events that follow it carry lower seqs and must still be shown.
  fresh(event) {
    const seq = typeof event.seq === "number" ? event.seq : null;
    if (event.type === "hello") {
      this.attempt = 0;
      if (this.lastSeq === null && seq !== null) this.lastSeq = seq;
      this.handlers.onState("live");
      return true;
    }
    if (seq === null) return true;
    if (event.type === "resync") {
      this.lastSeq = seq; // the server's numbering may have restarted
      return true;
    }
    if (this.lastSeq !== null && seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }

  closed(socket) {
    if (socket !== this.socket) return;
    clearInterval(this.pingTimer);
    this.pings.clear();
    this.socket = null;
    if (this.stopped) return;
    const base = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    const delay = Math.round(base * (0.75 + Math.random() * 0.5)); // spread a crowd's retries
    this.attempt += 1;
    this.handlers.onState("offline", delay);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  get open() {
    return this.socket !== null && this.socket.readyState === WebSocket.OPEN;
  }

  send(message) {
    if (!this.open) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  sendBinary(bytes) {
    if (this.open) this.socket.send(bytes);
  }

  ping() {
    const id = this.nextPingId++;
    this.pings.set(id, performance.now());
    this.send({ type: "ping", id });
  }

  pong(event) {
    const sent = this.pings.get(event.id);
    if (sent === undefined) return;
    this.pings.delete(event.id);
    this.handlers.onRtt(performance.now() - sent);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    if (this.socket) this.socket.close();
  }
}
