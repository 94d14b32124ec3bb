// The room's prompt queue above the prompt box (docs/protocol.md "The prompt queue"): the
// prompts waiting behind the running turn, in the order they will run, each with who queued
// it. Everyone sees the same list (the `queue` event, after every change and on joining);
// drivers change it: edit a prompt in place (Enter saves, Shift+Enter a new line, Esc
// cancels), delete it, move it (drag it onto another item's place, or the up and down
// buttons, or Alt+Up / Alt+Down on a focused item), steer with it now, or tick several and
// merge them into one. The list is drawn from the server's state only: a change
// shows once the server has made it, for everyone at once.
import { MESSAGE } from "../protocol.js";
import { rangeLabel } from "./transcript_turns.js";
import { mentionsIn } from "./mentions.js";

export class QueueList {
  // host: the <ol>; send(message) -> bool; toast(text, kind); canDrive: may change it.
  constructor(host, { send, toast, canDrive }) {
    this.host = host;
    this.send = send;
    this.toast = toast;
    this.canDrive = canDrive;
    this.items = [];
    this.selected = new Set(); // turns ticked for a merge
    this.editing = null; // {turn, draft} while a prompt is edited in place
    this.dragged = null; // the turn being dragged to another place
    if (!host) return;
    host.addEventListener("dragstart", (event) => this.dragStart(event));
    host.addEventListener("dragover", (event) => this.dragOver(event));
    host.addEventListener("drop", (event) => this.drop(event));
    host.addEventListener("dragend", () => this.dragEnd());
    host.addEventListener("click", (event) => this.clicked(event));
    host.addEventListener("change", (event) => this.ticked(event));
    host.addEventListener("keydown", (event) => this.key(event));
    host.addEventListener("input", (event) => {
      if (this.editing && event.target.matches("[data-queue-draft]")) this.editing.draft = event.target.value;
    });
  }

  // A `queue` event: the list as the server holds it now.
  show(event) {
    this.items = Array.isArray(event.items) ? event.items : [];
    const turns = new Set(this.items.map((item) => item.turn));
    for (const turn of [...this.selected]) if (!turns.has(turn)) this.selected.delete(turn);
    if (this.editing && !turns.has(this.editing.turn)) this.editing = null;
    this.draw();
  }

  draw() {
    if (!this.host) return;
    const focused = this.host.contains(document.activeElement) ? document.activeElement : null;
    const focusTurn = focused ? focused.closest("[data-turn]")?.dataset.turn : null;
    const focusPart = focused ? focused.dataset.queue || (focused.matches("[data-queue-draft]") ? "draft" : "item") : null;
    this.host.replaceChildren(...this.items.map((item, index) => this.row(item, index)));
    if (this.canDrive && this.items.length > 1) this.host.append(this.mergeRow());
    this.host.hidden = this.items.length === 0;
    if (focusTurn) this.refocus(focusTurn, focusPart);
  }

  row(item, index) {
    const li = document.createElement("li");
    li.className = "queue-item";
    li.dataset.turn = item.turn;
    li.tabIndex = 0;
    const author = span("queue-author", String(item.author || ""));
    if (item.range && item.range.path) author.append(" ", span("badge queue-range", rangeLabel(item.range)));
    const editing = this.editing && this.editing.turn === item.turn;
    if (!this.canDrive) {
      li.append(author, span("queue-text", String(item.prompt || "")));
      return li;
    }
    li.draggable = !editing; // drag it onto another item's place
    const tick = document.createElement("input");
    tick.type = "checkbox";
    tick.dataset.queue = "select";
    tick.checked = this.selected.has(item.turn);
    tick.setAttribute("aria-label", "Select to merge");
    li.append(tick, author);
    if (editing) {
      const input = document.createElement("textarea"); // a prompt may have several lines
      input.rows = 2;
      input.className = "queue-draft";
      input.dataset.queueDraft = "";
      input.value = this.editing.draft;
      input.setAttribute("aria-label", "Edit the queued text (Enter saves, Esc cancels)");
      li.append(input);
    } else {
      li.append(span("queue-text", String(item.prompt || "")));
    }
    const last = this.items.length - 1;
    li.append(
      button(editing ? "save" : "edit", editing ? "Save" : "Edit", editing ? "Save (Enter)" : "Edit this prompt"),
      button("up", "↑", "Move up (Alt+Up)", index === 0),
      button("down", "↓", "Move down (Alt+Down)", index === last),
      button("steer", "Steer now", "Take it out of the queue and steer the model with it now"),
      button("delete", "✕", "Delete from the queue"),
    );
    return li;
  }

  mergeRow() {
    const li = document.createElement("li");
    li.className = "queue-merge";
    const merge = button("merge", "Merge selected", "Send the ticked prompts as one, at the first one's place",
      this.selected.size < 2);
    li.append(merge);
    return li;
  }

