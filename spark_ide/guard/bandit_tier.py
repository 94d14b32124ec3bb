"""Tier 3: bandit, in-process, on a block of Python (a completed top-level block, or a whole file).

bandit's test set takes about 0.1 s to build (it loads every plugin), a block then scans in a few milliseconds, so
the test set is built once per process and shared. bandit keeps module-level state in its blacklist plugin, so scans
are serialised by one lock; callers run this in a worker thread, off the event loop. ``# nosec`` comments are
ignored: the code being scanned is the model's, and the model could write them.
"""

from __future__ import annotations

import ast
import io
import logging
import re
import threading
import warnings
from typing import Any

from spark_ide.guard.external import EXCLUDED, ToolIssue, bandit_severity, to_finding
from spark_ide.guard.findings import Finding

log = logging.getLogger(__name__)

_lock = threading.Lock()
_test_set: list[Any] = []  # the one BanditTestSet of this process, once built
_LITERAL_HINT = "seems safe"

# While a file streams, bandit reads only blocks holding something one of its checks looks for (an import, a call of a
# risky module, an SQL word, a secret-like name, ...): most blocks of ordinary code hold none of these.
BANDIT_HINTS = re.compile(
    r"import|exec|eval|compile|subprocess|os\.|popen|system|spawn|pickle|marshal|shelve|dill|yaml|hashlib|md5"
    r"|sha1|crypt|cipher|ssl|verify|requests|httpx|urllib|telnet|ftp|xml|etree|jinja|mako|markup|mark_safe"
    r"|tempfile|mktemp|/tmp|paramiko|random|assert|except|chmod|bind|0\.0\.0\.0|passw|secret|token|debug\s*="
    r"|execute|select |insert |update |delete |__import__|ctypes|socket|input\(",
    re.IGNORECASE,
)
# The same test as substrings of the lowered text (ASCII text: the case rules are the regex's): the regex tries every
# alternative at every character, ~135 µs for a 300-character block, which cost a streaming room more than the rest of
# the watch.
_HINT_WORDS = (  # BANDIT_HINTS's words but `debug\s*=`, less those another one contains (execute, __import__)
    "import", "exec", "eval", "compile", "subprocess", "os.", "popen", "system", "spawn", "pickle", "marshal",
    "shelve", "dill", "yaml", "hashlib", "md5", "sha1", "crypt", "cipher", "ssl", "verify", "requests", "httpx",
    "urllib", "telnet", "ftp", "xml", "etree", "jinja", "mako", "markup", "mark_safe", "tempfile", "mktemp",
    "/tmp",  # noqa: S108 - a word looked for, not a path used
    "paramiko", "random", "assert", "except", "chmod", "bind",
    "0.0.0.0",  # noqa: S104 - a word looked for, not an address bound
    "passw", "secret", "token", "select ",
    "insert ", "update ", "delete ", "ctypes", "socket", "input(",
)
_EQUALS_NEXT = re.compile(r"\s*=")


def wants_bandit(source: str) -> bool:
    """Whether ``source`` holds something one of bandit's checks looks for (``BANDIT_HINTS``)."""
    if not source.isascii():
        return BANDIT_HINTS.search(source) is not None
    low = source.lower()
    for word in _HINT_WORDS:
        if word in low:
            return True
    at = low.find("debug")
    while at >= 0:  # `debug\s*=`, matched where "debug" is (the regex here costs what it did above)
        if _EQUALS_NEXT.match(low, at + 5) is not None:
            return True
        at = low.find("debug", at + 5)
    return False



def _bandit_tests() -> Any:
    """The process's bandit test set (built on first use; call with the lock held)."""
    if not _test_set:
        profile = {"exclude": [f"B{number}" for number in sorted(EXCLUDED)]}
        with warnings.catch_warnings():  # its plugin loader's deprecation notices are not ours to act on
            warnings.simplefilter("ignore")
            from bandit.core import config, test_set

            _test_set.append(test_set.BanditTestSet(config.BanditConfig(), profile))
    return _test_set[0]


def warm_up() -> None:
    """Build bandit's test set now (a worker can call this at start so the first block does not wait for it)."""
    with _lock:
        _bandit_tests()


def _scaffolded(source: str) -> tuple[str, int]:
    """``source`` made parseable on its own, and how many lines were put before it.

    A block cut from the middle of a function starts indented, possibly deeper than its later lines. One ``if 1:``
    header per indentation level below the first line's, each at that level, nests the lines as they were.
    """
    levels = [_indent(line) for line in source.split("\n") if line.strip() and not line.lstrip().startswith("#")]
    depth = levels[0] if levels else 0
    if depth == 0:
        return source, 0
    headers = [0, *sorted({level for level in levels if 0 < level < depth})]
    scaffold = "".join(f"{' ' * level}if 1:\n" for level in headers)
    return scaffold + source, len(headers)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def bandit_scan(path: str, source: str, *, first_line: int = 1) -> list[Finding]:
    """bandit's findings on a block of Python whose first line is file line ``first_line``; [] if it does not parse."""
    text, shift = _scaffolded(source)
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return []
    from bandit.core import meta_ast, metrics, node_visitor

    with _lock:
        tests = _bandit_tests()
        counts = metrics.Metrics()
        counts.begin("./block.py")
        visitor = node_visitor.BanditNodeVisitor(
            "./block.py", io.BytesIO(text.encode("utf-8", "replace")), meta_ast.BanditMetaAst(), tests, False, {},
            counts,
        )
        try:
            visitor.process(text)
        except Exception:  # a bandit plugin failing on odd code must not fail the scan
            log.warning("bandit failed on a block of %s", path, exc_info=True)
            return []
        issues = list(visitor.tester.results)
    lines = text.split("\n")
    found = []
    for issue in issues:
        line_in_text = int(issue.lineno)
        finding = to_finding(
            ToolIssue(
                tool="bandit", code=str(issue.test_id), line=first_line + line_in_text - 1 - shift, text=issue.text,
                severity=bandit_severity(str(issue.severity)), unsure=str(issue.confidence).upper() == "LOW",
                literal=str(issue.severity).upper() == "LOW" or _LITERAL_HINT in issue.text.lower(),
            ),
            path=path,
            source_line=lines[line_in_text - 1] if 0 < line_in_text <= len(lines) else "",
        )
        if finding is not None:
            found.append(finding)
    return found
