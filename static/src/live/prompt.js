// The prompt box under the editor. Keys as in Codex: Enter steers the running turn (or
// starts one when idle), Alt+Enter queues a prompt behind it, Shift+Enter is a newline,
// Esc stops. A person may swap Enter and Alt+Enter (the box under the prompt; kept in this
// browser's localStorage, per person); the hint under the box says which is which. The
// session decides what each intent means on the wire. What was sent stays in
// the box until the server takes it (its turn starts or is queued): a refused prompt (too
// long, rate limited, the connection lost) is still there to fix and send again.

const ENTER_QUEUES = "spark.enterQueues"; // localStorage: "1" when Enter queues and Alt+Enter steers
let turnRunning = false; // a turn runs: the keys steer and queue (idle, they ask)

export function enterQueues() {
  try {
    return window.localStorage.getItem(ENTER_QUEUES) === "1";
  } catch {
    return false; // storage refused (a private window's policy): the usual keys
  }
}

function setEnterQueues(on) {
  try {
    window.localStorage.setItem(ENTER_QUEUES, on ? "1" : "0");
  } catch {
    // not kept: this page still uses it
  }
}

// What Enter does (with Alt held: `alt`), as the person set the keys: "steer" or "queue".
export function enterIntent(alt) {
  return alt !== enterQueues() ? "queue" : "steer";
}

// The keys in words, for the hints: the steering key asks when no turn runs (as Send does).
export function keysHint() {
  const steer = turnRunning ? "steer" : "ask";
  const [enter, alt] = enterQueues() ? ["queue", steer] : [steer, "queue"];
  return `Enter: ${enter} · Alt+Enter: ${alt}`;
}

export class PromptBox {
  // onSend(intent, text, effort) with intent "steer" | "queue"; onStop()
  constructor(form, { onSend, onStop }) {
    this.form = form;
    this.input = form.querySelector("textarea");
    this.effort = form.querySelector("select[name=effort]");
    this.stopButton = form.querySelector("[data-action=stop]");
    this.queueButton = form.querySelector("[data-action=queue]");
    this.sendButton = form.querySelector("[data-action=send]");
    this.keys = form.querySelector(".prompt-keys");
    this.swap = form.querySelector("[data-action=swap-enter]");
    this.onSend = onSend;
    this.onStop = onStop;
    this.waiting = null; // the text sent, until the server takes or refuses it
    this.isRunning = false;
    if (this.swap) {
      this.swap.checked = enterQueues();
      this.swap.addEventListener("change", () => { setEnterQueues(this.swap.checked); this.running(this.isRunning); });
    }
    this.menu = null; // the @-mention list (mentions.js): its keys first while it is open
    this.input.addEventListener("keydown", (event) => this.key(event));
    form.addEventListener("submit", (event) => { event.preventDefault(); this.send("steer"); });
    this.queueButton.addEventListener("click", () => this.send("queue"));
    this.stopButton.addEventListener("click", () => this.onStop());
    this.running(false);
  }

  key(event) {
    if (event.isComposing) return; // an input method is still building the character
    if (this.menu && this.menu.key(event)) return;
    if (event.key === "Escape") {
      event.preventDefault();
      this.onStop();
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      this.send(enterIntent(event.altKey));
    }
  }

  send(intent) {
    const text = this.input.value.trim();
    if (!text || text === this.waiting) return; // sent already: the server has not answered yet
    if (this.onSend(intent, text, this.effort.value)) this.setWaiting(text);
  }

  // A turn of this person's started or was queued with `text`: the box empties, unless they
  // have written something else since.
  taken(text) {
    if (this.waiting === null || text !== this.waiting) return;
    if (this.input.value.trim() === text) this.input.value = "";
    this.setWaiting(null);
  }

  // The server refused what was sent, or the connection went: the text stays, to send again.
  release() {
    this.setWaiting(null);
  }

  setWaiting(text) {
    this.waiting = text;
    this.form.classList.toggle("sending", text !== null);
  }

  // The labels tell what Enter will do right now.
  running(isRunning) {
    this.isRunning = isRunning;
    turnRunning = isRunning;
    const swapped = enterQueues();
    const [steerKey, queueKey] = swapped ? ["Alt+Enter", "Enter"] : ["Enter", "Alt+Enter"];
    this.form.classList.toggle("running", isRunning);
    this.stopButton.disabled = !isRunning;
    this.queueButton.disabled = !isRunning;
    this.sendButton.textContent = isRunning ? "Steer" : "Send";
    this.sendButton.title = steerKey;
    this.queueButton.title = `${queueKey}: run after the current turn`;
    if (this.keys) this.keys.textContent = keysHint();
    this.input.placeholder = isRunning
      ? `Steer now (${steerKey}) · queue (${queueKey}) · stop (Esc)`
      : `Ask the model (${swapped ? "Enter or Alt+Enter" : "Enter"}) · new line (Shift+Enter)`;
  }
}
