"""Which rules apply to a file: a registry of languages, so a language other than Python can add its own.

Tier 1 (secrets) runs on every file. A language adds tier 2 by giving a factory of ``StatementChecker``: one object
per streamed file that sees the completed lines in order and reports findings as its statements complete (it keeps
whatever per-file state it needs, such as Python's imports and SQL-tainted names). It may add more line rules too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from spark_ide.guard.findings import CodeBlock, Finding
from spark_ide.guard.prefilter import Words


class StatementChecker(Protocol):
    """Tier 2 for one file of one language: fed completed lines in order, answers with the findings they complete."""

    def lines(self, text: str, number: int, marked: Mapping[int, int]) -> list[tuple[int, Finding]]:
        """Completed lines: ``text`` holds one or more, joined by "\n" (no line break at its end), the first at file
        line ``number``; ``marked``: the lines (by index) holding one of the language's ``words``, with their marks.
        The findings they complete, each with the index in ``text`` of the line that completed it."""
        ...

    def finish(self) -> list[Finding]:
        """The stream ended: check what is still open (it may be partial code: never raise)."""
        ...

    def take_blocks(self) -> list[CodeBlock]:
        """Top-level blocks completed since the last call (each once); ``finish`` completes the last one."""
        ...


# A line rule sees (path, completed line, file line) and answers with its findings.
LineRule = Callable[[str, str, int], list[Finding]]


@dataclass(frozen=True, slots=True)
class Language:
    name: str
    extensions: tuple[str, ...] = ()  # with the dot: ".py"
    config_style: bool = False  # KEY=value files (.env, YAML, INI): an unquoted value may be a secret too
    statements: Callable[[str], StatementChecker] | None = None  # path -> checker; None: no tier 2
    line_rules: tuple[LineRule, ...] = ()
    # Words the statement checker wants found in each chunk (its ``lines`` is told which lines hold one), looked for
    # in the same pass as tier 1's (``prefilter``); their marks are ``LANGUAGE_MARK`` and up.
    words: Words | None = None

    @property
    def is_python(self) -> bool:
        return self.name == "python"


_lock = threading.Lock()
_by_name: dict[str, Language] = {}
_by_extension: dict[str, Language] = {}
_loaded: list[bool] = []  # non-empty once the built-in languages are registered


def register_language(language: Language) -> None:
    """Add or replace a language and its extensions (it wins over a built-in one of the same name or extension)."""
    with _lock:
        _load_builtins()
        _register(language)


def _register(language: Language) -> None:
    _by_name[language.name] = language
    for extension in language.extensions:
        _by_extension[extension.lower()] = language


def _load_builtins() -> None:
    """The languages the watchdog ships with, registered on first use (Python's module imports this one)."""
    if _loaded:
        return
    _loaded.append(True)
    from spark_ide.guard.python_context import STATEMENT_WORDS
    from spark_ide.guard.python_stream import PythonStatements

    _register(Language("python", (".py", ".pyw", ".pyi"), statements=PythonStatements, words=STATEMENT_WORDS))
    _register(Language("dotenv", (".env",), config_style=True))
    _register(Language("yaml", (".yml", ".yaml"), config_style=True))
    _register(Language("ini", (".ini", ".cfg", ".conf", ".properties", ".toml"), config_style=True))
    _register(Language("shell", (".sh", ".bash", ".zsh"), config_style=True))


def language_for(path: str, language: str | None = None) -> Language:
    """The language of a file: named ("python", "py", ".py") or else from its extension; unknown: secrets only."""
    with _lock:
        _load_builtins()
        if language:
            wanted = language.strip().lower()
            known = _by_name.get(wanted) or _by_extension.get(wanted if wanted.startswith(".") else f".{wanted}")
            return known or Language(wanted)
        base = os.path.basename(path).lower()
        if base.startswith(".env"):
            return _by_extension[".env"]
        extension = os.path.splitext(base)[1]
        return _by_extension.get(extension) or Language(extension.lstrip(".") or "text")
