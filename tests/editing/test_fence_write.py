"""Small models answer with a Markdown code fence: with a fence path it becomes a write.

Into an empty file (here) the code is the file; into one with content it is merged
(test_fence_merge.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spark_ide.editing import BlockStatus, EditState, ProseEvent, TurnEditor
from spark_ide.editing.parse_events import BlockOpened, WriteChunk
from spark_ide.editing.parser import EditStreamParser

from .support import make_doc, read

ANSWER = (
    "Here's a Python function that checks if a number is prime:\n"
    "```python\n"
    "def is_prime(n):\n"
    "    return n > 1 and all(n % i for i in range(2, n))\n"
    "```\n"
    "You can use it like this:\n"
    "```python\n"
    "print(is_prime(7))\n"
    "```\n"
)
FILE = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"


def run(chunks: list[str], fence_path: str | None = "main.py") -> tuple[str, list[EditState]]:
    doc = make_doc({"main.py": ""})
    editor = TurnEditor(doc, "t1", fence_path=fence_path)
    events = []
    for chunk in chunks:
        events += editor.feed(chunk)
    events += editor.finish()
    states = [e.state for e in events if hasattr(e, "state")]
    return read(doc, "main.py"), states


def test_the_first_fence_becomes_an_empty_files_content() -> None:
    text, states = run([ANSWER])
    assert text == FILE
    assert states[-1] is EditState.APPLIED
    assert states.count(EditState.APPLIED) == 1  # the usage example is prose


@given(st.lists(st.integers(min_value=1, max_value=len(ANSWER)), max_size=30))
def test_any_chunking_gives_the_same_file(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [ANSWER[a:b] for a, b in zip([0, *points], [*points, len(ANSWER)], strict=True) if a < b]
    assert run(chunks)[0] == FILE


def test_without_a_fence_path_fences_are_prose() -> None:
    events = EditStreamParser().feed(ANSWER) + EditStreamParser().finish()
    assert not any(isinstance(e, BlockOpened) for e in events)


def test_a_write_block_before_any_fence_wins() -> None:
    parser = EditStreamParser(fence_path="main.py")
    events = parser.feed('<write path="other.py">\nx = 1\n</write>\n```python\ny = 2\n```\n') + parser.finish()
    opened = [e for e in events if isinstance(e, BlockOpened)]
    assert [(e.kind.value, e.path) for e in opened] == [("write", "other.py")]
    assert "".join(e.text for e in events if isinstance(e, WriteChunk)) == "x = 1\n"


def test_an_unclosed_fence_is_undone() -> None:
    text, states = run(["```python\ndef half(", "):\n"])
    assert text == ""
    assert states[-1] is EditState.FAILED


def test_the_fenced_write_is_flagged_with_its_language_and_the_rest_is_prose() -> None:
    editor = TurnEditor(make_doc({"main.py": ""}), "t1", fence_path="main.py")
    events = editor.feed(ANSWER) + editor.finish()
    details = [e.detail() for e in events if isinstance(e, BlockStatus)]
    opened = {"kind": "write", "fenced": True, "language": "python", "lines": [1, 1], "ghost": "", "ghost_line": 1}
    assert details[0] == opened
    assert details[-1] == {
        "kind": "write", "fenced": True, "language": "python", "lines": [1, 2],
        "merge": {"replaced": [], "added": ["is_prime"]}, "code": FILE,
    }
    prose = [e.text for e in events if isinstance(e, ProseEvent)]
    assert prose[0] == "Here's a Python function that checks if a number is prime:\n"
    assert "".join(prose[1:]) == "You can use it like this:\n```python\nprint(is_prime(7))\n```\n"


def test_a_tag_block_is_not_flagged_fenced() -> None:
    editor = TurnEditor(make_doc({}), "t1", fence_path="main.py")
    events = editor.feed('```xml\n<write path="a.py">\nx\n</write>\n```\n') + editor.finish()
    details = [e.detail() for e in events if isinstance(e, BlockStatus)]
    assert details[-1] == {"kind": "write", "lines": [1, 1]}
    assert not any(isinstance(e, ProseEvent) for e in events)
