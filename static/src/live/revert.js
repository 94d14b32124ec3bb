// Revert and Undo revert, from the Turns panel. Revert asks first, in the page's own dialog
// (#revert-confirm, as the run confirmation does): it names the turn and says that the revert
// can be undone until the next turn starts; Cancel (or Esc) is the default. Undo revert
// (`restore`) asks nothing: it is itself the way back. The panel is drawn again once the
// server has recorded either (`turn.reverted` / `turn.restored`), or refused it.
import { MESSAGE } from "../protocol.js";

export class RevertControls {
  // send(message) -> bool: the socket took it; toast(text, kind); dialog: the <dialog>, or
  // null on a page without one (the revert then goes at once).
  constructor({ dialog, send, toast }) {
    this.dialog = dialog;
    this.send = send;
    this.toast = toast;
    this.asking = null; // {turn, button} the dialog asks about
    if (dialog) dialog.addEventListener("close", () => this.answered(dialog.returnValue === "revert"));
  }

  // A Revert button was pressed: ask.
  ask(turn, button) {
    if (!this.dialog) {
      this.revert(turn, button);
      return;
    }
    this.asking = { turn, button };
    const article = button.closest("[data-turn]");
    const prompt = article && article.querySelector(".history-prompt");
    const field = (name) => this.dialog.querySelector(`[data-confirm="${name}"]`);
    field("prompt").textContent = prompt ? prompt.textContent.trim() : "";
    field("prompt").hidden = !field("prompt").textContent;
    this.dialog.returnValue = "";
    if (!this.dialog.open) this.dialog.showModal();
    field("cancel").focus(); // the safe answer is the default one
  }

  answered(revert) {
    const asked = this.asking;
    this.asking = null;
    if (revert && asked) this.revert(asked.turn, asked.button);
  }

  revert(turn, button) {
    this.sent({ type: MESSAGE.REVERT, turn }, button, "Reverting…");
  }

  restore(turn, button) {
    this.sent({ type: MESSAGE.RESTORE, turn }, button, "Restoring…");
  }

  sent(message, button, label) {
    if (!this.send(message)) {
      this.toast("Not sent: the connection is down, retrying", "error");
      return;
    }
    button.disabled = true;
    button.textContent = label;
  }
}
