"""Tier 3 (bandit in-process) and the full scan after a turn (tiers 1-3 and ruff's S rules)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from spark_ide.guard import Severity, Tier, bandit_scan, full_scan, ruff_scan, warm_up, whole_files
from tests.guard.corpus import AWS_KEY_ID

MODULE = '''import hashlib
import subprocess


def run(cmd, password, data):
    subprocess.run(cmd, shell=True)
    token = hashlib.md5(password.encode()).hexdigest()
    checksum = hashlib.md5(data).hexdigest()
    return token, checksum
'''


@pytest.fixture(scope="module", autouse=True)
def bandit_ready() -> Iterator[None]:
    warm_up()  # bandit's test set is built once per process; do it before the first test measures anything
    yield


def test_bandit_maps_shared_checks_to_our_rule_ids() -> None:
    found = {(f.rule, f.line): f for f in bandit_scan("m.py", MODULE)}
    assert set(found) == {("shell-true", 6), ("weak-password-hash", 7), ("bandit-B324", 8)}
    assert found["shell-true", 6].severity is Severity.HIGH and found["shell-true", 6].tier is Tier.BANDIT
    assert found["bandit-B324", 8].severity is Severity.LOW  # MD5 for a checksum: not the password rule


def test_bandit_on_a_block_from_the_middle_of_a_function() -> None:
    block = "        if ok:\n            eval(expr)\n    exec(code)\n"
    found = bandit_scan("svc.py", block, first_line=120)
    assert [(f.rule, f.line) for f in found] == [("eval-exec", 121), ("eval-exec", 122)]


def test_bandit_ignores_what_does_not_parse_and_nosec() -> None:
    assert bandit_scan("m.py", "def f(:\n    eval(x)\n") == []
    assert bandit_scan("m.py", "x = 1\n") == []
    assert [f.rule for f in bandit_scan("m.py", "eval(x)  # nosec\n")] == ["eval-exec"]


def test_bandit_scans_from_several_threads() -> None:
    expected = bandit_scan("m.py", MODULE)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(bandit_scan("m.py", MODULE))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4


def test_ruff_maps_its_s_rules_and_the_files_back() -> None:
    found = ruff_scan({"a/one.py": "import pickle\npickle.loads(b)\n", "../two.py": "eval(x)  # noqa: S307\n"})
    assert {(f.path, f.rule, f.line, f.tier) for f in found} == {
        ("a/one.py", "pickle-load", 2, Tier.RUFF), ("../two.py", "eval-exec", 1, Tier.RUFF),
    }


def test_full_scan_merges_every_tier_once_per_key() -> None:
    files = {
        "app/m.py": MODULE + 'response = requests.get(url, timeout=5, verify=False)\n',
        ".env": f"AWS_KEY={AWS_KEY_ID}\n",
        "README.md": "nothing to see\n",
    }
    found = full_scan(files)
    assert [(f.path, f.rule, f.line) for f in found] == [
        (".env", "secret-aws-key", 1),
        ("app/m.py", "shell-true", 6),
        ("app/m.py", "weak-password-hash", 7),
        ("app/m.py", "bandit-B324", 8),
        ("app/m.py", "verify-false", 10),
    ]
    assert len({f.key for f in found}) == len(found)
    assert found[1].tier is Tier.STATEMENT  # the same severity everywhere: the first tier's message is kept


def test_full_scan_without_ruff_logs_and_goes_on(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(whole_files, "ruff_executable", lambda: None)
    with caplog.at_level(logging.WARNING, logger="spark_ide.guard.whole_files"):
        found = full_scan({"m.py": "import pickle\npickle.loads(b)\n"})
    assert [(f.rule, f.line) for f in found] == [("pickle-load", 2)]
    assert "ruff is not installed" in caplog.text
