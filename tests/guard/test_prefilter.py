"""The cheap tests before the rules (``guard.prefilter``), and the lexer's fast path: each must be exactly as strict as
what it stands in for — a line the words skip is one the rules' own tests would have let pass, and the fast lexer finds
the statements the exact one finds."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_ide.guard import BANDIT_HINTS, wants_bandit
from spark_ide.guard.prefilter import HINT_MARK, KEY_MARK, Words
from spark_ide.guard.python_context import ANY_TRIGGER, SQL_WORDS, STATEMENT_MARK, STATEMENT_WORDS
from spark_ide.guard.python_lexer import LogicalLines, Statement
from spark_ide.guard.secret_rules import _ANY_HINT, _ANY_PREFIX, SECRET_WORDS
from tests.guard.corpus import CASES

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Text that reaches the words: pieces of them, their case and the characters a case-insensitive pattern also takes.
PIECES = [
    "key", "KEY", "pass", "Token", "secret", "cred", "pwd", "AKIA", "akia", "aws", "AWS", "gh", "ghp_", "sk-",
    "_live_", "xox", "AIza", "PRIVATE KEY", "exec", "eval", "load", "import ", "from ", "select", "SELECT", "join",
    "order by", "debug", "debug =", "run", "ickle", "pickle", "shell", "md5", "os.", "/tmp", "0.0.0.0", "input(",
    "\u0131", "\u017f", "\u212a", "\u0130", "e", "y", "s", "\n", " ", "(", ")", "'", '"', "#", "\\", "=", ":", "x",
]
texts = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


def _lines(text: str) -> list[str]:
    return text.split("\n")


@SETTINGS
@given(texts)
def test_a_line_a_secret_gate_lets_through_is_marked(text: str) -> None:
    marked = SECRET_WORDS.lines(text)
    for index, line in enumerate(_lines(text)):
        if _ANY_PREFIX.search(line):
            assert marked.get(index, 0) & KEY_MARK, line
        if _ANY_HINT.search(line):
            assert marked.get(index, 0) & HINT_MARK, line


@SETTINGS
@given(texts)
def test_a_line_a_statement_rule_could_want_is_marked(text: str) -> None:
    marked = STATEMENT_WORDS.lines(text)
    for index, line in enumerate(_lines(text)):
        wanted = (
            ANY_TRIGGER.search(line) or SQL_WORDS.search(line) or "import " in line or "from " in line
            or "debug" in line
        )
        if wanted:
            assert marked.get(index, 0) & STATEMENT_MARK, line


def test_words_name_the_lines_and_their_marks() -> None:
    words = Words(exact=("exec",), mark=1) | Words(anycase=("key", "execute"), mark=2)
    assert words.lines("a\nb = exec(x)\n\nAPI_KEY = 1\nexecute") == {1: 1, 3: 2, 4: 3}
    assert words.lines("nothing here") == {}
    assert words.lines("K\u212aEY") == {0: 2}  # the Kelvin sign, as re.IGNORECASE takes it
    assert [word for word, _ in words.anycase] == ["execute", "key"]  # "execute" holds "exec", but not its mark
    assert [word for word, _ in (Words(anycase=("exec", "execute"))).anycase] == ["exec"]


@SETTINGS
@given(texts)
def test_the_bandit_hint_test_is_the_regex(text: str) -> None:
    assert wants_bandit(text) == (BANDIT_HINTS.search(text) is not None)


def test_the_bandit_hint_test_on_the_corpus() -> None:
    for case in CASES:
        for start in range(0, len(case.text), 5):
            piece = case.text[start : start + 60]
            assert wants_bandit(piece) == (BANDIT_HINTS.search(piece) is not None), piece


class _ExactLines(LogicalLines):
    """The lexer without its fast paths: the state machine over every token."""

    def _scan(self, text: str) -> None:
        self._continued = False
        self._scan_exactly(text, 0)


def _statements(lexer: LogicalLines, lines: list[str]) -> list[Statement | None]:
    out = [lexer.take() if lexer.push(line, number) else None for number, line in enumerate(lines, start=1)]
    return [*out, lexer.finish()]


LEXER_PIECES = ["a", " ", ":", "=", "(", ")", "[", "]", "{", "}", "'", '"', "'''", '"""', "\\", "#", "f'", "x'y'",
                '"q"', "\u00e9", "\t"]


@SETTINGS
@given(st.lists(st.lists(st.sampled_from(LEXER_PIECES), max_size=14).map("".join), min_size=1, max_size=8))
def test_the_fast_lexer_finds_the_statements_the_exact_one_does(lines: list[str]) -> None:
    assert _statements(LogicalLines(), lines) == _statements(_ExactLines(), lines)


def test_the_fast_lexer_on_this_projects_code() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "spark_ide"
    for path in sorted(root.rglob("*.py"))[:60]:
        lines = path.read_text(encoding="utf-8").split("\n")
        assert _statements(LogicalLines(), lines) == _statements(_ExactLines(), lines), path


def test_an_assignment_gate_keeps_every_secret_name() -> None:
    from spark_ide.guard.secret_rules import _may_assign_a_secret

    for line in ('API_KEY = "x"', "cfg['db_password']: 'x'", "token := 'x'", "export AUTH_TOKEN=abc", '"apiKey": "x"',
                 "self.client_secret = 'x'", "SECRET_KEY: str = 'x'", "my-key=x", "$secret = 'x'"):
        assert _may_assign_a_secret(line), line
    for line in ('get(f"/items/{key}")', "def fetch(self, key):", '"""items that pass the check"""'):
        assert not _may_assign_a_secret(line), line
