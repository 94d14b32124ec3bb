// The browser as one Yjs peer of the workspace document, over the session socket's binary
// frames (y-websocket framing: varUint 0 = sync step1/step2/update, 1 = awareness).
import * as Y from "yjs";
import * as encoding from "lib0/encoding";
import * as decoding from "lib0/decoding";
import * as syncProtocol from "y-protocols/sync";
import * as awarenessProtocol from "y-protocols/awareness";

const MESSAGE_SYNC = 0;
const MESSAGE_AWARENESS = 1;

export class YjsProvider {
  // send(Uint8Array) writes a binary frame; loop.request() asks for a flush() next frame.
  constructor(doc, send, loop) {
    this.doc = doc;
    this.send = send;
    this.loop = loop;
    this.awareness = new awarenessProtocol.Awareness(doc);
    this.queue = []; // sync frames waiting to be applied
    // A frame that arrives while the page is idle is applied in a task of its own right away,
    // not at the next animation frame (up to 16 ms later): the editor shows the model's line
    // as soon as it is here. Once per frame at most; what comes after waits for the frame.
    this.appliedEarly = false;
    this.early = new MessageChannel();
    this.early.port1.onmessage = () => this.applyEarly();
    this.earlyQueued = false;
    this.synced = false;
    this.onSynced = () => {};
    this.online = false;
    this.holding = false; // a new document is being adopted: awareness waits for announce()
    this.onUpdate = (update, origin) => {
      if (origin !== this) this.sendSync((encoder) => syncProtocol.writeUpdate(encoder, update));
    };
    doc.on("update", this.onUpdate);
    this.awareness.on("update", ({ added, updated, removed }, origin) => {
      if (origin === this) return; // came from the server: do not echo it back
      if (this.holding) return; // announce() tells this page's whole state
      this.sendAwareness(added.concat(updated, removed));
    });
  }

  // The server replaced the document by a new one built from the same texts (session.js
  // documentReplaced): this peer moves to it. What was queued went to the old one (apply()
  // just before). The awareness stays: it is keyed by the client id, which the new document
  // keeps. What it tells meanwhile (this page's cursor, made in the new document) is held
  // until announce(), which follows `document.adopted`: binary frames sent before that are
  // taken as the old document's.
  adopt(doc) {
    this.doc.off("update", this.onUpdate);
    doc.on("update", this.onUpdate);
    this.doc = doc;
    this.awareness.doc = doc;
    this.queue = [];
    this.holding = true;
  }

  // A (re)connected socket said hello: the server has sent or is sending its step 1 and 2.
  connected() {
    this.online = true;
    this.requestSync();
    this.sendAwareness([this.doc.clientID]);
  }

  // A fresh step 1: the server answers with whatever we lack (used after `resync` too).
  requestSync() {
    this.sendSync((encoder) => syncProtocol.writeSyncStep1(encoder, this.doc));
  }

  disconnected() {
    this.online = false;
    const others = [...this.awareness.getStates().keys()].filter((id) => id !== this.doc.clientID);
    awarenessProtocol.removeAwarenessStates(this.awareness, others, this);
  }

  receive(bytes) {
    const decoder = decoding.createDecoder(bytes);
    const kind = decoding.readVarUint(decoder);
    if (kind === MESSAGE_SYNC) {
      this.queue.push(bytes);
      this.loop.request();
      if (!this.appliedEarly && !this.earlyQueued) {
        this.earlyQueued = true;
        this.early.port2.postMessage(null);
      }
    } else if (kind === MESSAGE_AWARENESS) {
      try {
        awarenessProtocol.applyAwarenessUpdate(this.awareness, decoding.readVarUint8Array(decoder), this);
      } catch (error) {
        // Relayed from another browser: a bad one must not break this page.
        console.error("Spark: a malformed awareness message was ignored:", error.message);
      }
    }
  }

  applyEarly() {
    this.earlyQueued = false;
    if (this.appliedEarly || this.queue.length === 0) return;
    this.appliedEarly = true;
    this.apply();
  }

  // The animation frame's flush: what is queued, and the next frame may go early again.
  flush() {
    this.appliedEarly = false;
    this.apply();
  }

  // Every sync frame queued, in one transaction: the editors redraw once, however many model
  // tokens arrived meanwhile.
  apply() {
    if (this.queue.length === 0) return;
    const frames = this.queue;
    this.queue = [];
    let gotStep2 = false;
    Y.transact(this.doc, () => {
      for (const bytes of frames) {
        const decoder = decoding.createDecoder(bytes);
        decoding.readVarUint(decoder); // MESSAGE_SYNC, checked in receive()
        const reply = encoding.createEncoder();
        encoding.writeVarUint(reply, MESSAGE_SYNC);
        try {
          const kind = syncProtocol.readSyncMessage(decoder, reply, this.doc, this);
          if (kind === syncProtocol.messageYjsSyncStep2) gotStep2 = true;
          if (encoding.length(reply) > 1) this.send(encoding.toUint8Array(reply));
        } catch (error) {
          // One malformed frame must not cost the others in this batch, nor the editor.
          console.error("Spark: a malformed Yjs frame from the server was ignored:", error.message);
        }
      }
    }, this);
    if (gotStep2 && !this.synced) {
      this.synced = true;
      this.onSynced();
    }
  }

  sendSync(write) {
    if (!this.online) return; // the next hello's step 1 / step 2 exchange catches up
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MESSAGE_SYNC);
    write(encoder);
    this.send(encoding.toUint8Array(encoder));
  }

  sendAwareness(clients) {
    if (!this.online || clients.length === 0) return;
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MESSAGE_AWARENESS);
    encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(this.awareness, clients));
    this.send(encoding.toUint8Array(encoder));
  }

  // This page's awareness state again, for someone who just came or a new document.
  announce() {
    this.holding = false;
    this.sendAwareness([this.doc.clientID]);
  }

  leave() {
    awarenessProtocol.removeAwarenessStates(this.awareness, [this.doc.clientID], "local");
  }
}
