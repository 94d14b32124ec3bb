// The session WebSocket (docs/protocol.md §2): JSON events in order, binary Yjs frames,
// reconnect with backoff. A reconnect names the last seq held (`?after=`): the server sends
// what was missed before the live stream, so nothing is missed or shown twice; and the
// generation of the Yjs document the page holds (`?generation=`): if the server replaced it
// meanwhile, hello is followed by `document.replaced`.

import { CLOSE_CODE, EVENT, MESSAGE } from "../protocol.js";
import { EventOrder } from "./event_order.js";

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
    this.order = new EventOrder();
    this.attempt = 0;
    this.retryTimer = 0;
    this.pingTimer = 0;
    this.pings = new Map(); // ping id -> performance.now() when sent
    this.nextPingId = 1;
    this.generation = null; // of the document the page holds (LiveSession sets it); null: none yet
  }

  connect() {
    clearTimeout(this.retryTimer);
    const after = this.order.resumeAfter;
    const socket = new WebSocket(this.address(after));
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    this.handlers.onState(after === null ? "connecting" : "reconnecting");
    socket.addEventListener("open", () => {
      this.pingTimer = setInterval(() => this.ping(), PING_EVERY_MS);
    });
    socket.addEventListener("message", (message) => this.receive(message.data, socket));
    socket.addEventListener("close", (event) => this.closed(socket, event.code));
  }

  // The socket's URL: the seq to resume after (null: none) and the document's generation.
  address(after) {
    const query = new URLSearchParams();
    if (after !== null) query.set("after", after);
    if (this.generation !== null) query.set("generation", this.generation);
    const search = query.toString();
    return search ? `${this.url}?${search}` : this.url;
  }

  receive(data, socket) {
    if (socket !== this.socket) return;
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
    if (event.type === EVENT.PONG) this.pong(event);
    if (event.type === EVENT.HELLO) {
      this.attempt = 0;
      this.handlers.onState("live");
    }
    if (this.order.accept(event)) this.handlers.onEvent(event);
  }

  closed(socket, code) {
    if (socket !== this.socket) return;
    clearInterval(this.pingTimer);
    this.pings.clear();
    this.socket = null;
    if (code === CLOSE_CODE.REFUSED) {
      this.handlers.onState("refused"); // removed from the workspace: retrying cannot help
      return;
    }
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
    this.send({ type: MESSAGE.PING, id });
  }

  pong(event) {
    const sent = this.pings.get(event.id);
    if (sent === undefined) return;
    this.pings.delete(event.id);
    this.handlers.onRtt(performance.now() - sent);
  }
}