  refocus(turn, part) {
    const li = this.host.querySelector(`[data-turn="${CSS.escape(turn)}"]`);
    if (!li) return;
    const target = part === "draft" ? li.querySelector("[data-queue-draft]")
      : part && part !== "item" ? li.querySelector(`[data-queue="${part}"]:not(:disabled)`) : null;
    (target || li).focus();
  }

  clicked(event) {
    const control = event.target.closest("[data-queue]");
    if (!control || !this.canDrive || control.dataset.queue === "select") return;
    const turn = control.closest("[data-turn]")?.dataset.turn;
    const action = control.dataset.queue;
    if (action === "merge") return this.merge();
    if (!turn) return undefined;
    if (action === "edit") return this.edit(turn);
    if (action === "save") return this.save();
    if (action === "up" || action === "down") return this.move(turn, action === "up" ? -1 : 1);
    if (action === "steer") return this.sent({ type: MESSAGE.QUEUE_STEER, turn });
    if (action === "delete") return this.sent({ type: MESSAGE.QUEUE_DELETE, turn });
    return undefined;
  }

  ticked(event) {
    if (!event.target.matches("[data-queue=select]")) return;
    const turn = event.target.closest("[data-turn]").dataset.turn;
    if (event.target.checked) this.selected.add(turn);
    else this.selected.delete(turn);
    const merge = this.host.querySelector("[data-queue=merge]");
    if (merge) merge.disabled = this.selected.size < 2;
  }

  key(event) {
    if (!this.canDrive) return;
    if (event.target.matches("[data-queue-draft]")) {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); this.save(); }
      if (event.key === "Escape") { event.preventDefault(); this.editing = null; this.draw(); }
      return;
    }
    const li = event.target.closest("[data-turn]");
    if (!li || !event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
    event.preventDefault();
    this.move(li.dataset.turn, event.key === "ArrowUp" ? -1 : 1);
  }

  edit(turn) {
    const item = this.items.find((each) => each.turn === turn);
    this.editing = { turn, draft: String(item.prompt || "") };
    this.draw();
    this.refocus(turn, "draft");
  }

  save() {
    const { turn, draft } = this.editing;
    const text = draft.trim();
    if (!text) return;
    if (this.sent({ type: MESSAGE.QUEUE_EDIT, turn, text, mentions: mentionsIn(text) })) {
      this.editing = null;
      this.draw();
    }
  }

  move(turn, by) {
    const index = this.items.findIndex((item) => item.turn === turn);
    const position = index + 1 + by;
    if (index < 0 || position < 1 || position > this.items.length) return;
    this.sent({ type: MESSAGE.QUEUE_MOVE, turn, position });
  }

  // Drag and drop (HTML5): the dragged prompt takes the place of the one it is dropped on
  // (queue.move to that position); the target shows on which side it will land.
  dragStart(event) {
    const li = event.target.closest?.(".queue-item[data-turn]");
    if (!this.canDrive || !li || !li.draggable) return;
    this.dragged = li.dataset.turn;
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", li.dataset.turn);
    li.classList.add("dragging");
  }

  dropTarget(event) {
    const li = event.target.closest?.(".queue-item[data-turn]");
    return this.dragged && li && li.dataset.turn !== this.dragged ? li : null;
  }

  dragOver(event) {
    const li = this.dropTarget(event);
    this.markDrop(li);
    if (!li) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
  }

  markDrop(target) {
    const from = this.items.findIndex((item) => item.turn === this.dragged);
    for (const li of this.host.querySelectorAll(".queue-item")) {
      const index = this.items.findIndex((item) => item.turn === li.dataset.turn);
      li.classList.toggle("drop-before", li === target && index < from);
      li.classList.toggle("drop-after", li === target && index > from);
    }
  }

  drop(event) {
    const li = this.dropTarget(event);
    if (!li) return;
    event.preventDefault();
    const position = this.items.findIndex((item) => item.turn === li.dataset.turn) + 1;
    const turn = this.dragged;
    this.dragEnd();
    if (position > 0) this.sent({ type: MESSAGE.QUEUE_MOVE, turn, position });
  }

  dragEnd() {
    this.dragged = null;
    for (const li of this.host.querySelectorAll(".queue-item")) li.classList.remove("dragging", "drop-before", "drop-after");
  }

  merge() {
    const turns = this.items.map((item) => item.turn).filter((turn) => this.selected.has(turn));
    if (turns.length < 2) return;
    if (this.sent({ type: MESSAGE.QUEUE_MERGE, turns })) this.selected.clear();
  }

  sent(message) {
    if (this.send(message)) return true;
    this.toast("Not sent: the connection is down, retrying", "error");
    return false;
  }
}

function span(className, text) {
  const element = document.createElement("span");
  element.className = className;
  element.textContent = text;
  return element;
}

function button(action, label, title, disabled = false) {
  const element = document.createElement("button");
  element.type = "button";
  element.className = "small";
  element.dataset.queue = action;
  element.textContent = label;
  element.title = title;
  element.disabled = disabled;
  return element;
}
