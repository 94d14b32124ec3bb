"""Tiers 1-2 on the corpus, and the API's small parts (severity, finding, merge, languages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_ide.guard import (
    RULES,
    FileScanner,
    Finding,
    Language,
    Severity,
    Tier,
    language_for,
    merge_findings,
    register_language,
    scan_text,
)
from tests.guard.corpus import CASES, Case


def _case_id(case: Case) -> str:
    kind = "pos" if case.line is not None else "neg"
    return f"{case.rule}-{kind}-{CASES.index(case)}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_corpus(case: Case) -> None:
    found = scan_text(case.path, case.text)
    if case.line is None:
        assert found == []
        return
    assert [(f.rule, f.line) for f in found] == [(case.rule, case.line)]
    (finding,) = found
    assert finding.severity == (case.severity or RULES[case.rule].severity)
    assert finding.message.startswith(f"line {case.line} ")
    assert finding.fix and finding.path == case.path


def test_every_rule_has_two_positives_and_two_negatives() -> None:
    for rule in RULES:
        cases = [case for case in CASES if case.rule == rule]
        assert sum(case.line is not None for case in cases) >= 2, rule
        assert sum(case.line is None for case in cases) >= 2, rule


def test_the_message_says_what_and_the_fix_says_how() -> None:
    text = 'def find(cursor, name):\n    cursor.execute(f"SELECT * FROM u WHERE n = {name}")\n'
    (finding,) = scan_text("app/db.py", text)
    assert finding.message == "line 2 builds SQL with an f-string and passes it to execute()"
    assert "cursor.execute(" in finding.fix and "%s" in finding.fix
    assert finding.tier is Tier.STATEMENT
    assert finding.as_dict() == {
        "rule": "sql-format", "severity": "high", "path": "app/db.py", "line": 2, "message": finding.message,
        "fix": finding.fix, "tier": "statement",
    }
    secret = scan_text("settings.py", 'DB_PASSWORD = "Xk9#mQ2$vL7p"\n')[0]
    assert "Xk9#mQ2$vL7p" not in secret.message + secret.fix  # a finding never repeats the secret
    assert 'DB_PASSWORD = os.environ["DB_PASSWORD"]' in secret.fix


def test_a_stream_that_starts_inside_a_function() -> None:
    """An edit block rewriting lines 40.. of a method: indented first lines, file line numbers."""
    text = (
        "        rows = []\n"
        "        for name in names:\n"
        '            sql = "SELECT * FROM t WHERE name = \'%s\'" % name\n'
        "            rows += cursor.execute(sql)\n"
        "        else:\n"
        "            os.system(command)\n"
        "        return rows\n"
        "\n"
        "    def other(self):\n"
        "        return yaml.load(self.text)\n"
    )
    found = scan_text("svc.py", text, first_line=40)
    assert [(f.rule, f.line) for f in found] == [("sql-format", 43), ("os-system", 45), ("yaml-load", 49)]
    assert found[0].message == "line 43 passes `sql` (SQL built with % formatting on line 42) to execute()"


def test_compound_headers_are_checked_and_do_not_break_parsing() -> None:
    text = (
        "try:\n"
        "    pass\n"
        "except (ValueError, KeyError) as error:\n"
        "    pass\n"
        "elif_count = 1\n"
        "while eval(condition):\n"
        "    break\n"
        "match command:\n"
        "    case {'run': cmd}:\n"
        "        subprocess.run(cmd, shell=True)\n"
        "@app.route(eval(path))\n"
        "def view(): ...\n"
        "with requests.Session() as s, s.get(url, verify=False) as r:\n"
        "    pass\n"
    )
    found = scan_text("flow.py", text)
    assert [(f.rule, f.line) for f in found] == [
        ("eval-exec", 6), ("shell-true", 10), ("eval-exec", 11), ("verify-false", 13),
    ]


def test_each_key_is_reported_once_and_the_most_severe_wins() -> None:
    found = scan_text("a.py", 'os.system("ls"); os.system(cmd)\nos.system(cmd)\n')
    assert [(f.rule, f.line, f.severity) for f in found] == [
        ("os-system", 1, Severity.HIGH), ("os-system", 2, Severity.HIGH),
    ]


def test_python_rules_only_run_on_python() -> None:
    text = "eval(user_input)\n"
    assert scan_text("notes.txt", text) == []
    assert scan_text("notes.txt", text, language="python") != []
    assert scan_text("cell", text, language=".py") != []
    assert language_for("x.PY").name == "python" and language_for(".env.local").config_style


def test_completed_blocks_are_top_level_statements_with_their_bodies() -> None:
    scanner = FileScanner("m.py", first_line=10)
    scanner.feed("import os\n\n@decorate\ndef f(x):\n    if x:\n        return 1\n# note\n    else:\n")
    assert [(b.first_line, b.source) for b in scanner.completed_blocks()] == [(10, "import os\n")]
    scanner.feed("        return 2\nclass A:\n    pass\n")
    assert [(b.first_line, b.source.split("\n")[0]) for b in scanner.completed_blocks()] == [(12, "@decorate")]
    assert scanner.completed_blocks() == []
    scanner.finish()
    assert [(b.first_line, b.source) for b in scanner.completed_blocks()] == [(19, "class A:\n    pass")]
    assert FileScanner("notes.md").completed_blocks() == []


def test_severity_is_ordered_and_parsed() -> None:
    assert Severity.LOW < Severity.MEDIUM < Severity.HIGH and max(Severity) is Severity.HIGH
    assert Severity.parse(" High ") is Severity.HIGH and str(Severity.MEDIUM) == "medium"
    with pytest.raises(ValueError, match="unknown severity"):
        Severity.parse("critical")


def _finding(rule: str, line: int, severity: Severity, tier: Tier, path: str = "a.py") -> Finding:
    return Finding(rule=rule, severity=severity, path=path, line=line, message="m", fix="f", tier=tier)


def test_merge_keeps_one_finding_per_key_the_most_severe() -> None:
    ours = _finding("sql-format", 3, Severity.HIGH, Tier.STATEMENT)
    bandit = _finding("sql-format", 3, Severity.MEDIUM, Tier.BANDIT)
    secret = _finding("secret-password", 2, Severity.MEDIUM, Tier.SECRET)
    bandit_password = _finding("bandit-B105", 2, Severity.LOW, Tier.BANDIT)
    ruff_timeout, bandit_timeout = (_finding("ruff-S113", 9, Severity.LOW, Tier.RUFF),
                                    _finding("bandit-B113", 9, Severity.LOW, Tier.BANDIT))
    other = _finding("eval-exec", 1, Severity.HIGH, Tier.STATEMENT, path="b.py")
    merged = merge_findings([bandit, other, ruff_timeout], [ours, bandit_password, secret, bandit_timeout])
    assert merged == [secret, ours, bandit_timeout, other]


def test_another_language_can_add_rules() -> None:
    def no_grant_all(path: str, line: str, number: int) -> list[Finding]:
        if "GRANT ALL" not in line.upper():
            return []
        return [Finding("sql-grant-all", Severity.MEDIUM, path, number, f"line {number} grants everything",
                        "grant only the privileges the role needs", Tier.STATEMENT)]

    register_language(Language("guard-test-sql", (".guardsql",), line_rules=(no_grant_all,)))
    found = scan_text("init.guardsql", "CREATE ROLE app;\ngrant all on db to app;\n")
    assert [(f.rule, f.line) for f in found] == [("sql-grant-all", 2)]


def test_the_doc_lists_every_rule() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "guard.md").read_text()
    for rule in RULES.values():
        assert f"| `{rule.id}` | {rule.severity}" in doc, rule.id
