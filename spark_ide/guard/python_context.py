"""What the Python rules (``python_rules``) need before they read a statement: the cheap test of whether it may
fire a rule at all (substrings and words, before ``ast.parse``), and ``PythonContext``, what the earlier statements
of a file taught them (import aliases, names holding SQL built by formatting, names holding an MD5/SHA-1 object).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spark_ide.guard.prefilter import LANGUAGE_MARK, Words

SQL_WORDS = re.compile(
    r"(?i)\b(?:select|insert|update|delete|replace|create|drop|alter|truncate|where|values|from|join|order\s+by)\b"
)
# Substrings one of which every statement a rule can fire on contains: the cheap test before ast.parse. (The debug
# server's rule needs "debug" and "run" both: ``PythonContext.wants``; "debug" alone is every logging call.)
TRIGGERS = (
    "exec", ".raw(", "text(", "shell", "system", "popen", "getoutput", "eval", "load", "Unpickler", "read_pickle",
    "jsonpickle", "shelve", "md5", "sha1", "hashlib", "verify", "mktemp",
)
ANY_TRIGGER = re.compile("|".join(re.escape(trigger) for trigger in TRIGGERS))  # one scan, not one per trigger
_FORMATTING = re.compile(r"""[fF][rR]?["']|%|\.format\(|\+""")
STATEMENT_MARK = LANGUAGE_MARK
# What ``PythonContext.wants`` looks for without the context, as words searched once over a chunk of lines: a
# statement none of whose lines holds one is wanted only for a name the context knows.
STATEMENT_WORDS = Words(
    exact=("exec", ".raw(", "text(", "shel", "system", "popen", "getoutput", "eval", "load", "ickle", "md5", "sha1",
           "hashlib", "verify", "debug", "mktemp", "import "),  # TRIGGERS, some shortened: fewer searches
    anycase=("select", "insert", "update", "delete", "replace", "create", "drop", "alter", "truncate", "where",
             "values", "from", "join", "order"),
    mark=STATEMENT_MARK,
)


@dataclass
class PythonContext:
    """What the earlier statements of one file taught the rules."""

    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name ("sp" -> "subprocess")
    tainted: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (line, how its SQL was built)
    weak_hashers: set[str] = field(default_factory=set)  # names bound to an md5/sha1 object
    extra_triggers: set[str] = field(default_factory=set)  # local names of dangerous functions that lack a trigger

    def wants(self, text: str) -> bool:
        """Could ``text`` (a statement) fire a rule or teach this context something? Cheap: substrings only."""
        if ANY_TRIGGER.search(text) is not None or text.lstrip().startswith(("import ", "from ")):
            return True
        if "debug" in text and "run" in text:
            return True
        if _FORMATTING.search(text) is not None and SQL_WORDS.search(text) is not None:
            return True
        return self.knows_a_name_in(text)

    @property
    def learned_names(self) -> bool:
        """Has it learned a name (a tainted query, a weak hasher, a renamed dangerous function)?"""
        return bool(self.extra_triggers or self.tainted or self.weak_hashers)

    def knows_a_name_in(self, text: str) -> bool:
        """Does ``text`` mention a name this context learned?"""
        learned = (self.extra_triggers, self.tainted, self.weak_hashers)
        return self.learned_names and any(name in text for names in learned for name in names)
