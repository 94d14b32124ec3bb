"""A fence's preview never shows a copy of what the file already has (issue 27, item 9).

A steered turn of the bundled model re-wrote the file's `def is_prime` unchanged: the
preview typed a second `def is_prime` below the first for a second and a half, then the
merge found "no change" and took it out. The preview now holds back a definition the file
has (the merge puts it in place) and a statement until it differs from the file's.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from spark_ide.editing import BlockStatus, EditEvent, EditState, Outcome, TurnEditor
from spark_ide.editing.fence_lines import FenceLines, read_existing

from .support import chunk, make_doc, read

FILE = """\
def is_prime(n):
    if n < 2:
        return False
    for i in range(2, int(n ** 0.5) + 1):
        if n % i == 0:
            return False
    return True


print(is_prime(7))
"""

# What the bundled model answered after the steer: the same function, in a fence.
SAME = """\
Sure! Here is the function:

```python
def is_prime(n):
    if n < 2:
        return False
    for i in range(2, int(n ** 0.5) + 1):
        if n % i == 0:
            return False
    return True

print(is_prime(7))
```
"""

CHANGED = """\
```python
import math

def is_prime(n):
    if n < 2:
        return False
    return all(n % i for i in range(2, math.isqrt(n) + 1))

def is_even(n):
    return n % 2 == 0

print(is_prime(7))
print(is_even(4))
```
"""


def statuses(events: list[EditEvent]) -> list[BlockStatus]:
    return [event for event in events if isinstance(event, BlockStatus)]


def definitions(text: str) -> list[str]:
    return re.findall(r"^(?:def|class) (\w+)", text, flags=re.MULTILINE)


def stream(doc: Doc[Any], answer: str, cuts: list[int]) -> tuple[TurnEditor, list[str], list[EditEvent]]:
    """Feed ``answer`` cut at ``cuts``: the editor, the file after every piece, the events."""
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    seen, events = [], []
    for piece in chunk(answer, cuts):
        events += editor.feed(piece)
        seen.append(read(doc, "main.py"))
    events += editor.finish()
    seen.append(read(doc, "main.py"))
    return editor, seen, events


def test_the_same_function_again_never_shows_twice_and_changes_nothing() -> None:
    doc = make_doc({"main.py": FILE})
    state = doc.get_state()
    editor, seen, events = stream(doc, SAME, list(range(len(SAME))))  # a character at a time
    assert all(text == FILE for text in seen)  # not a character of a preview, at any moment
    assert doc.get_state() == state  # not even a change undone again
    final = statuses(events)[-1]
    assert final.state is EditState.APPLIED
    assert final.detail()["merge"] == {"replaced": [], "added": []}
    assert editor.ledger.entry(0).outcome is Outcome.UNCHANGED
    # While it streamed, its region was the file's is_prime (lines 1-7), with no ghost.
    streaming = [status for status in statuses(events) if status.state is EditState.STREAMING]
    assert {status.lines for status in streaming} == {None, (1, 7)}
    assert all(status.ghost is None for status in streaming)


def test_a_changed_function_replaces_the_files_in_place_and_is_never_previewed() -> None:
    doc = make_doc({"main.py": FILE})
    editor, seen, events = stream(doc, CHANGED, list(range(0, len(CHANGED), 3)))
    assert all(definitions(text).count("is_prime") == 1 for text in seen)
    assert any("def is_even" in text for text in seen[:-1])  # a new function does stream in the preview
    assert seen[-1] == (
        "import math\n\ndef is_prime(n):\n    if n < 2:\n        return False\n"
        "    return all(n % i for i in range(2, math.isqrt(n) + 1))\n\ndef is_even(n):\n    return n % 2 == 0\n"
        "\n\nprint(is_prime(7))\n\nprint(is_even(4))\n"
    )
    assert statuses(events)[-1].detail()["merge"] == {
        "replaced": ["is_prime"], "added": ["import math", "is_even", "print(is_even(4))"],
    }
    editor.revert()
    assert read(doc, "main.py") == FILE


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(CHANGED)), max_size=30))
def test_at_any_chunking_no_definition_or_statement_of_the_file_shows_twice(cuts: list[int]) -> None:
    doc = make_doc({"main.py": FILE})
    _, seen, _ = stream(doc, CHANGED, cuts)
    for text in seen:
        assert definitions(text).count("is_prime") == 1
        assert text.count("print(is_prime(7))") == 1


def test_the_ghost_of_a_new_top_level_line_shows_before_it_ends() -> None:
    doc = make_doc({"main.py": FILE})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    editor.feed(CHANGED[: CHANGED.index("def is_even")])
    events = editor.feed("def is_ev")
    assert statuses(events)[-1].ghost is None  # `def is_ev...` may still be the file's is_even? not known yet
    events = editor.feed("en(")
    assert statuses(events)[-1].ghost == "def is_even("  # the name is whole and the file has none


def test_a_decorated_definition_of_the_file_is_held_with_its_decorators() -> None:
    text = "import functools\n\n\n@functools.cache\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    answer = "```python\n@functools.cache\ndef fib(n):\n    return n if n < 2 else fib(n - 2) + fib(n - 1)\n```\n"
    doc = make_doc({"main.py": text})
    _, seen, events = stream(doc, answer, list(range(len(answer))))
    merged = text.replace("fib(n - 1) + fib(n - 2)", "fib(n - 2) + fib(n - 1)")
    assert set(seen) == {text, merged}  # the file, then at once the file with the new fib
    assert seen[-1] == merged
    assert statuses(events)[-1].detail()["merge"] == {"replaced": ["fib"], "added": []}


def test_a_statement_is_held_while_it_matches_the_files_and_shown_once_it_differs() -> None:
    text = 'for n in range(3):\n    print(n)\n'
    doc = make_doc({"main.py": text})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    editor.feed("```python\nfor n in range(3):\n    print(n)\n")
    assert read(doc, "main.py") == text  # so far the file's own loop
    editor.feed("    print(n * n)\n")
    assert read(doc, "main.py") == text + "\nfor n in range(3):\n    print(n)\n    print(n * n)\n"
    events = editor.feed("```\n") + editor.finish()
    assert read(doc, "main.py") == text + "\nfor n in range(3):\n    print(n)\n    print(n * n)\n"
    assert statuses(events)[-1].detail()["merge"] == {"replaced": [], "added": ["for n in range(3):"]}


def test_the_lines_of_a_fence_are_cut_into_items_as_python_reads_them() -> None:
    existing = read_existing(FILE)
    assert existing is not None

    def cut(code: str) -> tuple[str, str]:
        lines = FenceLines(lambda: existing)
        shown = "".join(lines.feed(piece) for piece in chunk(code, list(range(0, len(code), 5))))
        lines.finish()
        return shown, lines.held

    text = 'X = """\ndef is_even(n):\n"""\n'  # inside a string: not a definition
    branches = "if X:\n    pass\nelse:\n    pass\n"  # `else:` goes on the `if`
    call = "value = call(\n1,\n)\n"  # `)` goes on the call
    held_code = "# about is_prime\ndef is_prime(n):\n    return n == 2\n\nprint(is_prime(7))\n"
    shown, held = cut(text + branches + held_code + call)
    assert shown == text + branches + call
    # The comment above a definition goes with it, so does the blank line above a statement.
    assert held == "# about is_prime\ndef is_prime(n):\n    return n == 2\n\nprint(is_prime(7))\n"
    # In a shown item that never parses, a line that reads as the file's definition is held
    # all the same (the merge reads the whole code in the end).
    shown, held = cut("broken(\ndef is_prime(n):\n    return 1\nprint(2)\n")
    assert (shown, held) == ("broken(\nprint(2)\n", "def is_prime(n):\n    return 1\n")


ITEMS = [
    "def is_prime(n):\n    return n > 1\n",
    "def is_prime(n):\n    if n < 2:\n        return False\n    return True\n",
    "def is_even(n):\n    return n % 2 == 0\n",
    "@cache\ndef is_prime(n):\n    return n == 2\n",
    "# a comment\n",
    "\n",
    "print(is_prime(7))\n",
    "print(is_prime(8))\n",
    "import math\n",
    "class is_prime:\n    pass\n",
    "is_prime = None\n",
    "x = (\n1,\n)\n",
    "if True:\n    pass\nelse:\n    pass\n",
    "  broken(\n",
    "s = '''\ndef is_prime(n):\n'''\n",
]


@settings(max_examples=120, deadline=None)
@given(
    items=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=20),
)
def test_while_any_fence_streams_the_files_definitions_never_show_twice(items: list[str], cuts: list[int]) -> None:
    answer = "```python\n" + "".join(items) + "```\n"
    doc = make_doc({"main.py": FILE})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    for piece in chunk(answer[: -len("```\n")], cuts):  # everything before the fence closes
        editor.feed(piece)
        text = read(doc, "main.py")
        assert re.findall(r"^(?:def|class) is_prime\b|^is_prime =", text, flags=re.MULTILINE) == ["def is_prime"]
    editor.feed("```\n")
    editor.finish()
    assert not editor.ledger.with_outcome(Outcome.IN_FLIGHT)
    editor.revert()
    assert read(doc, "main.py") == FILE
