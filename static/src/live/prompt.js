// The prompt box under the editor. Keys as in Codex: Enter steers the running turn (or
// starts one when idle), Alt+Enter queues a prompt behind it, Shift+Enter is a newline,
// Esc stops. The session decides what each intent means on the wire.

export class PromptBox {
  // onSend(intent, text, effort) with intent "steer" | "queue"; onStop()
  constructor(form, { onSend, onStop }) {
    this.form = form;
    this.input = form.querySelector("textarea");
    this.effort = form.querySelector("select[name=effort]");
    this.stopButton = form.querySelector("[data-action=stop]");
    this.queueButton = form.querySelector("[data-action=queue]");
    this.sendButton = form.querySelector("[data-action=send]");
    this.onSend = onSend;
    this.onStop = onStop;
    this.input.addEventListener("keydown", (event) => this.key(event));
    form.addEventListener("submit", (event) => { event.preventDefault(); this.send("steer"); });
    this.queueButton.addEventListener("click", () => this.send("queue"));
    this.stopButton.addEventListener("click", () => this.onStop());
    this.running(false);
  }

  key(event) {
    if (event.isComposing) return; // an input method is still building the character
    if (event.key === "Escape") {
      event.preventDefault();
      this.onStop();
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      this.send(event.altKey ? "queue" : "steer");
    }
  }

  send(intent) {
    const text = this.input.value.trim();
    if (!text) return;
    if (this.onSend(intent, text, this.effort.value)) this.input.value = "";
  }

  // The labels tell what Enter will do right now.
  running(isRunning) {
    this.form.classList.toggle("running", isRunning);
    this.stopButton.disabled = !isRunning;
    this.queueButton.disabled = !isRunning;
    this.sendButton.textContent = isRunning ? "Steer" : "Send";
    this.input.placeholder = isRunning
      ? "Steer now (Enter) · queue (Alt+Enter) · stop (Esc)"
      : "Ask the model (Enter) · new line (Shift+Enter)";
  }
}
