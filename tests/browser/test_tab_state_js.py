"""A tab's editor state moved on to its file's text (static/src/live/tab_state.js caughtUp),
under Node: the text, the selection and the undo history afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.node import run_node

TAB_STATE = (Path(__file__).resolve().parents[2] / "static/src/live/tab_state.js").as_uri()

SETUP = """
const { caughtUp } = await import(TAB_STATE);
const { EditorState, EditorSelection } = await import("@codemirror/state");
const { history, undoDepth } = await import("@codemirror/commands");
const make = (doc, anchor, head = anchor) => EditorState.create({
  doc, selection: EditorSelection.single(anchor, head), extensions: [history()],
});
const seen = (state) => ({
  doc: state.doc.toString(), anchor: state.selection.main.anchor, head: state.selection.main.head,
  undo: undoDepth(state),
});
"""


def caught_up(doc: str, text: str, anchor: int, head: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = run_node(SETUP + """
const before = make(DOC, ANCHOR, HEAD);
const after = caughtUp(before, TEXT);
console.log(JSON.stringify({ ...seen(after), same: after === before }));
""", DOC=doc, TEXT=text, ANCHOR=anchor, HEAD=anchor if head is None else head, TAB_STATE=TAB_STATE)
    return result


def test_a_state_behind_its_text_gets_the_text_and_keeps_its_caret_on_the_same_character() -> None:
    # The model went on writing at the end of the file while the tab was not shown.
    doc = "def f():\n    return 1\n"
    text = doc + "\n\nprint(f())\n"
    result = caught_up(doc, text, doc.index("return"), doc.index("return") + 6)
    assert result["doc"] == text
    assert text[result["anchor"]:result["head"]] == "return"
    assert result["undo"] == 0  # another's writing, not the person's to undo
    assert result["same"] is False
    # Lines written above the caret move it with its line.
    above = "import os\n\n" + doc
    moved = caught_up(doc, above, doc.index("return"))
    assert moved["doc"] == above and above[moved["anchor"]:].startswith("return 1")


def test_a_state_that_holds_its_text_is_kept_as_it_is() -> None:
    assert caught_up("same\ntext\n", "same\ntext\n", 3)["same"] is True


def test_text_taken_out_of_the_middle_or_all_of_it_is_followed() -> None:
    middle = caught_up("one two two three", "one two three", 14)  # the caret inside "three"
    assert middle["doc"] == "one two three" and middle["anchor"] == 10
    emptied = caught_up("abc\ndef\n", "", 5)
    assert emptied["doc"] == "" and emptied["anchor"] == 0
    filled = caught_up("", "print(1)\n", 0)
    assert filled["doc"] == "print(1)\n"


def test_random_texts_always_end_up_equal() -> None:
    result: dict[str, Any] = run_node(SETUP + """
let seed = 7;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const word = () => ["a", "b", "\\n", "é", "😀", "ab"][rand(6)];
const text = (n) => Array.from({ length: n }, word).join("");
let mismatches = 0, bad_selection = 0;
for (let k = 0; k < 400; k++) {
  const doc = text(rand(30));
  const cut = () => rand(doc.length + 1);
  const target = rand(3) === 0 ? text(rand(30)) : doc.slice(0, cut()) + text(rand(6)) + doc.slice(cut());
  const after = caughtUp(make(doc, rand(doc.length + 1)), target);
  if (after.doc.toString() !== target) mismatches += 1;
  if (after.selection.main.head > target.length) bad_selection += 1;
}
console.log(JSON.stringify({ mismatches, bad_selection }));
""", TAB_STATE=TAB_STATE)
    assert result == {"mismatches": 0, "bad_selection": 0}
