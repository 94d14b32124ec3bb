// The file tree in the sidebar: the new-file form, and under it the files (server-rendered,
// `#tree-files`), which every change from the tree answers with and which is drawn again when
// the document's files change.
//
// Only the files are ever swapped, never the form: a refresh that landed while a person was
// typing a path (one is asked 300 ms after each file the document gains, so right after a
// create, or while the model writes files) used to draw the form again, empty, and the "+"
// then submitted nothing (the path is required): the file was never created. A refresh
// draws the list alone: why the last change was refused stays shown until the next one.
//
// And a refresh keeps what did not change: a file's row whose markup is the same is the same
// element afterwards (the row under the person's pointer keeps its hover and its buttons, a
// click on "Rename" is not lost to a redraw while the model writes other files), and a folder
// the person closed stays closed. A refresh that changes nothing draws nothing.
import htmx from "htmx.org";

const REFRESH_MS = 300; // a burst of changes to the document's files asks once
const LIST = "#tree-files > .nodes";

export class FileTree {
  // url: the tree partial's address (GET: the files; POST: a change, then the files).
  constructor(url) {
    this.url = url;
    this.changes = 0; // changes asked from the tree so far
    this.timer = null;
    this.submitted = null; // the path the new-file form sent last, while its answer is awaited
  }

  get root() {
    return document.getElementById("tree");
  }

  get pathInput() {
    const root = this.root;
    return root ? root.querySelector("form input[name=path]") : null;
  }

  // The files again, a moment after the document's changed. A change asked from the tree
  // itself (create, rename, delete) answers with the files as it left them: while one is on
  // its way no refresh is drawn, and a refresh asked before one began is not drawn (its list
  // is older than that answer's).
  refresh() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.redraw(), REFRESH_MS);
  }

  async redraw() {
    if (!document.querySelector(LIST)) return;
    if (this.busy()) {
      this.refresh();
      return;
    }
    const asked = this.changes;
    let html;
    try {
      const response = await fetch(this.url, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
      if (!response.ok) return;
      html = await response.text();
    } catch {
      return; // offline: the next change of the files asks again
    }
    const list = document.querySelector(LIST);
    if (!list || asked !== this.changes || this.busy()) return;
    const fresh = new DOMParser().parseFromString(html, "text/html").querySelector(LIST);
    if (!fresh || fresh.outerHTML === list.outerHTML) return;
    keepUnchanged(list, document.adoptNode(fresh));
    list.replaceWith(fresh);
    htmx.process(fresh);
  }

  busy() {
    const root = this.root;
    return Boolean(root && (root.classList.contains("htmx-request") || root.querySelector(".htmx-request")));
  }

  // A request from the tree (htmx:beforeRequest): counted; the new-file form's path noted.
  asking(element) {
    this.changes += 1;
    const input = this.pathInput;
    if (input && element.contains(input)) this.submitted = input.value;
  }

  // The file the form asked for was created (spark:open): the form is ready for the next
  // one, unless the person already typed another path meanwhile. A refused path stays, to
  // be corrected (the answer shows why).
  created() {
    const input = this.pathInput;
    if (input && this.submitted !== null && input.value === this.submitted) input.value = "";
    this.submitted = null;
  }

  wire(body) {
    body.addEventListener("htmx:beforeRequest", (event) => {
      if (event.target instanceof Element && event.target.closest("#tree")) this.asking(event.target);
    });
    body.addEventListener("spark:open", () => this.created());
  }
}

// A folder's name: its row's summary.
function folderName(item) {
  const summary = item.querySelector(":scope > details > summary");
  return summary ? summary.textContent : null;
}

// Put into the new list `fresh` the rows of the drawn list `drawn` that did not change (the same
// file, the same markup), and each folder's open or closed state, level by level.
function keepUnchanged(drawn, fresh) {
  const files = new Map();
  const folders = new Map();
  for (const item of drawn.children) {
    if (item.matches("li.file")) files.set(item.dataset.path, item);
    else if (item.matches("li.dir")) folders.set(folderName(item), item);
  }
  for (const item of [...fresh.children]) {
    if (item.matches("li.file")) {
      const was = files.get(item.dataset.path);
      if (was && was.outerHTML === item.outerHTML) item.replaceWith(was);
    } else if (item.matches("li.dir")) {
      const was = folders.get(folderName(item));
      const before = was && was.querySelector(":scope > details");
      const after = item.querySelector(":scope > details");
      if (!before || !after) continue;
      after.open = before.open;
      const [inner, innerFresh] = [before, after].map((details) => details.querySelector(":scope > ul.nodes"));
      if (inner && innerFresh) keepUnchanged(inner, innerFresh);
    }
  }
}
