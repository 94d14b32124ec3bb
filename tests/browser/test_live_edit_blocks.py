"""The transcript's edit-block splitter (static/src/live/edit_blocks.js), run under Node.

The server parses the model's output for real; this splitter only decides what the
transcript shows as prose and what it collapses into one chip per block, so it must agree
with PROTOCOL.md §4 on where blocks start and end, whatever the chunk boundaries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.browser.conftest import ROOT
from tests.conftest import require

MODULE = (ROOT / "static/src/live/edit_blocks.js").as_uri()

# Feeds `text` in chunks of `size` characters, then finishes; prose runs are merged so the
# result does not depend on how the text was cut.
SPLIT = """
const { EditBlockSplitter } = await import(MODULE);
const out = [];
for (const [text, size] of CASES) {
  const splitter = new EditBlockSplitter();
  const ops = [];
  for (let i = 0; i < text.length; i += size) ops.push(...splitter.feed(text.slice(i, i + size)));
  ops.push(...splitter.finish());
  const merged = [];
  for (const op of ops) {
    const last = merged[merged.length - 1];
    if (op.prose !== undefined && last && last.prose !== undefined) last.prose += op.prose;
    else merged.push({ ...op });
  }
  out.push(merged);
}
console.log(JSON.stringify(out));
"""


def run_node(script: str, **values: Any) -> Any:
    require(shutil.which("node") is not None, "node is not installed")
    prelude = "".join(f"const {name} = {json.dumps(value)};\n" for name, value in values.items())
    done = subprocess.run(
        ["node", "--no-warnings", "--input-type=module", "-e", prelude + script],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def split(text: str, sizes: tuple[int, ...] = (1, 3, 7, 1000)) -> list[Any]:
    results = run_node(SPLIT, MODULE=MODULE, CASES=[[text, size] for size in sizes])
    for result in results[1:]:
        assert result == results[0], "the chunk boundaries changed the result"
    return list(results[0])


def test_a_write_block_becomes_one_block_with_its_lines_counted() -> None:
    ops = split('Here it is.\n<write path="src/a.py">\nx = 1\ny = 2\n</write>\nDone.\n')
    assert ops == [
        {"prose": "Here it is.\n"},
        {"open": {"block": "write", "kind": "write", "path": "src/a.py", "pathFromProse": False}},
        {"line": True}, {"line": True},
        {"close": True},
        {"prose": "Done.\n"},
    ]


def test_an_edit_block_counts_only_its_replacement_lines_and_swallows_its_end_tag() -> None:
    text = (
        'Fix:\n<edit path="a.py">\n<old_text line="3">\nold = 1\n</old_text>\n'
        "<new_text>\nnew = 1\nmore = 2\n</new_text>\n</edit>\nBye.\n"
    )
    ops = split(text)
    assert [op for op in ops if "line" in op] == [{"line": True}, {"line": True}]
    assert ops[0] == {"prose": "Fix:\n"}
    assert ops[-1] == {"prose": "Bye.\n"}
    assert "</edit>" not in "".join(op.get("prose", "") for op in ops)


def test_search_replace_takes_its_path_from_the_prose_line_before() -> None:
    ops = split("Change it\nsrc/x.py\n```\n<<<<<<< SEARCH\na\n=======\nb\nc\n>>>>>>> REPLACE\n```\nok")
    opened = next(op["open"] for op in ops if "open" in op)
    assert opened == {"block": "search", "kind": "edit", "path": None, "pathFromProse": True}
    assert [op for op in ops if "line" in op] == [{"line": True}, {"line": True}]
    assert ops[-1] == {"prose": "ok"}  # the closing fence belongs to the block


def test_a_line_that_may_become_a_tag_is_held_back_and_prose_is_not() -> None:
    script = """
const { EditBlockSplitter } = await import(MODULE);
const splitter = new EditBlockSplitter();
console.log(JSON.stringify([
  splitter.feed("Hello"), splitter.feed(" there\\n<wri"), splitter.feed('te path="a.py">'),
  splitter.feed("\\nx\\n"), splitter.feed("<notatag>\\n"),
]));
"""
    hello, there, tag, body, still_body = run_node(script, MODULE=MODULE)
    assert hello == [{"prose": "Hello"}]  # shown at once: it cannot become a tag
    assert there == [{"prose": " there\n"}]  # "<wri" waits
    assert tag == []  # the tag's line has not ended yet
    assert body == [{"open": {"block": "write", "kind": "write", "path": "a.py", "pathFromProse": False}},
                    {"line": True}]
    assert still_body == [{"line": True}]


def test_an_unterminated_block_is_closed_when_the_turn_ends() -> None:
    ops = split('<write path="a.py">\nx = 1\nhalf')
    assert ops[-2:] == [{"line": True}, {"close": True}]
    assert [op for op in ops if "line" in op] == [{"line": True}, {"line": True}]


def test_take_path_line_removes_the_path_and_a_fence_from_the_prose() -> None:
    script = """
const { takePathLine, dropOpeningFence } = await import(MODULE);
console.log(JSON.stringify([
  takePathLine("Change\\n`src/x.py`:\\n```python\\n"), takePathLine("two words\\n"),
  dropOpeningFence("Here:\\n```python\\n"), dropOpeningFence("a `b`\\n"),
]));
"""
    taken, refused, fenced, plain = run_node(script, MODULE=MODULE)
    assert taken == {"prose": "Change\n", "path": "src/x.py"}
    assert refused == {"prose": "two words\n", "path": None}
    assert fenced == "Here:\n"
    assert plain == "a `b`\n"


@pytest.mark.parametrize("text", ["<", "<e", "<edit", "<<<", "<<<<<<< SEAR"])
def test_a_tag_prefix_at_the_end_of_the_stream_is_prose(text: str) -> None:
    assert split(text, sizes=(1, 100)) == [{"prose": text}]
