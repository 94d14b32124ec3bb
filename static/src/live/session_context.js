// The prompt box's mentions and context strip, wired to the live page (session.js): the
// `@` list (mentions.js), the strip under the box (context_strip.js), what a prompt or a
// steer carries of them, and the events that answer them (`context`, `symbols`).
import { EVENT } from "../protocol.js";
import { ContextStrip, selectedLines } from "./context_strip.js";
import { MentionMenu } from "./mentions.js";

export class PromptContext {
  // prompt: the PromptBox; root: the page; send(message) -> bool; files(): the document's
  // path -> Y.Text map; tabs: the editor tabs.
  constructor(prompt, root, { send, files, tabs }) {
    const input = prompt.input;
    this.menu = new MentionMenu(input, { paths: () => [...files().keys()].sort(), send });
    prompt.menu = this.menu; // its keys first while the list is open
    this.strip = new ContextStrip(root.querySelector("#context-strip"), {
      input, send, active: () => tabs.active || "", selection: () => selectedLines(tabs.view),
    });
  }

  // An event for the box: true when it was one.
  handle(event) {
    if (event.type === EVENT.CONTEXT) this.strip.show(event);
    else if (event.type === EVENT.SYMBOLS) this.menu.told(event);
    else return false;
    return true;
  }

  // A prompt or a steer about to go: its mentions and the files taken out.
  carry(message) {
    message.mentions = this.strip.mentions();
    message.exclude = this.strip.exclude();
    return message;
  }

  // It went: the next one starts with every file in again.
  sent() {
    this.strip.taken();
  }

  // The files or the turns changed: what the next request carries may have too.
  changed() {
    this.menu.forget();
    this.strip.stale();
  }
}
