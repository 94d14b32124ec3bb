"""The run tool's command: what the model may run, read into the description every run has.

A run of a room is ``python <file> [args]`` or ``pytest [args]`` (docs/sandbox.md): a person's
Run (the ``run`` message: a ``path``, or ``tests``) is one without arguments
(`RunCommand.of_request`); the model's ``run`` call is parsed here (`parse_run_command`)
into the same `RunCommand`, so the room has one way to start a run. The language is
``upstream.dialects.RUN_GRAMMAR`` (a custom tool's input is held to it), stated in
``RUN_RULES``, which every refusal repeats:

* ``python <file> [arguments...]`` (``python3`` too): the file is a workspace path, checked
  with the workspace path rules (``editing.paths``) and, given the files, that it is one of
  them; the arguments are the program's, any words.
* ``pytest [paths...] [-x] [-q] [-k EXPRESSION]`` (``python -m pytest`` too): a path is a
  workspace file or folder, or a test in a file (``tests/test_a.py::test_add``); no other
  option.

Words are split as a POSIX shell would (``shlex``) but nothing of a shell runs: an unquoted
operator (``;``, ``&&``, ``|``, ``>``...), ``$``, a backquote or a backslash is refused, as is
anything on a second line. Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass

from spark_ide.editing.paths import MAX_PATH_LENGTH, BadPath, clean_path
from spark_ide.upstream.dialects import RUN_RULES

MAX_COMMAND_CHARS = 2_000
MAX_WORDS = 64
PYTEST_FLAGS = ("-x", "-q")
KEYWORD_OPTION = "-k"
_PYTHONS = ("python", "python3")
_UNQUOTED_REFUSED = {";": "';'", "&": "'&'", "|": "'|'", "<": "'<'", ">": "'>'", "(": "'('", ")": "')'",
                     "$": "'$'", "`": "'`'", "\\": "a backslash"}
_IN_DOUBLE_QUOTES_REFUSED = {"$": "'$'", "`": "'`'", "\\": "a backslash"}
_TEST_NAME = re.compile(r"(::[A-Za-z_][A-Za-z0-9_]*)+(\[[^\]\s]*\])?")


class CommandRefused(ValueError):
    """The command is not one the run tool runs. ``reason`` says why; the message adds the grammar."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}\n\n{RUN_RULES}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RunCommand:
    """One run as the sandbox starts it: ``python <path> <args...>`` or, ``tests``,
    ``pytest <args...>`` (``path`` is then ""), in the workspace's root."""

    tests: bool
    path: str = ""
    args: tuple[str, ...] = ()

    @classmethod
    def of_request(cls, *, path: str, tests: bool) -> RunCommand:
        """A person's Run (the ``run`` message): the file, or every test (its ``path`` is not used then)."""
        return cls(tests=True) if tests else cls(tests=False, path=path)

    @property
    def text(self) -> str:
        """The command as one line, quoted where needed (``pytest -x -k 'add or sub'``)."""
        words = ["pytest", *self.args] if self.tests else ["python", self.path, *self.args]
        return shlex.join(words)


def parse_run_command(
    text: str, *, files: Collection[str] | None = None, max_path_length: int = MAX_PATH_LENGTH,
) -> RunCommand:
    """``text`` as a `RunCommand`, or `CommandRefused`. ``files``: the workspace's files, when
    given every path must name one of them (a pytest path: a file or a folder of them)."""
    words = _words(text)
    head = words[0]
    if head in _PYTHONS and words[1:3] == ["-m", "pytest"]:
        return _pytest(words[3:], files=files, max_path_length=max_path_length)
    if head in _PYTHONS:
        return _python(words[1:], files=files, max_path_length=max_path_length)
    if head == "pytest":
        return _pytest(words[1:], files=files, max_path_length=max_path_length)
    raise CommandRefused(f"{head[:80]!r} is not a command the run tool knows: only python and pytest")


def _words(text: str) -> list[str]:
    """The command's words, or why it is not one command of words."""
    line = text.strip()
    if not line:
        raise CommandRefused("the command is empty")
    if len(line) > MAX_COMMAND_CHARS:
        raise CommandRefused(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    if "\n" in line or "\r" in line:
        raise CommandRefused("one command on one line: the command has several lines")
    if any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in line):
        raise CommandRefused("the command contains a control character")
    shell = _shell_syntax(line)
    if shell:
        raise CommandRefused(f"there is no shell here: {shell} cannot be used")
    try:
        words = shlex.split(line)
    except ValueError:
        raise CommandRefused("a quote is not closed") from None
    if len(words) > MAX_WORDS:
        raise CommandRefused(f"the command has more than {MAX_WORDS} words")
    return words


def _shell_syntax(line: str) -> str:
    """What of a shell ``line`` uses outside single quotes ("" for nothing)."""
    quote = ""
    for ch in line:
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif quote == '"':
            if ch == '"':
                quote = ""
            elif ch in _IN_DOUBLE_QUOTES_REFUSED:
                return f"{_IN_DOUBLE_QUOTES_REFUSED[ch]} (even inside double quotes)"
        elif ch in "'\"":
            quote = ch
        elif ch in _UNQUOTED_REFUSED:
            return f"{_UNQUOTED_REFUSED[ch]} (quote it)" if ch in "()<>" else _UNQUOTED_REFUSED[ch]
    return ""


def _python(words: list[str], *, files: Collection[str] | None, max_path_length: int) -> RunCommand:
    if not words:
        raise CommandRefused("python needs the file to run: python <file> [arguments...]")
    path, args = words[0], words[1:]
    if path.startswith("-"):
        raise CommandRefused(f"python runs a file of the workspace; its option {path[:40]!r} is not allowed")
    path = _clean(path, max_path_length=max_path_length)
    if files is not None and path not in files:
        raise CommandRefused(f"there is no file {path[:200]!r} in the workspace to run")
    return RunCommand(tests=False, path=path, args=tuple(args))


def _pytest(words: list[str], *, files: Collection[str] | None, max_path_length: int) -> RunCommand:
    args: list[str] = []
    rest = iter(words)
    for word in rest:
        if word in PYTEST_FLAGS:
            args.append(word)
        elif word == KEYWORD_OPTION:
            expression = next(rest, None)
            if expression is None or not expression.strip() or expression.startswith("-"):
                raise CommandRefused("-k needs an expression after it: -k 'name or other_name'")
            args += [word, expression]
        elif word.startswith("-"):
            raise CommandRefused(f"the pytest option {word[:40]!r} is not allowed here: only -x, -q and -k EXPRESSION")
        else:
            args.append(_test_path(word, files=files, max_path_length=max_path_length))
    return RunCommand(tests=True, args=tuple(args))


def _test_path(word: str, *, files: Collection[str] | None, max_path_length: int) -> str:
    """A pytest path: a workspace file or folder, or a test of a file (``path::name``)."""
    path, colons, name = word.partition("::")
    test = colons + name
    if test and not _TEST_NAME.fullmatch(test):
        raise CommandRefused(f"{word[:200]!r} does not name a test: tests/test_file.py::test_name")
    path = _clean(path, max_path_length=max_path_length)
    if files is not None:
        if path in files:
            return path + test
        if test or not any(name.startswith(path + "/") for name in files):
            raise CommandRefused(f"there is no {'file' if test else 'file or folder'} {path[:200]!r} in the workspace")
    return path + test


def _clean(path: str, *, max_path_length: int) -> str:
    try:
        return clean_path(path, max_length=max_path_length)
    except BadPath as exc:
        raise CommandRefused(f"bad path {path[:200]!r}: {exc}") from None
