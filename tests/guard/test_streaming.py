"""Streaming: any chunking gives the findings of the whole text; partial and random text never raises."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_ide.guard import CodeBlock, FileScanner, Finding, scan_text
from tests.guard.corpus import CASES

# Every corpus snippet, plus one file of all the Python ones nested in a class: long statements, indentation.
TEXTS = [(case.path, case.text) for case in CASES]
TEXTS.append((
    "mixed.py",
    "class Service:\n" + "".join(
        f"    def m{i}(self):\n" + "".join(f"        {line}\n" for line in case.text.splitlines()) + "\n"
        for i, case in enumerate(CASES) if case.path.endswith(".py")
    ),
))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def _stream(path: str, pieces: list[str], first_line: int = 1) -> tuple[list[Finding], list[CodeBlock]]:
    scanner = FileScanner(path, first_line=first_line)
    found: list[Finding] = []
    blocks: list[CodeBlock] = []
    for piece in pieces:
        found += scanner.feed(piece)
        blocks += scanner.completed_blocks()
    found += scanner.finish()
    return found, blocks + scanner.completed_blocks()


@SETTINGS
@given(st.sampled_from(TEXTS), st.lists(st.integers(min_value=0, max_value=4000), max_size=60))
def test_any_chunking_gives_the_whole_text_findings(sample: tuple[str, str], cuts: list[int]) -> None:
    path, text = sample
    found, blocks = _stream(path, _chunks(text, cuts))
    assert found == scan_text(path, text)
    assert blocks == _stream(path, [text])[1]


@SETTINGS
@given(st.sampled_from(TEXTS), st.integers(min_value=1, max_value=5000), st.integers(min_value=1, max_value=9))
def test_first_line_shifts_every_finding(sample: tuple[str, str], first_line: int, chunk: int) -> None:
    path, text = sample
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    found, _ = _stream(path, pieces, first_line)
    assert found == scan_text(path, "\n" * (first_line - 1) + text)


def test_one_character_at_a_time_on_the_mixed_file() -> None:
    path, text = TEXTS[-1]
    found, _ = _stream(path, list(text))
    assert found == scan_text(path, text)
    assert len(found) == sum(case.line is not None for case in CASES if case.path.endswith(".py"))


@SETTINGS
@given(st.sampled_from(TEXTS), st.data())
def test_a_partial_prefix_never_raises(sample: tuple[str, str], data: st.DataObject) -> None:
    path, text = sample
    end = data.draw(st.integers(min_value=0, max_value=len(text)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=end), max_size=10))
    found, blocks = _stream(path, _chunks(text[:end], cuts))
    lines = text[:end].split("\n")
    assert all(1 <= f.line <= len(lines) for f in found)
    for block in blocks:  # each block is the text's own lines, in order
        size = block.source.count("\n") + 1
        assert block.source == "\n".join(lines[block.first_line - 1 : block.first_line - 1 + size])
    assert [b.first_line for b in blocks] == sorted({b.first_line for b in blocks})


PYTHONISH = st.text(alphabet="()[]{}'\"#\\\n\r\t :=@fFrb.%+xyeval(exec)os.system\x00\x0c", max_size=300)


@SETTINGS
@given(
    st.one_of(st.text(max_size=400), PYTHONISH, st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace"))),
    st.lists(st.integers(min_value=0, max_value=400), max_size=30),
    st.sampled_from(["fuzz.py", "fuzz.env", "fuzz.txt"]),
)
def test_random_text_in_random_chunks_never_raises(text: str, cuts: list[int], path: str) -> None:
    found, _ = _stream(path, _chunks(text, cuts))
    assert found == scan_text(path, text)


def test_pathological_lines_finish() -> None:
    """Lines that make a backtracking regex or a recursive walk explode (pytest's timeout catches a hang)."""
    lines = [
        "password: " + " " * 5000 + "x", "token: " + "a " * 3000, "token=" * 3000, "password = '" + "\\'" * 3000,
        "var apiKey=function(a,b){return a+b};" * 500, "aws" + "_secret" * 1000, "key:" * 3000, "(" * 3000,
        "eval(" + "[" * 1000 + "]" * 1000 + ")", "sk-" + "a-" * 3000,
    ]
    for line in lines:
        for path in ("a.py", "a.env"):
            assert scan_text(path, line + "\n") == []
    deep = [
        "x = " + ".".join(["a"] * 2000) + '.execute(f"SELECT {q}")',
        'db.execute("SELECT " + ' + " + ".join(["a"] * 2000) + ")",
    ]
    for line in deep:
        assert [f.rule for f in scan_text("a.py", line)] == ["sql-format"]
