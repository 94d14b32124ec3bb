"""Long lines (a paragraph, a minified JSON line, a 50,000-character literal): the work each stage does must grow with
the line, never with its square. No timing is asserted: the tests count what the stages read (calls, characters,
token lengths) and check that the cheaper way gives the same answers as the plain one."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_ide.guard import FileScanner, python_fstrings, python_lexer, scan_text, secret_rules
from spark_ide.guard.python_fstrings import PIECE, split_fstrings
from spark_ide.guard.secret_rules import _SECRET_HINTS, _may_assign_a_secret
from tests.guard.corpus import AWS_KEY_ID

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = 200_000

# -- tier 1: the assignment gate -------------------------------------------------------------------------------------

_NAME_RUN = re.compile(r"[\w.\-$]*+")


def _gate_as_it_was(line: str) -> bool:
    """``_may_assign_a_secret`` before it skipped the runs it had read: every hint tried where it occurs."""
    if not line.isascii():
        return True
    low = line.lower()
    for hint in _SECRET_HINTS:
        at = low.find(hint)
        while at >= 0:
            if secret_rules._REST_OF_NAME.match(low, at + len(hint)) is not None:
                return True
            at = low.find(hint, at + 1)
    return False


GATE_PIECES = ["token", "Token", "pass", "pwd", "secret", "key", "cred", "tok", "en", "_", ".", "-", "$", "x", "1",
               " ", "=", ":", "'", '"', "]", "[", "(", "\t", "é"]


@SETTINGS
@given(st.lists(st.sampled_from(GATE_PIECES), max_size=30).map("".join))
def test_the_assignment_gate_answers_as_before(line: str) -> None:
    assert _may_assign_a_secret(line) == _gate_as_it_was(line)


class _CountingPattern:
    """Stands in for ``_REST_OF_NAME``: counts the name characters each match reads (at least the run it starts on)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls = 0
        self.read = 0

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.calls += 1
        run = _NAME_RUN.match(text, pos)
        self.read += run.end() - pos if run is not None else 0
        return self.pattern.match(text, pos)


