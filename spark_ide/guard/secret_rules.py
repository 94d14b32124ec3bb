"""Tier 1: secrets on one completed line, for files of every language.

A line is tested with cheap substring checks first; the regular expressions only run on the few lines that
mention a key prefix or a secret-like word, so an ordinary line costs about a microsecond.
Findings never repeat the secret itself (messages reach logs and other people's screens): only its first
characters.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass

from spark_ide.guard.findings import Finding, Severity, Tier
from spark_ide.guard.prefilter import HINT_MARK, KEY_MARK, Words

# A password-like literal counts from this length and this Shannon entropy (bits per character). Eight characters
# all different give exactly 3.0; repeats ("hunter22", "aaaaaaaa") fall below.
MIN_SECRET_LENGTH = 8
MIN_SECRET_ENTROPY = 3.0
# From here a password-like literal looks machine-generated (a key, not a person's password): high, not medium.
GENERATED_LENGTH = 24
GENERATED_ENTROPY = 3.5


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` taken as a sample of its own characters (0.0 for an empty string)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(count / size * math.log2(count / size) for count in Counter(text).values())


@dataclass(frozen=True, slots=True)
class _KeyPattern:
    rule: str
    label: str
    pattern: re.Pattern[str]
    prefixes: tuple[str, ...]  # one of these occurs in every match: the cheap test before the regex
    shown: int  # how many leading characters of the match a message may show
    env: str  # the environment variable the fix suggests


_KEY_PATTERNS = (
    _KeyPattern(
        "secret-private-key", "a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        ("PRIVATE KEY",), 0, "PRIVATE_KEY_PATH",
    ),
    _KeyPattern(
        "secret-aws-key", "an AWS access key id",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        ("AKIA", "ASIA", "ABIA", "ACCA"), 4, "AWS_ACCESS_KEY_ID",
    ),
    _KeyPattern(
        "secret-aws-key", "an AWS secret access key",
        re.compile(
            r"(?i)aws[\w.\-]{0,30}?(?:secret|private)[\w.\-]{0,30}+[\"']?\s*+(?:=|:|=>)\s*+[\"']?"
            r"(?-i:[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        ("aws", "AWS", "Aws"), 0, "AWS_SECRET_ACCESS_KEY",
    ),
    _KeyPattern(
        "secret-token", "a Google API key", re.compile(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        ("AIza",), 4, "GOOGLE_API_KEY",
    ),
    _KeyPattern(
        "secret-token", "a Slack token", re.compile(r"xox[abposr]-[0-9A-Za-z\-]{10,}"),
        ("xox",), 5, "SLACK_TOKEN",
    ),
    _KeyPattern(
        "secret-token", "a GitHub token",
        re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), 4, "GITHUB_TOKEN",
    ),
    _KeyPattern(
        "secret-token", "a Stripe live key", re.compile(r"(?<![A-Za-z0-9])[sr]k_live_[0-9A-Za-z]{20,}"),
        ("_live_",), 8, "STRIPE_SECRET_KEY",
    ),
    _KeyPattern(
        "secret-token", "an API secret key (sk-…)",
        re.compile(r"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{32,}"),
        ("sk-",), 3, "OPENAI_API_KEY",
    ),
)

# Words a real secret never contains but placeholders and examples do.
_PLACEHOLDER_MARKS = (
    "example", "changeme", "change_me", "change-me", "your", "placeholder", "dummy", "xxx", "***", "...", "redacted",
    "todo", "fixme", "sample", "replace", "insert", "enter", "secret", "password", "passwd", "token", "test", "fake",
    "<", ">", "{{", "${", "%(", "environ", "getenv",
)
_EXAMPLE_KEY_MARKS = ("example", "xxxx", "your", "placeholder", "dummy", "fake", "redacted")
_WORDS = re.compile(r"[a-z]+(?:[_\-. ][a-z]+)*")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SECRET_WORDS = frozenset(
    {"password", "passwd", "pass", "pwd", "passphrase", "secret", "secrets", "token", "apikey", "credential",
     "credentials", "secretkey", "accesskey", "privatekey", "authtoken", "accesstoken"}
)
_SECRET_WORD_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("auth", "key"), ("private", "key"), ("signing", "key"), ("secret", "key"),
     ("client", "secret"), ("encryption", "key"), ("master", "key")}
)
_SECRET_HINTS = ("pass", "pwd", "secret", "token", "key", "cred")
# Possessive quantifiers and a word-start lookbehind keep these linear in the line's length: a minified line of
# 100 kB must not stall the stream.
_QUOTED_ASSIGNMENT = re.compile(
    r"(?<![\w.\-$])(?P<name>[A-Za-z_$][\w.\-$]*+)[\"']?\]?\s*+(?::\s*+[\w\[\], .|]*+)?(?::=|=>|=|:)(?!=)\s*+"
    r"[rRbBuU]{0,2}(?P<quote>[\"'`])(?P<value>(?:\\.|(?!(?P=quote))[^\\])*+)(?P=quote)"
)
_BARE_ASSIGNMENT = re.compile(
    r"^\s*+(?:export\s++)?(?P<name>[A-Za-z_][\w.\-]*+)\s*+[=:]\s*+(?P<value>[^\s\"'#]++)\s*+(?:#.*)?$"
)


def _is_secret_name(name: str) -> bool:
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    if any(word in _SECRET_WORDS or word.endswith(("password", "passwd", "secret", "token")) for word in words):
        return True
    return any(pair in _SECRET_WORD_PAIRS for pair in itertools.pairwise(words))


def _is_placeholder(value: str) -> bool:
    """True for literals that are obviously not a real secret: examples, templates, names, prose, paths, URLs."""
    low = value.lower()
    return (
        len(value) < MIN_SECRET_LENGTH
        or value[0] in "$<{%"
        or any(mark in low for mark in _PLACEHOLDER_MARKS)
        or any(char.isspace() for char in value)
        or _WORDS.fullmatch(value) is not None
        or _CONSTANT_NAME.fullmatch(value) is not None
        or value.startswith(("/", "./", "~"))
        or ("://" in value and "@" not in value)
        or len(set(value)) <= 2
    )


def _is_example_key(found: str) -> bool:
    """A documentation or template key (AKIAIOSFODNN7EXAMPLE, xoxb-your-token-here): not worth a halt."""
    low = found.lower()
    return (
        any(mark in low for mark in _EXAMPLE_KEY_MARKS)
        or not any(char.isdigit() for char in found)
        or shannon_entropy(found) < MIN_SECRET_ENTROPY
    )


def _env_name(name: str) -> str:
    last = re.split(r"[.\-$]", name)[-1] or name
    return re.sub(r"[^A-Za-z0-9]+", "_", last).strip("_").upper() or "SECRET"


def _fix_for(env: str, python: bool, target: str | None = None) -> str:
    if python:
        lhs = f"{target} = " if target else ""
        return f'read it from the environment instead of the code: {lhs}os.environ["{env}"] (and revoke this one)'
    return f"read it from the environment variable {env} or a secret store instead of the code (and revoke it)"


def _key_finding(path: str, line: str, number: int, python: bool) -> Finding | None:
    if _ANY_PREFIX.search(line) is None:  # one scan of the line for every key's prefixes at once
        return None
    for key in _KEY_PATTERNS:
        if not any(prefix in line for prefix in key.prefixes):
            continue
        match = key.pattern.search(line)
        if match is None:
            continue
        found = match.group(0)
        if key.rule != "secret-private-key" and _is_example_key(found):
            continue
        shown = f" ({found[: key.shown]}…)" if key.shown else ""
        return Finding(
            rule=key.rule, severity=Severity.HIGH, path=path, line=number,
            message=f"line {number} holds {key.label}{shown}", fix=_fix_for(key.env, python), tier=Tier.SECRET,
        )
    return None


# What follows a secret hint inside a name the assignment patterns take: the rest of the name, maybe a closing quote
# or bracket, then the operator (or a type annotation's colon).
_REST_OF_NAME = re.compile(r"""[\w.\-$]*+["']?\]?\s*+[:=]""")
_NAME_RUN = re.compile(r"[\w.\-$]*+")  # the rest of the name alone: where ``_REST_OF_NAME`` goes on from


