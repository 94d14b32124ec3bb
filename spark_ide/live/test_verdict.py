"""What a test run says: pytest's verdict read from its output, and what the next round is told.

After a round of the model that changed files, the room runs the workspace's tests (``pytest``,
docs/sandbox.md) when it has any (`has_tests`, by pytest's own discovery rules), and reads the
verdict from the output (`read_verdict`): the counts from pytest's final line (``1 failed,
3 passed in 0.12s``, between ``=`` signs unless ``-q``), and the failing tests with their
messages from its short test summary (``FAILED path::test - message``, ``ERROR path``), which
pytest prints by default (``-r fE``). A message pytest cut to the terminal's width (``...``) or
left out (a collection error) is taken whole from the test's section of tracebacks (its ``E``
lines). Colour codes and ``\\r\\n`` are read past (`run_report.readable`); an output cut in its
middle still has its end, which is what counts. Read alike from pytest 7.2 (Debian's, the
sandbox's runtime) to 9. `failure_summary` is the request of the round asked to fix the
failures, `verdict_line` the transcript's words for people. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import ClassVar

from .run_report import cut_output, readable

# pytest's defaults: the files it collects (``python_files``) and the folders it does not go
# into (``norecursedirs``, and __pycache__ and virtual environments, which it always skips).
TEST_FILES = ("test_*.py", "*_test.py")
SKIPPED_FOLDERS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")
_VENV_MARKS = ("pyvenv.cfg", "conda-meta/history", "bin/activate")  # a folder holding one is a virtualenv
MAX_LISTED = 10  # failing tests a failure summary names; the others are counted
MAX_MESSAGE = 300  # characters of a failure's message in a failure summary
_MIN_OUTPUT = 64  # bytes: less room than that, and the summary shows no output
_NO_TESTS = 5  # pytest's exit code when it collected no test (4: usage error, 3: internal, 2: interrupted)
_EXIT_WORDS: dict[int | None, str] = {  # pytest's exit codes (None: the sandbox ended the run)
    None: "did not finish", 0: "passed", 1: "tests failed", 2: "interrupted", 3: "pytest's internal error",
    4: "pytest's usage error", _NO_TESTS: "no tests ran",
}
_COUNTED = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "errors")  # pytest's order

_SUMMARY = re.compile(r"=* ?(?P<counts>no tests ran|\d+ \w+(?:, \d+ \w+)*) in \d+(?:\.\d+)?s(?: \([\d:.]+\))? ?=*")
_SHORT_HEADER = re.compile(r"=+ short test summary info =+")
_REPORTED = re.compile(r"(?:FAILED|ERROR) (?P<test>.+?(?:\[.*?\])?)(?: - (?P<message>.*))?")
_REPORT_WORDS = ("FAILED ", "ERROR ", "SKIPPED ", "XFAIL ", "XPASS ", "PASSED ", "!")
_SECTION = re.compile(r"_+ (?P<title>[^_ ].*?) _+")  # not "_ _ _ _", which parts a traceback's calls
_PART = re.compile(r"=+ .+ =+")  # FAILURES, ERRORS, warnings summary...: the end of a test's section
_FAILURES = re.compile(r"=+ (?:FAILURES|ERRORS) =+")
_COLLECTING = re.compile(r"Interrupted: \d+ errors? during collection")


@dataclass(frozen=True, slots=True)
class Failure:
    """A test that failed or errored: its node id (``tests/test_a.py::test_add[1]``, or the
    file for a collection error) and its exception line ("" when pytest gave none)."""

    test: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class TestVerdict:
    """A test run as pytest reported it. ``exit_code`` None: the run did not finish (the sandbox
    ended it), nothing else is known. ``counted``: pytest's final line was read (the counts are
    its); ``collection_error``: tests could not be collected (or pytest not start)."""

    __test__: ClassVar[bool] = False  # a class, not tests to collect

    exit_code: int | None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    deselected: int = 0
    failures: tuple[Failure, ...] = ()
    collection_error: bool = False
    counted: bool = False

    @property
    def finished(self) -> bool:
        return self.exit_code is not None

    @property
    def green(self) -> bool:
        """Every test collected passed (pytest's exit code 0)."""
        return self.exit_code == 0

    @property
    def no_tests(self) -> bool:
        """pytest collected no test (exit code 5), or deselected every one."""
        return self.exit_code == _NO_TESTS

    @property
    def counts_text(self) -> str:
        """The counts in pytest's words and order ("1 failed, 3 passed"), or "no tests ran" when all
        are 0 (also when pytest's final line was not read: see `counted`, `verdict_line`)."""
        parts = [f"{count} {'error' if name == 'errors' and count == 1 else name}"
                 for name in _COUNTED if (count := getattr(self, name))]
        return ", ".join(parts) or "no tests ran"


def has_tests(paths: Iterable[str]) -> bool:
    """Whether pytest, run with no arguments in the workspace's root, would find a test file
    among ``paths`` (workspace paths, ``/``-separated)."""
    paths = list(paths)
    venvs = {path[: -len(mark) - 1] for path in paths for mark in _VENV_MARKS if path.endswith("/" + mark)}
    for path in paths:
        *folders, name = path.split("/")
        if not any(fnmatchcase(name, pattern) for pattern in TEST_FILES):
            continue
        if any(fnmatchcase(folder, pattern) for folder in folders for pattern in SKIPPED_FOLDERS):
            continue
        if not any("/".join(folders[:depth]) in venvs for depth in range(1, len(folders) + 1)):
            return True
    return False


def read_verdict(output: str, exit_code: int | None) -> TestVerdict:
    """The verdict of a pytest run from its output (stdout and stderr as printed) and exit code
    (None when the sandbox ended the run: a time or output limit, Stop)."""
    if exit_code is None:
        return TestVerdict(exit_code=None)
    lines = readable(output).splitlines()
    end = next((at for at in range(len(lines) - 1, -1, -1) if _SUMMARY.fullmatch(lines[at].strip())), len(lines))
    counts = _counts(lines[end].strip()) if end < len(lines) else {}
    sections = _sections(lines[:end])
    failures = tuple(_failure(found["test"], found["message"] or "", sections)
                     for line in lines[_short_summary_start(lines, end):end] if (found := _REPORTED.fullmatch(line)))
    ran = any(counts.get(name) for name in _COUNTED if name != "errors")
    collection_error = (any(title.startswith("ERROR collecting ") for title in sections)
                        or any(_COLLECTING.search(line) for line in lines[max(end - 3, 0):end])
                        or (exit_code not in (0, 1, _NO_TESTS) and not ran))
    return TestVerdict(exit_code=exit_code, failures=failures, collection_error=collection_error,
                       counted=end < len(lines), **counts)


def verdict_line(verdict: TestVerdict) -> str:
    """The verdict for people, as the transcript shows it: "1 failed, 3 passed"."""
    if verdict.exit_code is None:
        return _EXIT_WORDS[None]
    return f"not collected: {_said(verdict)}" if verdict.collection_error else _said(verdict)


def failure_summary(verdict: TestVerdict, output: str, *, budget: int) -> str:
    """The request of the round asked to fix the tests: the verdict, the failing tests with
    their messages (the first `MAX_LISTED`), and the output from the first failure's traceback
    on, cut (start and end) so the whole is at most ``budget`` bytes of UTF-8."""
    if budget < 0:
        raise ValueError(f"a failure summary's budget is a number of bytes, not {budget}")
    head = _lead(verdict) + "\n"
    if verdict.failures:
        listed, shown = "Failing:\n", 0
        for failure in verdict.failures[:MAX_LISTED]:
            line = f"- {failure.test}: {_shorter(failure.message)}\n" if failure.message else f"- {failure.test}\n"
            if _size(head + listed + line + _more(len(verdict.failures) - shown - 1)) > budget // 2:
                break
            listed, shown = listed + line, shown + 1
        head += listed + _more(len(verdict.failures) - shown)
    text, tracebacks = _tracebacks(readable(output))
    label = "Tracebacks (pytest's output):\n" if tracebacks else "Output:\n"
    room = budget - _size(head) - _size(label)
    if text.strip() and room >= _MIN_OUTPUT:
        head += label + _shown_within(text, room)
    return _fit(head, budget)


def _counts(line: str) -> dict[str, int]:
    """The counts of pytest's final line ("1 failed, 3 passed, 1 warning in 0.12s") by field."""
    found = _SUMMARY.fullmatch(line)
    counts: dict[str, int] = {}
    if found is None or found["counts"] == "no tests ran":
        return counts
    for part in found["counts"].split(", "):
        number, word = part.split(" ")
        name = "errors" if word in ("error", "errors") else word
        if name in _COUNTED:
            counts[name] = int(number)
    return counts


def _short_summary_start(lines: list[str], end: int) -> int:
    """Where the short test summary's lines begin: after its header, or, with the header cut
    out of the output, the report lines just above pytest's final line."""
    for at in range(end - 1, -1, -1):
        if _SHORT_HEADER.fullmatch(lines[at]):
            return at + 1
    start = end
    while start > 0 and lines[start - 1].startswith(_REPORT_WORDS):
        start -= 1
    return start


def _sections(lines: list[str]) -> dict[str, list[str]]:
    """The ``E`` lines of each section of tracebacks (``____ test_add[1] ____``), by title."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if found := _SECTION.fullmatch(line):
            current = sections.setdefault(found["title"], [])
        elif _PART.fullmatch(line):
            current = None
        elif current is not None and (line == "E" or line.startswith("E ")):
            current.append(line[1:].strip())
    return sections


def _failure(test: str, message: str, sections: dict[str, list[str]]) -> Failure:
    """A failing test; a message pytest cut ("...") or left out is taken from its section's E
    lines: the one it begins, or the exception line (a test's first, a collection error's last)."""
    if message and not message.endswith("..."):
        return Failure(test, message)
    path, colons, name = test.partition("::")
    head = name.replace("::", ".")
    titles = (head, f"ERROR at setup of {head}", f"ERROR at teardown of {head}") if colons else (
        f"ERROR collecting {path}",)
    lines = [line for title in titles for line in sections.get(title, ())]
    if message:
        return Failure(test, next((line for line in lines if line.startswith(message[:-3])), message))
    if lines:
        return Failure(test, lines[0] if colons else lines[-1])
    return Failure(test)


def _said(verdict: TestVerdict) -> str:
    """pytest's counts, or what its exit code means when its final line is not there."""
    if verdict.counted:
        return verdict.counts_text
    return _EXIT_WORDS.get(verdict.exit_code, f"pytest exited with code {verdict.exit_code}")


def _lead(verdict: TestVerdict) -> str:
    if verdict.exit_code is None:
        return "The tests did not finish: the sandbox ended the run (a time or output limit) before pytest's report."
    if verdict.collection_error:
        return f"The tests could not be collected: {_said(verdict)}."
    if verdict.green:
        return f"The tests pass: {_said(verdict)}."
    if verdict.no_tests:
        return f"No tests ran: {_said(verdict)}."
    return f"The tests fail: {_said(verdict)}."


def _tracebacks(text: str) -> tuple[str, bool]:
    """pytest's sections of tracebacks (FAILURES, ERRORS) without the short summary that repeats
    them, and True; or, without such sections, the whole output and False."""
    lines = text.splitlines(keepends=True)
    start = next((at for at, line in enumerate(lines) if _FAILURES.fullmatch(line.rstrip("\n"))), None)
    if start is None:
        return text, False
    end = next((at for at in range(len(lines) - 1, start, -1) if _SHORT_HEADER.fullmatch(lines[at].rstrip("\n"))),
               len(lines))
    return "".join(lines[start:end]), True


def _shown_within(text: str, room: int) -> str:
    """``text`` cut to its start and end so that, with the line saying what is left out, it
    takes at most ``room`` bytes."""
    allowed = room
    while True:
        shown = cut_output(text, allowed).shown()
        over = _size(shown) - room
        if over <= 0 or allowed <= 0:
            return shown
        allowed = max(allowed - over, 0)


def _more(left: int) -> str:
    return f"- and {left} more\n" if left else ""


def _shorter(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _fit(text: str, budget: int) -> str:
    """``text`` within ``budget`` bytes, cut at a character, never inside one."""
    data = text.encode("utf-8")
    return text if len(data) <= budget else data[:budget].decode("utf-8", errors="ignore")
