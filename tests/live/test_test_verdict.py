"""Reading a test run's verdict from pytest's real output (default verbosity, -q, -x, colour,
collection errors, no tests), the workspaces that have tests, and what the next round is told."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.live.run_report import cut_output
from spark_ide.live.test_verdict import (
    MAX_LISTED,
    Failure,
    TestVerdict,
    failure_summary,
    has_tests,
    read_verdict,
    verdict_line,
)
from spark_ide.sandbox.core.jail import child_env
from spark_ide.sandbox.core.sandbox import DEFAULT_PYTHON, PYTEST_ARGS

OK_TESTS = """
def test_one():
    assert 1 + 1 == 2

def test_two():
    assert "a" in "abc"
"""
FAILING_TESTS = '''
import pytest

def add(a, b):
    return a + b

def test_first_passes():
    assert add(2, 2) == 4

def test_add():
    assert add(1, 2) == 4

def test_name():
    return x

@pytest.mark.parametrize("word", ["a b c", "c[d]", "ok!"])
def test_words(word):
    assert len(word) == 3

def test_long():
    assert "spam " * 30 == "eggs " * 30

def test_prints_a_summary():
    print("99 passed in 0.01s")
    assert False, "the summary it printed is not pytest's"

@pytest.mark.skip(reason="later")
def test_skipped():
    pass

@pytest.mark.xfail
def test_xfail():
    assert False

def deep(n):
    if n == 3:
        raise LookupError("nothing under the key " + "k" * 80)
    return deep(n + 1)

def test_deep():
    deep(0)

class TestThing:
    def test_method(self):
        raise ValueError("bad value\\nsecond line")

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_setup_error(broken):
    pass
'''
WORKSPACES: dict[str, dict[str, str]] = {
    "mixed": {"tests/test_ok.py": OK_TESTS, "tests/test_fail.py": FAILING_TESTS, "main.py": "print(1)\n"},
    "broken": {"tests/test_ok.py": OK_TESTS, "tests/test_import.py": "import nothere\n\ndef test_never():\n    pass\n"},
    "green": {"test_ok.py": OK_TESTS},
    "empty": {"main.py": "print(1)\n"},
}
RUNS: dict[str, tuple[str, tuple[str, ...]]] = {  # name: (workspace, pytest's arguments)
    "mixed": ("mixed", ()),
    "mixed -q": ("mixed", ("-q",)),
    "mixed -x": ("mixed", ("-x",)),
    "mixed -q -x": ("mixed", ("-q", "-x")),
    "mixed colour": ("mixed", ("--color=yes",)),
    "mixed -k nothing": ("mixed", ("-k", "nothing")),
    "broken": ("broken", ()),
    "broken -q": ("broken", ("-q",)),
    "green -q": ("green", ("-q",)),
    "empty": ("empty", ()),
    "empty -q": ("empty", ("-q",)),
    "no such file": ("green", ("nothere.py",)),
}
MIXED_FAILURES = (
    Failure("tests/test_fail.py::test_add", "assert 3 == 4"),
    Failure("tests/test_fail.py::test_name", "NameError: name 'x' is not defined"),
    Failure("tests/test_fail.py::test_words[a b c]", "AssertionError: assert 5 == 3"),
)


def pytest_run(python: str, root: Path, args: tuple[str, ...]) -> tuple[str, int]:
    """pytest as the sandbox runs it (its arguments, its environment: no terminal, 80 columns),
    its output (stdout and stderr together) and exit code."""
    env = {**child_env(home=str(root), tmp=str(root)), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([python, *PYTEST_ARGS, *args], cwd=root, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    return done.stdout, done.returncode


def workspace(base: Path, name: str) -> Path:
    root = base / name
    for path, text in WORKSPACES[name].items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, tuple[str, int]]:
    """Every run of `RUNS` once, with the tests' own pytest."""
    base = tmp_path_factory.mktemp("workspaces")
    roots = {name: workspace(base, name) for name in WORKSPACES}
    return {run: pytest_run(sys.executable, roots[name], args) for run, (name, args) in RUNS.items()}


def test_the_run_of_failing_tests_is_read_in_pytests_words(runs: Mapping[str, tuple[str, int]]) -> None:
    output, code = runs["mixed"]
    verdict = read_verdict(output, code)
    assert code == 1
    assert (verdict.failed, verdict.passed, verdict.skipped, verdict.xfailed, verdict.errors) == (8, 4, 1, 1, 1)
    assert verdict.counts_text == "8 failed, 4 passed, 1 skipped, 1 xfailed, 1 error"
    assert verdict_line(verdict) == verdict.counts_text
    assert verdict.counted and verdict.finished and not verdict.green and not verdict.no_tests
    assert not verdict.collection_error


