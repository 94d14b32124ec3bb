// Who is here: the presence list (name, role, colour; a person's tabs once, with a count;
// past SHOWN people folded to "+N" with everyone's list under it) and the file each of them
// has open (Yjs awareness `file`). The colours are the server's
// (presence `colour`, decided once in spark_ide/live/events.py, so every browser agrees);
// they reach the page as classes of one constructed style sheet, never as style attributes.

const HEX_COLOUR = /^#[0-9a-f]{6}$/i;
const NO_COLOUR = "#868e96"; // a colour the server did not send (an older server)
const LIGHT_ALPHA = "33"; // selections: the colour at 20 % over the text

// A person's colour and its light variant for selections, as y-codemirror.next wants them.
export function cursorColours(colour) {
  const color = HEX_COLOUR.test(colour || "") ? colour : NO_COLOUR;
  return { color, colorLight: `${color}${LIGHT_ALPHA}` };
}

// One class per person, `peer-<id>`, that sets --peer (and --peer-light) to their colour.
export class PeerColours {
  constructor(doc = document) {
    this.sheet = new CSSStyleSheet();
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, this.sheet];
    this.colours = new Map(); // class -> colour
    this.byName = new Map(); // username -> class
    this.drawn = "";
  }

  // The class of a participant ({user, user_id, colour}); for someone without an id, by name.
  classFor({ user, user_id: userId, colour }) {
    let name = this.byName.get(user);
    if (Number.isInteger(userId)) name = `peer-${userId}`;
    else if (!name) name = `peer-n${this.byName.size}`;
    this.byName.set(user, name);
    this.colours.set(name, cursorColours(colour).color);
    return name;
  }

  // The class of someone by username, if they were ever here ("" otherwise).
  classOf(user) {
    return this.byName.get(user) || "";
  }

  apply() {
    const rules = [...this.colours].map(([name, colour]) =>
      `.${name} { --peer: ${colour}; --peer-light: ${colour}${LIGHT_ALPHA}; }`).join("\n");
    if (rules === this.drawn) return;
    this.drawn = rules;
    this.sheet.replaceSync(rules);
  }
}

// At most this many people show in the top bar; with more, the first SHOWN - 1 show (this
// page's person first) and a "+N" control opens the list of everyone.
export const SHOWN = 4;

export class PresenceList {
  // list: the top bar's <ul>; more: the <details> whose summary reads "+N" and whose panel
  // lists everyone (hidden while all fit); awareness: the Yjs peer's; colours: a PeerColours
  constructor(list, more, awareness, colours) {
    this.list = list;
    this.more = more;
    this.everyone = more ? more.querySelector("[data-presence=all]") : null;
    this.count = more ? more.querySelector("summary") : null;
    this.awareness = awareness;
    this.colours = colours;
    this.participants = [];
    this.me = null; // this page's username (hello)
    this.files = ""; // who is on which file, as last drawn
    awareness.on("change", () => this.awarenessChanged());
  }

  // The participant this page is (its colour, id), or null before the first presence.
  mine() {
    return this.participants.find((person) => person.user === this.me) || null;
  }

  find(userId) {
    return this.participants.find((person) => person.user_id === userId) || null;
  }

  update(participants) {
    this.participants = Array.isArray(participants) ? participants : [];
    this.render();
  }

  // user id -> the files their tabs have open, from everyone's awareness state (this page's too).
  openFiles() {
    const files = new Map();
    for (const state of this.awareness.getStates().values()) {
      const id = state.user && state.user.id;
      if (id === undefined || typeof state.file !== "string" || !state.file) continue;
      if (!files.has(id)) files.set(id, new Set());
      files.get(id).add(state.file);
    }
    return files;
  }

  awarenessChanged() {
    const drawn = JSON.stringify([...this.openFiles()].map(([id, paths]) => [id, [...paths].sort()]));
    if (drawn !== this.files) this.render();
  }

  // Everyone in the room's order, this page's person first.
  ordered() {
    const mine = this.mine();
    return mine ? [mine, ...this.participants.filter((person) => person !== mine)] : this.participants;
  }

  render() {
    const files = this.openFiles();
    this.files = JSON.stringify([...files].map(([id, paths]) => [id, [...paths].sort()]));
    const people = this.ordered();
    const folded = this.more !== null && people.length > SHOWN;
    const shown = folded ? people.slice(0, SHOWN - 1) : people;
    const items = shown.map((person) => this.item(person, files.get(person.user_id)));
    this.colours.apply();
    this.list.replaceChildren(...items);
    if (!this.more) return;
    this.more.hidden = !folded;
    if (!folded) {
      this.more.open = false;
      this.everyone.replaceChildren();
      return;
    }
    const hidden = people.length - shown.length;
    this.count.textContent = `+${hidden}`;
    this.count.setAttribute("aria-label", `${hidden} more: everyone here (${people.length})`);
    this.count.title = `Everyone here: ${people.length} people`;
    this.everyone.replaceChildren(...people.map((person) => this.item(person, files.get(person.user_id), { role: true })));
  }

  // One person: their dot and name, their tabs' count, the files they are on; in the list of
  // everyone (`role`), their role too.
  item(person, files, { role: withRole = false } = {}) {
    const { user, role } = person;
    const name = String(user ?? "?");
    const count = Number.isInteger(person.connections) ? person.connections : 1;
    const item = document.createElement("li");
    item.className = `person role-${role} ${this.colours.classFor(person)}`;
    if (name === this.me) item.classList.add("me");
    if (Number.isInteger(person.user_id)) item.dataset.user = person.user_id;
    const dot = document.createElement("span");
    dot.className = "person-dot";
    dot.setAttribute("aria-hidden", "true");
    const label = document.createElement("span");
    label.className = "person-name";
    label.textContent = name === this.me ? `${name} (you)` : name;
    item.append(dot, label);
    if (withRole) {
      const badge = document.createElement("span");
      badge.className = `badge role-${role}`;
      badge.textContent = role;
      item.append(badge);
    }
    const parts = [`${name}, ${role}`];
    if (count > 1) {
      const tabs = document.createElement("span");
      tabs.className = "person-count";
      tabs.textContent = `×${count}`;
      item.append(tabs);
      parts.push(`${count} tabs open`);
    }
    const paths = files ? [...files].sort() : [];
    if (paths.length) {
      const file = document.createElement("span");
      file.className = "person-file";
      file.textContent = paths.map((path) => path.split("/").pop()).join(", ");
      item.append(file);
      item.dataset.files = paths.join("\n");
      parts.push(`on ${paths.join(", ")}`);
    }
    item.title = parts.join(" · ");
    return item;
  }
}
