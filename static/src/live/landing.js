// Where a person lands when the page opens (a join, a reload, a teacher's Watch), and their own
// tabs kept for next time.
//
// Each person's tabs of a workspace (which files, which one in front) are kept in this
// browser's localStorage, per workspace and per person, as a desktop IDE keeps its open
// editors per workspace: a reload, or coming back tomorrow, shows them as they were. They are
// the person's own, not the room's: someone else's tabs never change them.
//
// Which file comes to the front: the one the address names (`#path`, a link to a file), else
// the person's own front tab, else the file the room is working on: the one the running turn
// writes, else the one a driver (owner or collaborator) has open, else the file changed last
// (the page says which: `data-last-file`). The drivers' files arrive a moment after the
// document does (their pages tell their place when someone joins), so a page that landed on
// the file changed last, or on nothing, moves to a driver's file when it hears of one, until
// the person opens a file themselves. While it shows a file only so, its awareness says so
// (`landing: true`): the pages of people who come meanwhile take a driver's place from the
// drivers who chose it, not from a driver who just arrived (follow.js).

const PREFIX = "spark:tabs";
const KEPT_TABS = 30; // a tab bar longer than this is not kept whole: the most recent ones

export class SavedTabs {
  constructor(workspace, user, storage = safeStorage()) {
    this.key = `${PREFIX}:${workspace}:${user}`;
    this.storage = storage;
    this.written = null;
  }

  // {open: [paths], active: path | null}, or null when nothing was kept (or it is unreadable).
  load() {
    if (!this.storage) return null;
    try {
      const kept = JSON.parse(this.storage.getItem(this.key) || "null");
      if (!kept || !Array.isArray(kept.open)) return null;
      const open = kept.open.filter((path) => typeof path === "string" && path);
      const active = typeof kept.active === "string" && open.includes(kept.active) ? kept.active : null;
      return { open, active };
    } catch {
      return null;
    }
  }

  save(open, active) {
    if (!this.storage) return;
    const value = JSON.stringify({ open: open.slice(-KEPT_TABS), active });
    if (value === this.written) return;
    this.written = value;
    try {
      this.storage.setItem(this.key, value);
    } catch {
      // Storage full or refused (a private window): the tabs are not kept, nothing else breaks.
    }
  }
}

function safeStorage() {
  try {
    return window.localStorage;
  } catch {
    return null; // refused by the browser's settings
  }
}

export class Landing {
  // tabs: EditorTabs; saved: SavedTabs; exists(path): is the file in the document?;
  // lastFile: the file changed last (the page's data-last-file), or ""; provisional(bool):
  // tell the others whether the front file is only where this page landed (awareness).
  constructor({ tabs, saved, exists, lastFile, provisional = () => {} }) {
    this.tabs = tabs;
    this.saved = saved;
    this.exists = exists;
    this.lastFile = lastFile || "";
    this.tellProvisional = provisional;
    this.landed = false; // the document is here and the first file was chosen
    this.settled = false; // the person opened something, or a driver's file came: no more moves
    this.turnPath = null; // the file the running turn writes (its last block's)
    this.driverPath = null; // a driver's open file, as their awareness last said
    this.provisional = null; // the file changed last, opened while nobody was heard of yet
  }

  // The running turn wrote (or writes) a block in `path`.
  turnAt(path) {
    this.turnPath = path;
  }

  turnEnded() {
    this.turnPath = null;
  }

  // A driver's page told which file it has open.
  driverAt(path) {
    if (!path) return;
    this.driverPath = path;
    if (this.landed && !this.settled && this.exists(path)) {
      this.settled = true;
      if (this.tabs.active !== path) this.tabs.open(path, { focus: false });
      // The tab the page opened only to show something goes: it was nobody's choice.
      if (this.provisional && this.provisional !== path) this.tabs.close(this.provisional);
      this.endProvisional();
    }
  }

  // The person opened or picked a file: where they landed is theirs now.
  byHand() {
    this.settled = true;
    this.endProvisional();
  }

  // The front file is no longer only where the page landed: the others are told.
  endProvisional() {
    if (this.provisional === null) return;
    this.provisional = null;
    this.tellProvisional(false);
  }

  // The document arrived: open the kept tabs and bring one file to the front.
  land(hashPath) {
    const kept = this.saved.load();
    for (const path of kept ? kept.open : []) {
      if (this.exists(path)) this.tabs.open(path, { activate: false, focus: false });
    }
    const own = [hashPath, kept && kept.active].find((path) => path && this.exists(path));
    const room = [this.turnPath, this.driverPath].find((path) => path && this.exists(path));
    const front = own || room || (this.exists(this.lastFile) ? this.lastFile : null);
    // The person's own choice, or where the action is, stays; the file changed last gives
    // way to a driver's file heard of a moment later.
    this.settled = Boolean(own || room);
    if (!this.settled && front && !this.tabs.has(front)) {
      this.provisional = front;
      this.tellProvisional(true); // before the file it names, so no page takes that as chosen
    }
    if (front) this.tabs.open(front, { focus: false });
    this.landed = true;
    this.tabs.onTabsChanged = () => this.keep();
    this.keep();
  }

  keep() {
    if (this.landed) this.saved.save(this.tabs.paths(), this.tabs.active);
  }
}