def test_each_failing_test_comes_with_its_message(runs: Mapping[str, tuple[str, int]]) -> None:
    failures = read_verdict(*runs["mixed"]).failures
    assert failures[:3] == MIXED_FAILURES
    by_test = {failure.test: failure.message for failure in failures}
    assert by_test["tests/test_fail.py::test_words[c[d]]"] == "AssertionError: assert 4 == 3"
    # pytest cut this one to 80 columns in its summary ("sp....."): it is taken whole from the traceback
    assert by_test["tests/test_fail.py::test_long"] == (
        "AssertionError: assert 'spam spam sp...am spam spam ' == 'eggs eggs eg...gs eggs eggs '")
    assert by_test["tests/test_fail.py::test_prints_a_summary"] == (
        "AssertionError: the summary it printed is not pytest's")
    assert by_test["tests/test_fail.py::TestThing::test_method"] == "ValueError: bad value"
    assert by_test["tests/test_fail.py::test_setup_error"] == "RuntimeError: fixture broke"
    # and this one, raised three calls down ("_ _ _" parts the calls in its traceback)
    assert by_test["tests/test_fail.py::test_deep"] == f"LookupError: nothing under the key {'k' * 80}"
    assert len(failures) == 9  # 8 failed, 1 error


@pytest.mark.parametrize("run", ["mixed -q", "mixed colour"])
def test_quiet_and_coloured_runs_read_alike(runs: Mapping[str, tuple[str, int]], run: str) -> None:
    output, code = runs[run]
    assert read_verdict(output, code) == read_verdict(*runs["mixed"])
    if run == "mixed colour":
        assert "\x1b[" in output


@pytest.mark.parametrize("run", ["mixed -x", "mixed -q -x"])
def test_a_run_stopped_at_its_first_failure(runs: Mapping[str, tuple[str, int]], run: str) -> None:
    output, code = runs[run]
    verdict = read_verdict(output, code)
    assert "stopping after 1 failures" in output
    assert verdict.counts_text == "1 failed, 1 passed"
    assert verdict.failures == MIXED_FAILURES[:1]


@pytest.mark.parametrize("run", ["broken", "broken -q"])
def test_a_collection_error_is_its_own_verdict(runs: Mapping[str, tuple[str, int]], run: str) -> None:
    output, code = runs[run]
    verdict = read_verdict(output, code)
    assert code == 2
    assert verdict.collection_error
    assert verdict.counts_text == "1 error"
    assert verdict_line(verdict) == "not collected: 1 error"
    # pytest names the file alone ("ERROR tests/test_import.py"): the message is the traceback's last line
    assert verdict.failures == (Failure("tests/test_import.py", "ModuleNotFoundError: No module named 'nothere'"),)


def test_green_no_tests_and_deselected(runs: Mapping[str, tuple[str, int]]) -> None:
    green = read_verdict(*runs["green -q"])
    assert green.green and green.counts_text == "2 passed" and green.failures == ()
    for run in ("empty", "empty -q"):
        empty = read_verdict(*runs[run])
        assert empty.no_tests and not empty.green and not empty.collection_error
        assert verdict_line(empty) == "no tests ran"
    deselected = read_verdict(*runs["mixed -k nothing"])
    assert deselected.no_tests and deselected.deselected == 15 and verdict_line(deselected) == "15 deselected"


def test_pytest_not_finding_its_tests_is_a_collection_error(runs: Mapping[str, tuple[str, int]]) -> None:
    output, code = runs["no such file"]
    verdict = read_verdict(output, code)
    assert code == 4 and "file or directory not found" in output
    assert verdict.collection_error and verdict_line(verdict) == "not collected: no tests ran"
    assert "file or directory not found: nothere.py" in failure_summary(verdict, output, budget=1000)


def test_an_output_cut_in_its_middle_still_has_its_verdict(runs: Mapping[str, tuple[str, int]]) -> None:
    output, code = runs["mixed"]
    whole = read_verdict(output, code)
    cut = cut_output(output, 700)
    assert cut.bytes_left_out
    shown = read_verdict(cut.shown(), code)
    assert shown.counts_text == whole.counts_text
    # the failing tests of the summary's lines left; a message pytest cut stays cut when its
    # traceback is among the lines left out
    whole_messages = {failure.test: failure.message for failure in whole.failures}
    assert 0 < len(shown.failures) < len(whole.failures)
    for failure in shown.failures:
        assert whole_messages[failure.test].startswith(failure.message.removesuffix("..."))
    assert read_verdict(output.replace("\n", "\r\n"), code) == whole
    # trailing spaces dropped: the line of "_ _ _" parting a traceback's calls is no section's title
    assert read_verdict("\n".join(line.rstrip() for line in output.splitlines()), code) == whole