def _may_assign_a_secret(line: str) -> bool:
    """Cheap: could the assignment patterns match here? Every secret name holds a hint (``_is_secret_name``), and
    the name and its operator follow it: a hint inside a string or an argument list is not one.

    Linear in the line: a hint is made of name characters, so from any later hint inside the same run of them the
    rest of the name ends where this one's did, and the test after it fails the same way; the search goes on past
    that run. (Trying every hint where it occurs re-read the run each time: a 40 kB line "tokentoken..." took a
    second, a megabyte minutes.)"""
    if not line.isascii():
        return True
    low = line.lower()
    for hint in _SECRET_HINTS:
        at = low.find(hint)
        while at >= 0:
            rest = at + len(hint)
            if _REST_OF_NAME.match(low, rest) is not None:
                return True
            run = _NAME_RUN.match(low, rest)
            at = low.find(hint, run.end() if run is not None else rest)
    return False


def _assigned_secret(path: str, line: str, number: int, python: bool, config_style: bool) -> Finding | None:
    if not config_style and "'" not in line and '"' not in line and "`" not in line:
        return None  # the quoted pattern needs a quote: the regex would only find that out slowly
    if not _may_assign_a_secret(line):
        return None
    matches: list[tuple[str, str]] = [(m["name"], m["value"]) for m in _QUOTED_ASSIGNMENT.finditer(line)]
    if config_style and (bare := _BARE_ASSIGNMENT.match(line)) is not None:
        matches.append((bare["name"], bare["value"]))
    for name, value in matches:
        if not _is_secret_name(name) or _is_placeholder(value):
            continue
        entropy = shannon_entropy(value)
        if entropy < MIN_SECRET_ENTROPY:
            continue
        generated = (
            len(value) >= GENERATED_LENGTH and entropy >= GENERATED_ENTROPY
            and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        )
        target = name if python and name.isidentifier() else None
        return Finding(
            rule="secret-password", severity=Severity.HIGH if generated else Severity.MEDIUM, path=path, line=number,
            message=f"line {number} writes a literal secret into `{name}` ({len(value)} characters, "
            f"{'machine-generated' if generated else 'password'}-like)",
            fix=_fix_for(_env_name(name), python, target), tier=Tier.SECRET,
        )
    return None


