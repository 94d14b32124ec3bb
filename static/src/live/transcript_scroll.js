// The transcript's scrolling: it follows the end unless the person scrolled up. Measured on
// their scroll, not per frame: reading the layout after every append would force a layout of
// the page each time. The scroll itself happens when a turn's box changed size, which a
// ResizeObserver tells after the browser's own layout of the frame (nothing to force),
// before it paints.
export class FollowEnd {
  constructor(box) {
    this.box = box;
    this.stick = true;
    this.resized = new ResizeObserver(() => { if (this.stick) this.scroll(); });
    this.scrolled = false; // the next scroll event is our own: it leaves `stick` as it is
    box.addEventListener("scroll", () => {
      if (this.scrolled) this.scrolled = false;
      else this.stick = this.atBottom();
    }, { passive: true });
  }

  // A node whose size changes are followed (a turn's article), and one that left.
  observe(node) { this.resized.observe(node); }
  unobserve(node) { this.resized.unobserve(node); }

  // Bring a node into view at the top and stop following the end. The transcript alone
  // scrolls (scrollIntoView would also move the page sideways).
  show(node) {
    this.stick = false;
    const box = this.box;
    const top = node.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    const target = Math.max(0, Math.round(top) - 8);
    if (Math.abs(box.scrollTop - target) >= 1) {
      this.scrolled = true; // our own scroll: it leaves `stick` off
      box.scrollTop = target;
    }
  }

  atBottom() {
    const box = this.box;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  }

  scroll() {
    const box = this.box;
    const bottom = box.scrollHeight - box.clientHeight;
    if (box.scrollTop >= bottom - 1) return; // there already: no scroll, no event
    this.scrolled = true;
    box.scrollTop = bottom;
  }
}
