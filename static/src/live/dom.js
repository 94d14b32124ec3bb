// One way to make an element with a class and text (the panels build their DOM by hand).
export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Text, data attributes and titles written only when they change. Writing the same value
// again is not free: a data attribute written invalidates the node's style whatever its
// value, and the status bar and the edit chips are drawn again on every frame of a stream.
// New text goes into the node's one text node where it has one: `textContent` would put a
// new text node in its place, which the page lays out from scratch and which changes the
// element's `:empty` state for an instant (a style invalidation of its own, every frame of a
// stream for the status bar's figures).
const TEXT_NODE = 3;

export function setText(node, text) {
  const only = node.firstChild;
  if (text && only && only === node.lastChild && only.nodeType === TEXT_NODE) {
    if (only.data !== text) only.data = text;
  } else if (node.textContent !== text) {
    node.textContent = text;
  }
}

// `value` undefined or null: the attribute goes.
export function setData(node, key, value) {
  if (value === undefined || value === null) {
    if (key in node.dataset) delete node.dataset[key];
  } else if (node.dataset[key] !== value) {
    node.dataset[key] = value;
  }
}

export function setTitle(node, title) {
  if (node.title !== title) node.title = title;
}

// A boolean or other property (hidden, disabled) written only when it changes.
export function setProperty(node, key, value) {
  if (node[key] !== value) node[key] = value;
}
