// Panels a person resizes (the live and replay pages): a handle between two panes, a
// focusable role="separator", sets a pane's size as a CSS custom property of the layout's
// element, by dragging or with the arrow keys; Home or a double click gives the default back.
// The page's CSS clamps the property to what the window has room for, so a size kept from a
// wider window never widens the page; what is kept (per browser, localStorage) is the size the
// pane actually took.
//
// <div class="splitter" role="separator" tabindex="0" aria-orientation="vertical"
//      aria-label="…" data-splitter="<storage name>" data-target="<selector>"
//      data-property="--side-width" data-pane="<selector>" data-grow="-1"></div>
//
// aria-orientation "vertical" is a handle between columns (it moves along x), "horizontal" one
// between rows (along y); data-grow is +1 when moving right or down grows the pane, -1 when it
// shrinks it.

const KEY_STEP_PX = 16;
const KEY_BIG_STEP_PX = 64; // with Shift
const STORE_PREFIX = "spark.size.";

function stored(name) {
  try {
    const value = Number(window.localStorage.getItem(STORE_PREFIX + name));
    return Number.isFinite(value) && value > 0 ? value : null;
  } catch {
    return null; // storage refused (private mode, a policy): sizes last for the page only
  }
}

function store(name, px) {
  try {
    if (px === null) window.localStorage.removeItem(STORE_PREFIX + name);
    else window.localStorage.setItem(STORE_PREFIX + name, String(Math.round(px)));
  } catch {
    // as above
  }
}

export class Splitter {
  constructor(handle, doc = document) {
    const data = handle.dataset;
    this.handle = handle;
    this.name = data.splitter;
    this.target = doc.querySelector(data.target);
    this.pane = doc.querySelector(data.pane);
    this.property = data.property;
    this.grow = Number(data.grow) < 0 ? -1 : 1;
    this.horizontal = handle.getAttribute("aria-orientation") !== "horizontal"; // moves along x
    this.drag = null; // {pointer, from, size} while dragging
    if (!this.target || !this.pane || !this.property) return;
    const kept = stored(this.name);
    if (kept !== null) this.set(kept);
    handle.addEventListener("pointerdown", (event) => this.down(event));
    handle.addEventListener("pointermove", (event) => this.move(event));
    handle.addEventListener("pointerup", (event) => this.up(event));
    handle.addEventListener("pointercancel", (event) => this.up(event));
    handle.addEventListener("lostpointercapture", (event) => this.up(event));
    handle.addEventListener("dblclick", () => this.reset());
    handle.addEventListener("keydown", (event) => this.key(event));
    this.describe();
  }

  size() {
    const box = this.pane.getBoundingClientRect();
    return this.horizontal ? box.width : box.height;
  }

  set(px) {
    this.target.style.setProperty(this.property, `${Math.max(0, Math.round(px))}px`);
  }

  // After a change: keep the size the pane took (the CSS may have clamped it), say it.
  settle() {
    store(this.name, this.size());
    this.describe();
    this.handle.dispatchEvent(new CustomEvent("spark:resized", { bubbles: true, detail: { name: this.name } }));
  }

  reset() {
    this.target.style.removeProperty(this.property);
    store(this.name, null);
    this.describe();
  }

  // aria-valuenow: the pane's share of its layout, in per cent; the text says it in pixels.
  describe() {
    const whole = this.target.getBoundingClientRect();
    const room = this.horizontal ? whole.width : whole.height;
    const size = this.size();
    this.handle.setAttribute("aria-valuenow", String(room > 0 ? Math.round((100 * size) / room) : 0));
    this.handle.setAttribute("aria-valuetext", `${Math.round(size)} pixels`);
  }

  down(event) {
    if (event.button !== 0) return;
    event.preventDefault(); // no text selection while dragging
    this.handle.setPointerCapture(event.pointerId);
    this.drag = { pointer: event.pointerId, from: this.horizontal ? event.clientX : event.clientY, size: this.size() };
    document.body.classList.add(this.horizontal ? "resizing-x" : "resizing-y");
  }

  move(event) {
    if (!this.drag || event.pointerId !== this.drag.pointer) return;
    const at = this.horizontal ? event.clientX : event.clientY;
    this.set(this.drag.size + this.grow * (at - this.drag.from));
  }

  up(event) {
    if (!this.drag || event.pointerId !== this.drag.pointer) return;
    this.drag = null;
    document.body.classList.remove("resizing-x", "resizing-y");
    if (this.handle.hasPointerCapture(event.pointerId)) this.handle.releasePointerCapture(event.pointerId);
    this.set(this.size()); // what the CSS let it be, not where the pointer went
    this.settle();
  }

  key(event) {
    const step = event.shiftKey ? KEY_BIG_STEP_PX : KEY_STEP_PX;
    const keys = this.horizontal ? { ArrowLeft: -1, ArrowRight: 1 } : { ArrowUp: -1, ArrowDown: 1 };
    if (event.key === "Home") {
      event.preventDefault();
      this.reset();
      return;
    }
    if (!(event.key in keys)) return;
    event.preventDefault();
    this.set(this.size() + this.grow * keys[event.key] * step);
    this.set(this.size());
    this.settle();
  }
}

export function startSplitters(root = document) {
  return [...root.querySelectorAll("[data-splitter]")].map((handle) => new Splitter(handle));
}
