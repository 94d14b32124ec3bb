// Checkpoints, from the history panel: Save names one (`checkpoint.create`); Code, Chat and
// Both restore one (`checkpoint.restore`: the files, the conversation the model's next request
// starts from, or both). Nothing is asked first: every restore takes a checkpoint of the moment
// before, listed at the top, whose restore undoes it. Everyone is told who restored what
// (`checkpoint.restored`); the panel is drawn again then, and after a refusal.
import { ERROR_CODE, EVENT, MESSAGE } from "../protocol.js";

const REFUSALS = new Set([ERROR_CODE.NO_SUCH_CHECKPOINT, ERROR_CODE.CHECKPOINT_BUSY]);

export class CheckpointControls {
  // send(message) -> bool: the socket took it; toast(text, kind); refresh(): draw the panel again.
  constructor({ send, toast, refresh }) {
    this.send = send;
    this.toast = toast;
    this.refresh = refresh;
  }

  // The page's clicks and submits (session_wire.js): true when it was one of ours.
  clicked(target) {
    const button = target.closest("[data-checkpoint-restore]");
    if (!button) return false;
    const parts = button.dataset.parts;
    this.sent({
      type: MESSAGE.CHECKPOINT_RESTORE, checkpoint: button.dataset.checkpointRestore,
      code: parts !== "conversation", conversation: parts !== "code",
    }, button.closest("[data-checkpoint]"));
    return true;
  }

  submitted(form) {
    if (!form.matches("[data-checkpoint-create]")) return false;
    const name = form.elements.name.value.trim();
    if (name && this.sent({ type: MESSAGE.CHECKPOINT_CREATE, name }, form)) form.reset();
    return true;
  }

  sent(message, part) {
    if (!this.send(message)) {
      this.toast("Not sent: the connection is down, retrying", "error");
      return false;
    }
    if (part) for (const button of part.querySelectorAll("button")) button.disabled = true;
    return true;
  }

  // checkpoint.restored or checkpoint.created, for everyone.
  // `replayed`: a restore from before this page joined (a reconnect's catch-up): the panel
  // is drawn again, no notice.
  told(event, replayed = false) {
    return event.type === EVENT.CHECKPOINT_RESTORED ? this.restored(event, replayed) : this.created(event);
  }

  restored(event, replayed) {
    const what = event.code && event.conversation ? "the code and the conversation"
      : event.code ? "the code" : "the conversation";
    if (!replayed) {
      this.toast(`${event.by || "Someone"} restored ${what} of a checkpoint (undo: restore the one just before)`, "ok");
    }
    this.refresh();
  }

  created(event) {
    this.toast(`Checkpoint “${event.name}” saved${event.by ? ` by ${event.by}` : ""}`, "ok");
    this.refresh();
  }

  // An error the server sent: ours (told, the panel's buttons come back) or not.
  refused(event) {
    if (!REFUSALS.has(event.code)) return false;
    this.toast(`${event.message || event.code}`, "error");
    this.refresh();
    return true;
  }
}
