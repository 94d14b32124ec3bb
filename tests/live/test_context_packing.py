"""The packer with @-mentions, symbols and files taken out (issue 32): mentions come first,
a ``path:symbol`` as the symbol's source only, a mention of a file that is not there is
skipped with a note, an excluded file is not shown at all, and the budget cuts the rest."""

from __future__ import annotations

from spark_ide.live.context import Packing, read_mention, symbol_source, symbols_of
from spark_ide.live.prompting import PromptStyle, TurnInput, _pack, request_showing
from spark_ide.live.usage import request_tokens
from spark_ide.upstream import Message

UTIL = '''"""Helpers."""
import os

LIMIT = 3


@cache
def helper(x):
    return x + 1


class Box:
    size = 2
'''

FILES = {"app.py": "import util\nprint(util.helper(1))\n", "util.py": UTIL, "zeta.md": "notes\n"}


def pack(files: dict[str, str], budget: int = 10_000, **given: object) -> tuple[str, Packing]:
    fields: dict[str, object] = {"active_path": "app.py", "prompt": "go", "budget_tokens": budget, "active_last": False}
    fields.update(given)
    return _pack(files, **fields)  # type: ignore[arg-type]


def paths_in(text: str) -> list[str]:
    return [line.split('"')[1] for line in text.splitlines() if line.startswith("<file path=")]


def test_mentions_come_first_then_the_active_file_then_the_rest() -> None:
    text, packing = pack(FILES, mentions=("zeta.md", "util.py"))
    assert paths_in(text) == ["zeta.md", "util.py", "app.py"]
    assert packing.whole == ("zeta.md", "util.py", "app.py")
    assert packing.missing == () and packing.left_out == () and packing.excluded == ()
    assert paths_in(pack(FILES)[0]) == ["app.py", "util.py", "zeta.md"]  # no mentions: as before


def test_a_symbol_mention_is_its_source_only_and_the_file_keeps_its_place() -> None:
    found = symbol_source(UTIL, "helper")
    assert found is not None and found[0].first == 7 and found[0].last == 9  # the decorator is part of it
    assert [(s.name, s.kind) for s in symbols_of(UTIL)] == [("LIMIT", "name"), ("helper", "function"), ("Box", "class")]
    # The budget holds the symbol and the active file, not util.py whole.
    text, packing = pack(FILES, mentions=("util.py:helper",), budget=50)
    assert text.startswith('<file path="util.py" lines="7-9" symbol="helper" excerpt="true">\n@cache\ndef helper(x):')
    assert packing.symbols == (("util.py:helper", "util.py", 7, 9),)
    assert packing.whole[0] == "app.py" and "util.py" in packing.left_out
    # A symbol of a file that comes whole anyway (mentioned whole, or active) is not shown twice.
    _, both = pack(FILES, mentions=("util.py", "util.py:helper"))
    assert both.symbols == () and both.whole[0] == "util.py"


def test_a_missing_mention_is_skipped_with_a_note_in_the_request() -> None:
    _, packing = pack(FILES, mentions=("gone.py", "util.py:nothing", "app.py:x"))
    assert packing.missing == (
        ("gone.py", "no such file"), ("util.py:nothing", "no top-level nothing in util.py"),
    )  # app.py:x: the active file comes whole, its symbols with it
    request, shown = request_showing(
        TurnInput(text="use @gone.py", files=FILES, active_path="app.py", mentions=("gone.py",)), PromptStyle(),
    )
    message = request.input[0]
    assert isinstance(message, Message)
    assert "Mentioned but skipped: @gone.py (no such file)\n" in message.text
    assert shown.missing == (("gone.py", "no such file"),)
    assert read_mention("a:b.py", {"a:b.py"}).symbol is None  # a path with a colon stays a path
    assert read_mention("a.py:f", {"a.py"}).symbol == "f"


def test_an_excluded_file_is_not_shown_nor_named_even_when_mentioned() -> None:
    text, packing = pack(FILES, mentions=("util.py", "util.py:helper"), exclude=("util.py", "nowhere.py"))
    assert paths_in(text) == ["app.py", "zeta.md"] and "util.py" not in text
    assert packing.excluded == ("util.py",) and packing.missing == () and packing.symbols == ()


def test_the_budget_cuts_the_first_file_and_leaves_out_the_rest() -> None:
    big = {"big.py": "x = 1\n" * 400, **FILES}
    text, packing = pack(big, mentions=("big.py",), budget=300)
    assert text.startswith('<file path="big.py" truncated="true">')
    assert packing.cut[0][0] == "big.py" and packing.cut[0][2] == 401 and 0 < packing.cut[0][1] < 400
    assert packing.whole == () and set(packing.left_out) == {"app.py", "util.py", "zeta.md"}
    assert "Files not shown (context budget): app.py, util.py, zeta.md" in text


def test_a_requests_tokens_are_its_instructions_and_messages_estimated() -> None:
    request, _ = request_showing(TurnInput(text="go", files=FILES, active_path="app.py"), PromptStyle())
    message = request.input[0]
    assert isinstance(message, Message)
    # One estimate of a request for the context strip, turn.context and an uncounted turn's
    # usage (live.usage): four characters a token, a started one counted.
    assert request_tokens(request) == -(-(len(request.instructions) + len(message.text)) // 4)
