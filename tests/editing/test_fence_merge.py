"""A small model's code fence into a file with content: a preview at the end, then a merge."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from spark_ide.editing import (
    BlockStatus,
    EditEvent,
    EditState,
    FailureReason,
    FileLimits,
    Outcome,
    TurnEditor,
    workspace_files,
)

from .support import chunk, make_doc, read, sync

USER = """\
# My notes: café au lait
import os


def greet(name):
    return "hi " + name


def is_prime(n):
    return False


print(greet(os.getlogin()))
"""

ANSWER = """\
Here is a faster version:
```python
import math

def is_prime(n):
    if n < 2:
        return False
    return all(n % i for i in range(2, math.isqrt(n) + 1))

print(is_prime(7))
```
It returns True for 7.
"""

MERGED = """\
# My notes: café au lait
import os
import math


def greet(name):
    return "hi " + name


def is_prime(n):
    if n < 2:
        return False
    return all(n % i for i in range(2, math.isqrt(n) + 1))


print(greet(os.getlogin()))

print(is_prime(7))
"""

FINAL_DETAIL = {
    "kind": "write",
    "fenced": True,
    "language": "python",
    "lines": [10, 18],
    "merge": {"replaced": ["is_prime"], "added": ["import math", "print(is_prime(7))"]},
    # What the model wrote in the fence, not the merged region of the file.
    "code": ANSWER[ANSWER.index("import math") : ANSWER.index("```\nIt")],
}


def statuses(events: list[EditEvent]) -> list[BlockStatus]:
    return [event for event in events if isinstance(event, BlockStatus)]


def run(doc: Doc[Any], answer: str, size: int = 9, turn: str = "t1", path: str = "main.py") -> TurnEditor:
    editor = TurnEditor(doc, turn, fence_path=path)
    for at in range(0, len(answer), size):
        editor.feed(answer[at : at + size])
    editor.finish()
    return editor


def test_the_code_streams_after_the_file_then_merges_into_it() -> None:
    doc = make_doc({"main.py": USER})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    upto = ANSWER.index("    if n < 2:") + len("    if n")
    events = editor.feed(ANSWER[: ANSWER.index("ath") + 1])
    # The preview: after the file and a blank line, the lines written so far.
    assert read(doc, "main.py") == USER + "\n"
    assert statuses(events)[-1].detail() == {
        "kind": "write", "fenced": True, "language": "python", "lines": [15, 15],
        "ghost": "import ma", "ghost_line": 15,
    }
    events = editor.feed(ANSWER[ANSWER.index("ath") + 1 : upto])
    # The file has an is_prime: the new one is not previewed (it would show it twice); its
    # region is the file's is_prime, which it will replace.
    assert read(doc, "main.py") == USER + "\nimport math\n"
    assert statuses(events)[-1].detail() == {"kind": "write", "fenced": True, "language": "python", "lines": [9, 10]}
    events = editor.feed(ANSWER[upto:]) + editor.finish()
    assert read(doc, "main.py") == MERGED
    final = statuses(events)[-1]
    assert final.state is EditState.APPLIED
    assert final.detail() == FINAL_DETAIL
    assert editor.ledger.entry(0).outcome is Outcome.APPLIED
    assert editor.ledger.as_prompt() == (
        "Edit blocks of turn t1:\n- block 0 <write> main.py lines 10-18: applied "
        "(merged: replaced is_prime; added import math, print(is_prime(7)))"
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(ANSWER)), max_size=25))
def test_any_chunking_merges_the_same(cuts: list[int]) -> None:
    doc = make_doc({"main.py": USER})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events: list[EditEvent] = []
    for piece in chunk(ANSWER, cuts):
        events += editor.feed(piece)
    events += editor.finish()
    assert read(doc, "main.py") == MERGED
    assert statuses(events)[-1].detail() == FINAL_DETAIL


def test_revert_gives_back_the_users_exact_file() -> None:
    for text in (USER, USER.rstrip("\n"), "x = 1\n\n\n"):
        doc = make_doc({"main.py": text})
        editor = run(doc, ANSWER)
        assert read(doc, "main.py") != text
        events = editor.revert()
        assert read(doc, "main.py") == text
        assert [(e.state, e.reason) for e in statuses(events)] == [(EditState.ROLLED_BACK, "reverted")]


def test_a_stop_while_the_code_streams_takes_the_preview_away() -> None:
    doc = make_doc({"main.py": USER})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    editor.feed(ANSWER[: ANSWER.index("    return all")])
    events = editor.cancel()
    assert read(doc, "main.py") == USER
    assert [(e.state, e.reason) for e in statuses(events)] == [(EditState.ROLLED_BACK, "cancelled")]


def test_an_unclosed_fence_leaves_the_file_as_it_was() -> None:
    doc = make_doc({"main.py": "x = 1"})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events = editor.feed("```python\ndef half(n):\n    return n / 2\n") + editor.finish()
    assert read(doc, "main.py") == "x = 1"
    assert statuses(events)[-1].reason == FailureReason.UNTERMINATED_BLOCK


def test_a_missing_file_is_created_with_the_code() -> None:
    doc = make_doc({})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events = editor.feed("```python\nX = 1\n```\n") + editor.finish()
    assert read(doc, "main.py") == "X = 1\n"
    assert statuses(events)[-1].detail()["merge"] == {"replaced": [], "added": ["X"]}


def test_the_same_code_again_changes_nothing_and_says_so() -> None:
    doc = make_doc({"main.py": USER})
    run(doc, ANSWER)
    again = TurnEditor(doc, "t2", fence_path="main.py")
    events = again.feed(ANSWER) + again.finish()
    assert read(doc, "main.py") == MERGED
    assert statuses(events)[-1].detail()["merge"] == {"replaced": [], "added": []}
    assert again.ledger.entry(0).outcome is Outcome.UNCHANGED
    assert not again.ledger.with_outcome(Outcome.APPLIED, Outcome.CONFLICTED)
    assert again.ledger.as_prompt().endswith(": unchanged (the file already had this code)")
    again.revert()
    assert read(doc, "main.py") == MERGED


def test_other_languages_keep_the_preview_as_the_inserted_code() -> None:
    script = "function a() {\n  return 1;\n}"
    doc = make_doc({"app.js": script})
    editor = TurnEditor(doc, "t1", fence_path="app.js")
    events = editor.feed("```js\nfunction b() {\n  return 2;\n}\n```\n") + editor.finish()
    assert read(doc, "app.js") == "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n"
    assert statuses(events)[-1].detail() == {
        "kind": "write", "fenced": True, "language": "js", "lines": [5, 7], "merge": {"inserted": True},
        "code": "function b() {\n  return 2;\n}\n",
    }
    editor.revert()
    assert read(doc, "app.js") == script


@pytest.mark.parametrize(
    ("text", "fence", "expected"),
    [
        ("def a(:\n    pass\n", "def b():\n    pass\n", "def a(:\n    pass\n\ndef b():\n    pass\n"),
        ("def a():\n    pass\n", "def a(:\n    pass\n", "def a():\n    pass\n\ndef a(:\n    pass\n"),
    ],
)
def test_a_syntax_error_on_either_side_inserts_the_code_at_the_end(text: str, fence: str, expected: str) -> None:
    doc = make_doc({"main.py": text})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events = editor.feed(f"```python\n{fence}```\n") + editor.finish()
    assert read(doc, "main.py") == expected
    assert statuses(events)[-1].detail()["merge"] == {"inserted": True}


def test_a_blank_file_just_gets_the_code() -> None:
    doc = make_doc({"main.py": "\n  \n"})
    editor = run(doc, ANSWER)
    code = ANSWER[ANSWER.index("import math") : ANSWER.index("```\nIt")]
    assert read(doc, "main.py") == code
    assert editor.ledger.entry(0).merge is not None
    assert editor.ledger.as_dicts()[0]["merge"] == {
        "replaced": [], "added": ["import math", "is_prime", "print(is_prime(7))"],
    }


def test_a_capable_models_write_block_still_replaces_the_whole_file() -> None:
    doc = make_doc({"main.py": USER})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events = editor.feed('<write path="main.py">\nx = 1\n</write>\n') + editor.finish()
    assert read(doc, "main.py") == "x = 1\n"
    assert "merge" not in statuses(events)[-1].detail()


def test_the_size_limit_counts_the_code_not_the_preview() -> None:
    limit = len(MERGED.encode())
    doc = make_doc({"main.py": USER})
    editor = TurnEditor(doc, "t1", fence_path="main.py", limits=FileLimits(max_file_bytes=limit))
    for at in range(0, len(ANSWER), 9):
        editor.feed(ANSWER[at : at + 9])
    editor.finish()
    assert read(doc, "main.py") == MERGED  # the preview went past the limit, the result does not
    small = TurnEditor(make_doc({"main.py": USER}), "t1", fence_path="main.py", limits=FileLimits(max_file_bytes=100))
    events = small.feed(ANSWER) + small.finish()
    assert statuses(events)[-1].reason == FailureReason.FILE_TOO_LARGE


# -- people typing meanwhile ------------------------------------------------------------


def peers(text: str) -> tuple[Doc[Any], Doc[Any]]:
    server = make_doc({"main.py": text}, client_id=1)
    person: Doc[Any] = Doc(client_id=2)
    person.apply_update(server.get_update())
    return server, person


def type_after(doc: Doc[Any], anchor: str, text: str) -> None:
    ytext = workspace_files(doc)["main.py"]
    current = str(ytext)
    at = current.index(anchor) + len(anchor)
    with doc.transaction(origin="human"):
        ytext.insert(len(current[:at].encode()), text)


def test_typing_elsewhere_survives_the_merge_and_its_revert() -> None:
    server, person = peers(USER)
    editor = TurnEditor(server, "t1", fence_path="main.py")
    editor.feed(ANSWER[: ANSWER.index("print(is_prime")])
    type_after(person, "# My notes", " (mine)")  # seen before the fence closes
    sync(server, person)
    editor.feed(ANSWER[ANSWER.index("print(is_prime") :])
    type_after(person, 'return "hi "', " + 'there '")  # concurrent with the merge
    editor.finish()
    sync(server, person)
    both = MERGED.replace("# My notes", "# My notes (mine)").replace('"hi "', "\"hi \" + 'there '")
    assert read(server, "main.py") == read(person, "main.py") == both
    editor.revert()
    sync(server, person)
    mine = USER.replace("# My notes", "# My notes (mine)").replace('"hi "', "\"hi \" + 'there '")
    assert read(server, "main.py") == read(person, "main.py") == mine


def test_a_definition_a_person_changed_meanwhile_is_kept_as_a_conflict() -> None:
    server, person = peers(USER)
    editor = TurnEditor(server, "t1", fence_path="main.py")
    editor.feed(ANSWER[: ANSWER.index("print(is_prime")])
    type_after(person, "    return False", "  # mine")
    sync(server, person)
    events = editor.feed(ANSWER[ANSWER.index("print(is_prime") :]) + editor.finish()
    sync(server, person)
    expected = USER.replace("import os\n", "import os\nimport math\n").replace(
        "return False", "return False  # mine"
    ) + "\nprint(is_prime(7))\n"
    assert read(server, "main.py") == read(person, "main.py") == expected
    final = statuses(events)[-1]
    assert final.detail()["conflict"] == {"lines": [10, 11]}
    assert final.detail()["merge"] == {"replaced": [], "added": ["import math", "print(is_prime(7))"]}
    assert editor.ledger.entry(0).outcome is Outcome.CONFLICTED


def test_typing_into_the_preview_keeps_the_code_where_it_was_previewed() -> None:
    server, person = peers(USER)
    editor = TurnEditor(server, "t1", fence_path="main.py")
    editor.feed(ANSWER[: ANSWER.index("print(is_prime")])
    sync(server, person)
    type_after(person, "import math", "  # yes")
    sync(server, person)
    events = editor.feed(ANSWER[ANSWER.index("print(is_prime") :]) + editor.finish()
    sync(server, person)
    # The preview stays as it was typed into; the is_prime it held back replaces the file's.
    replaced = MERGED[MERGED.index("def is_prime") : MERGED.index("\n\n\nprint(greet")]
    expected = USER.replace("def is_prime(n):\n    return False", replaced)
    expected += "\nimport math  # yes\n\nprint(is_prime(7))\n"
    assert read(server, "main.py") == read(person, "main.py") == expected
    assert statuses(events)[-1].detail()["merge"] == {"replaced": ["is_prime"], "added": []}
    editor.revert()
    sync(server, person)
    assert read(server, "main.py") == USER + "  # yes"  # the model's text goes, the person's stays


def test_text_typed_at_the_end_while_the_preview_streams_stays_after_it() -> None:
    server, person = peers(USER)
    editor = TurnEditor(server, "t1", fence_path="main.py")
    editor.feed(ANSWER[: ANSWER.index("def is_prime")])
    sync(server, person)
    ytext = workspace_files(person)["main.py"]
    with person.transaction(origin="human"):
        ytext.insert(len(ytext), "greet('x')\n")
    sync(server, person)
    editor.feed(ANSWER[ANSWER.index("def is_prime") :])
    editor.finish()
    sync(server, person)
    expected = MERGED.replace("print(greet(os.getlogin()))\n", "print(greet(os.getlogin()))\ngreet('x')\n")
    assert read(server, "main.py") == read(person, "main.py") == expected


@pytest.mark.timeout(300)
@settings(max_examples=80, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=len(ANSWER)), max_size=12),
    typing=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10_000)), max_size=6),
)
# A preview region read between a person's two-byte character's bytes (UnicodeDecodeError).
@example(cuts=[101], typing=[(0, 0), (1, 0), (1, 573)])
def test_whatever_a_person_types_meanwhile_stays_and_both_peers_agree(
    cuts: list[int], typing: list[tuple[int, int]]
) -> None:
    server, person = peers(USER)
    editor = TurnEditor(server, "t1", fence_path="main.py")
    pieces = chunk(ANSWER, cuts)
    for number, piece in enumerate(pieces):
        for when, where in typing:
            if when % (len(pieces) + 1) == number:
                ytext = workspace_files(person)["main.py"]
                current = str(ytext)
                at = where % (len(current) + 1)
                with person.transaction(origin="human"):
                    ytext.insert(len(current[:at].encode()), "¤")
                sync(server, person)
        editor.feed(piece)
    editor.finish()
    sync(server, person)
    text = read(server, "main.py")
    assert text == read(person, "main.py")
    typed = sum(1 for when, _ in typing if when % (len(pieces) + 1) < len(pieces))
    assert text.count("¤") == typed
    assert editor.ledger.entry(0).outcome in (Outcome.APPLIED, Outcome.CONFLICTED)
    editor.revert()
    sync(server, person)
    assert read(server, "main.py").replace("¤", "") == USER


LINES = [
    "def f(x):\n", "    return x\n", "```python\n", "```\n", "import os\n", "print(f(1))\n", "x = 1\n", "\n",
    "class A:\n", "    pass\n", "@dec\n", "# c\n", "é = 2\n", "  bad(\n", "text\n", "h = 3; k = 4\n",
]


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(st.sampled_from(LINES), max_size=8).map("".join),
    answer=st.lists(st.sampled_from(LINES), max_size=14).map("".join),
    size=st.integers(1, 12),
)
def test_any_file_and_answer_end_the_block_and_revert_restores_the_file(text: str, answer: str, size: int) -> None:
    doc = make_doc({"main.py": text})
    editor = run(doc, answer, size=size)
    assert not editor.ledger.with_outcome(Outcome.IN_FLIGHT)
    editor.revert()
    assert read(doc, "main.py") == text