# The cheap tests before the patterns, each one regular expression over the line (a loop of
# ``in`` tests per key cost more than the rest of a line's scan).
_ANY_PREFIX = re.compile("|".join(sorted({re.escape(p) for key in _KEY_PATTERNS for p in key.prefixes})))
_ANY_HINT = re.compile("|".join(re.escape(hint) for hint in _SECRET_HINTS), re.IGNORECASE)
# The same words, searched once over a chunk of lines: only the lines holding one reach ``secret_findings``, told
# which kind they hold. The key prefixes go in any case where that makes fewer words ("private key", "aws" for AWS and
# Aws) and "gh" stands for the five gh?_ prefixes: a few more lines reach the patterns, fewer searches per chunk.
SECRET_WORDS = Words(
    exact=("gh", "github_pat_", "sk-", "_live_", "xox"),
    anycase=("akia", "asia", "abia", "acca", "aiza", "aws", "private key"),
    mark=KEY_MARK,
) | Words(anycase=_SECRET_HINTS, mark=HINT_MARK)


def secret_findings(
    path: str, line: str, number: int, *, python: bool, config_style: bool, marks: int | None = None,
) -> list[Finding]:
    """The secret on this completed line, if any (one finding per line: the most specific pattern wins). ``marks``:
    what ``SECRET_WORDS`` found on the line, when the caller looked: a line without a key's word holds no key, one
    without a secret hint no assigned secret (and a line it found nothing on, nothing)."""
    found = _key_finding(path, line, number, python) if marks is None or marks & KEY_MARK else None
    if found is None and (_ANY_HINT.search(line) is not None if marks is None else marks & HINT_MARK):
        found = _assigned_secret(path, line, number, python, config_style)
    return [found] if found is not None else []