def test_a_run_that_did_not_finish(runs: Mapping[str, tuple[str, int]]) -> None:
    output = runs["mixed"][0]
    verdict = read_verdict(output, None)
    assert verdict == TestVerdict(exit_code=None)
    assert not verdict.finished and not verdict.green and verdict_line(verdict) == "did not finish"
    summary = failure_summary(verdict, "tests/test_slow.py ..", budget=500)
    assert summary.startswith("The tests did not finish")
    assert summary.endswith("Output:\ntests/test_slow.py ..")


def test_no_summary_line_falls_back_on_the_exit_code() -> None:
    verdict = read_verdict("something went wrong\n", 1)
    assert not verdict.counted and verdict_line(verdict) == "tests failed"
    assert verdict_line(read_verdict("", 139)) == "not collected: pytest exited with code 139"


def test_the_next_rounds_request(runs: Mapping[str, tuple[str, int]]) -> None:
    output, code = runs["mixed"]
    summary = failure_summary(read_verdict(output, code), output, budget=8192)
    assert summary.startswith(
        "The tests fail: 8 failed, 4 passed, 1 skipped, 1 xfailed, 1 error.\nFailing:\n"
        "- tests/test_fail.py::test_add: assert 3 == 4\n"
        "- tests/test_fail.py::test_name: NameError: name 'x' is not defined\n"
    )
    assert "\nTracebacks (pytest's output):\n" in summary
    assert ">       assert add(1, 2) == 4" in summary  # a traceback
    assert "short test summary info" not in summary  # the list above says it
    assert len(summary.encode()) <= 8192


def test_many_failures_are_counted_past_the_first_ones() -> None:
    failures = tuple(Failure(f"tests/test_a.py::test_{n}", "assert False") for n in range(MAX_LISTED + 5))
    summary = failure_summary(TestVerdict(exit_code=1, failed=15, failures=failures), "", budget=4000)
    assert summary.count("\n- tests/test_a.py::test_") == MAX_LISTED
    assert summary.endswith("- and 5 more\n")
    small = failure_summary(TestVerdict(exit_code=1, failed=15, failures=failures), "", budget=200)
    assert small.endswith("more\n") and len(small.encode()) <= 200


def test_a_budget_is_never_negative() -> None:
    with pytest.raises(ValueError, match="budget"):
        failure_summary(TestVerdict(exit_code=1), "", budget=-1)


@settings(max_examples=300, deadline=None)
@given(
    output=st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\ufffd"), max_size=3000),
    messages=st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\ufffd\n")),
                      max_size=14),
    code=st.sampled_from([None, 0, 1, 2, 5]),
    budget=st.integers(min_value=0, max_value=3000),
)
def test_a_summary_keeps_to_its_budget_in_whole_characters(
    output: str, messages: list[str], code: int | None, budget: int,
) -> None:
    lines = [f"FAILED tests/test_é.py::test_{n} - {message}" for n, message in enumerate(messages)]
    output = "\n".join([output, "=== short test summary info ===", *lines, f"== {len(lines)} failed in 0.1s =="])
    summary = failure_summary(read_verdict(output, code), output, budget=budget)
    assert len(summary.encode("utf-8")) <= budget
    assert "\ufffd" not in summary


@pytest.mark.parametrize(
    ("paths", "found"),
    [
        (["tests/test_a.py"], True),
        (["test_a.py"], True),
        (["src/calc_test.py"], True),
        (["main.py", "tests/helpers.py", "tests/conftest.py", "testing.py", "test_a.txt"], False),
        ([".hidden/test_a.py", "node_modules/x/test_a.py", "venv/lib/test_a.py", "build/test_a.py"], False),
        (["dist/test_a.py", "pkg.egg/test_a.py", "src/__pycache__/test_a.py", "a/.git/test_a.py"], False),
        (["env/pyvenv.cfg", "env/lib/test_a.py"], False),  # a virtualenv, whatever its name
        (["env/pyvenv.cfg", "env/lib/test_a.py", "tests/test_b.py"], True),
        (["Test_a.py"], False),  # pytest's patterns are case-sensitive here
        ([], False),
    ],
)
def test_has_tests_follows_pytests_discovery(paths: list[str], found: bool) -> None:
    assert has_tests(paths) is found
    assert has_tests(iter(paths)) is found


def test_the_sandbox_runtimes_pytest_reads_alike(tmp_path: Path, runs: Mapping[str, tuple[str, int]]) -> None:
    """The sandbox runs its own pytest (Debian's, 7.2 on bookworm): its output reads the same."""
    check = subprocess.run([DEFAULT_PYTHON, "-c", "import pytest"], capture_output=True)
    if check.returncode != 0:
        pytest.skip(f"{DEFAULT_PYTHON} has no pytest (make sandbox-runtime)")
    for run in ("mixed", "broken -q"):
        name, args = RUNS[run]
        output, code = pytest_run(DEFAULT_PYTHON, workspace(tmp_path, name), args)
        assert read_verdict(output, code) == read_verdict(*runs[run])
