// Presenter mode, for demos: large type in the editor and the transcript. The page's address
// says it (`?present=1`), so the toggle is also a link to share: whoever opens it lands in
// presenter mode, following the driver (the link also asks for that: `&follow=1`, follow.js).
// Entering or leaving it by the toggle changes nothing of whom the person follows.

const PARAM = "present";

export function presenting(location = window.location) {
  return new URL(location.href).searchParams.get(PARAM) === "1";
}

export class PresenterMode {
  // link: the toggle, an <a> to this page with ?present=1; onChange(on) after each change
  constructor(link, { onChange }) {
    this.link = link;
    this.onChange = onChange;
    this.shareUrl = link.href; // the presenter link others can open
    this.on = false;
    link.addEventListener("click", (event) => {
      // A click with a modifier opens the link (a new tab, a new window): that is the link's job.
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      this.set(!this.on);
    });
  }

  start() {
    this.set(presenting(), { initial: true });
  }

  set(on, { initial = false } = {}) {
    if (on === this.on && !initial) return;
    this.on = on;
    document.body.classList.toggle("presenting", on);
    this.link.setAttribute("aria-pressed", String(on));
    this.link.textContent = on ? "Leave presenter mode" : "Present";
    this.link.title = on
      ? "Back to the normal view"
      : "Presenter mode: large type (share this link: whoever opens it follows the driver)";
    const url = new URL(window.location.href);
    if (on) url.searchParams.set(PARAM, "1");
    else url.searchParams.delete(PARAM);
    if (url.href !== window.location.href) history.replaceState(history.state, "", url);
    const plain = new URL(url);
    plain.search = "";
    plain.hash = "";
    this.link.href = on ? plain.href : this.shareUrl; // when on, the link leads out of it
    if (!initial || on) this.onChange(on);
  }
}