def test_a_long_run_of_hints_is_read_once_per_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingPattern(secret_rules._REST_OF_NAME)
    monkeypatch.setattr(secret_rules, "_REST_OF_NAME", counting)
    line = "x = '" + "token" * (LONG // 5) + "'"
    assert not _may_assign_a_secret(line)
    # Each hint reads the run once (it was once per occurrence: 40,000 reads of up to 200,000 characters).
    assert counting.calls <= len(_SECRET_HINTS)
    assert counting.read <= len(_SECRET_HINTS) * len(line)
    counting.calls = counting.read = 0
    line = "token, " * (LONG // 7)  # many short runs: one read each
    assert not _may_assign_a_secret(line)
    assert counting.read <= 2 * len(line)


def test_a_secret_after_a_long_run_of_hints_is_found() -> None:
    secret = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    line = "x = '" + "token" * (LONG // 5) + "'; api_token = '" + secret + "'"
    found = scan_text("app.py", "import os\n" + line + "\n")
    assert [(f.rule, f.line, f.severity.value) for f in found] == [("secret-password", 2, "high")]


# -- the lexer's memory of bracket patterns --------------------------------------------------------------------------


def test_only_short_bracket_patterns_are_remembered() -> None:
    lines = [f"x = [{i}" + ", (1, '2')" * (1000 + i) + "]" for i in range(20)]
    scan_text("app.py", "\n".join(lines) + "\n")
    assert all(len(pattern) <= python_lexer._WHOLE_LONGEST for pattern in python_lexer._WHOLE)


# -- the scanner's unfinished line -----------------------------------------------------------------------------------


def test_an_unfinished_line_is_kept_in_few_pieces() -> None:
    scanner = FileScanner("app.py")
    deltas = LONG // 4
    for _ in range(deltas):
        assert scanner.feed("abcd") == []
    assert len(scanner._partial) <= deltas // 64 + 64
    assert scanner.feed(" = 1\nx = 2\n") == []
    assert scanner.finish() == []


@SETTINGS
@given(st.lists(st.sampled_from(["ab", "c", "\n", "x = 1", AWS_KEY_ID[:6], AWS_KEY_ID[6:], " ", "'"]), max_size=200))
def test_any_number_of_pieces_gives_the_whole_text_findings(pieces: list[str]) -> None:
    scanner = FileScanner("app.py")
    found = [finding for piece in pieces for finding in scanner.feed(piece)] + scanner.finish()
    assert found == scan_text("app.py", "".join(pieces))


# -- tier 2: f-strings cut before ast.parse --------------------------------------------------------------------------

FSTRING_PIECES = [
    "a", "x", "1", " ", "{", "}", "{{", "}}", "{x}", "{x!r}", "{x:>10}", "{x:{w}}", "{x=}", "{x = }", "{x!s:^{w}.{p}}",
    "\\", "\\n", "\\N{DASH}", "\\N{EM DASH}", "\\{", "\\}", "'", '"', "'''", "\n", "#", ":", "!", "=", "<", ">", "!=",
    "==", "{a['k']}", '{a["k"]}', "{(lambda y: y)(1)}", "{ {1: 2}[1] }", "{[1,2][0]}", "{a if b else c}", "{x:{{}}}",
    "{'''a'''}", "{f'{y}'}", "{x:'>10}", "{x!}", "{x!z}", "{}", "{ }", "{a<b}", "{a>=b}", "{a:=1}", "{(a:=1)}",
    "{x:{y:{z}}}", "\\\\", "\\'", '\\"', "{x:\\n}", "{os.system(cmd)}", "SELECT * FROM t WHERE ", "{name}", "{a)",
    "{(a}", "{a # c}",
]
PREFIXES = ["f", "F", "rf", "fr", "Rf", "fR", "RF", "", "r", "b", "u", "if", "elif"]
QUOTES = ["'", '"', "'''", '"""']
literals = st.tuples(
    st.sampled_from(PREFIXES), st.sampled_from(QUOTES), st.lists(st.sampled_from(FSTRING_PIECES), max_size=8),
).map(lambda parts: f"{parts[0]}{parts[1]}{''.join(parts[2])}{parts[1]}")
sources = st.tuples(
    st.lists(literals, min_size=1, max_size=3), st.sampled_from([" ", "", "\n", " # it's\n "]),
    st.sampled_from(["x = ({})", "x = {}", "cursor.execute({})", "x = 1 # {}\ny = ({})"]),
).map(lambda parts: parts[2].replace("{}", parts[1].join(parts[0])))


def _shape(source: str) -> object:
    """The syntax tree and every node's lines (but the format specs': 3.11 gives them their string token's), or that
    it does not parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return "does not parse"
    specs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            specs.add(id(node.format_spec))
            specs.update(id(value) for value in node.format_spec.values if isinstance(value, ast.Constant))
    lines = [
        (type(node).__name__, node.lineno, node.end_lineno) for node in ast.walk(tree)
        if isinstance(node, ast.expr | ast.stmt) and id(node) not in specs
    ]
    return ast.dump(tree), lines


@SETTINGS
@given(sources)
def test_cut_fstrings_parse_to_the_same_tree_on_the_same_lines(source: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(python_fstrings, "PIECE", 1)  # cut after every field it can
        assert _shape(split_fstrings(source)) == _shape(source)


def test_cuts_on_examples() -> None:
    source = 'q = f"SELECT * FROM t WHERE a = ' + "{a} AND b = '{b!r:>{w}}' OR " * 200 + '{{literal}} {c}"'
    cut = split_fstrings(source)
    assert cut != source and cut.count('" f"') >= 10
    assert _shape(cut) == _shape(source)
    for unchanged in (
        'x = "' + "{a}" * 1000 + '"',  # not an f-string
        'x = b"' + "{a}" * 1000 + '"',
        'x = elif"' + "{a}" * 1000 + '"',  # a name, then a plain string
        'x = f"' + "{a}" * 1000 + '}"',  # a lone "}": does not parse, left to the parser
        'x = f"' + "{a}" * 1000,  # unterminated
        "# f'" + "{a}" * 1000 + "'",  # a comment
        'x = f"' + "{a" + "}" * 1000 + '"',
    ):
        assert split_fstrings(unchanged) == unchanged


def _string_tokens(source: str) -> list[str]:
    return [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.STRING]


def _parsed_sources(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``ast.parse`` is handed from now on, for statements long enough to be cut."""
    handed: list[str] = []

    def split(source: str) -> str:
        handed.append(split_fstrings(source))
        return handed[-1]

    monkeypatch.setattr(python_lexer, "split_fstrings", split)
    return handed


def test_a_long_fstring_reaches_the_parser_in_short_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """3.11's parser reads an f-string token from its start for every field: the tokens it gets stay short."""
    handed = _parsed_sources(monkeypatch)
    fields = "{name} and {other!r} or {x:>{width}} "
    line = '    cursor.execute(f"SELECT * FROM users WHERE ' + fields * (LONG // len(fields)) + '")'
    found = scan_text("app.py", "def find(cursor, name, other, x, width):\n" + line + "\n")
    assert [(f.rule, f.line) for f in found] == [("sql-format", 2)]
    tokens = [token for source in handed for token in _string_tokens(source)]
    assert len(tokens) > 100 and max(len(token) for token in tokens) <= PIECE + len(fields) + 10


def test_a_long_multiline_fstring_reaches_the_parser_in_short_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    handed = _parsed_sources(monkeypatch)
    body = "".join(f"{{row_{n}}} | {{value!r}}\n" for n in range(LONG // 24))
    text = 'import os\nos.system(f"""echo\n' + body + '""")\n'
    assert [(f.rule, f.line) for f in scan_text("app.py", text)] == [("os-system", 2)]
    tokens = [token for source in handed for token in _string_tokens(source)]
    assert len(tokens) > 10 and max(len(token) for token in tokens) <= PIECE + 40
