"""bandit's and ruff's findings in the watchdog's vocabulary.

ruff's ``S`` rules re-implement bandit and keep its numbers (bandit B602 is ruff S602), so one table maps both. A
check that is the same problem as one of our statement rules takes that rule's id, severity and fix, so callers
de-duplicate by ``Finding.key`` and a rule id means one thing whichever tier found it. The rest keep the tool's id
("bandit-B113", "ruff-S113").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_ide.guard.catalog import RULES
from spark_ide.guard.findings import Finding, Severity, Tier

# Tool check number -> our rule id.
SHARED = {
    "102": "eval-exec", "307": "eval-exec",
    "301": "pickle-load", "302": "pickle-load",
    "506": "yaml-load",
    "303": "weak-password-hash", "324": "weak-password-hash",
    "501": "verify-false",
    "306": "mktemp",
    "602": "shell-true", "604": "shell-true",
    "605": "os-system",
    "608": "sql-format",
    "201": "debug-bind-all",
}
# Left out: assert (101: tests use it), random (311: fine outside cryptography), importing pickle or subprocess
# (403, 404: the calls are what is checked), subprocess without a shell and by a bare program name (603, 607):
# the safe forms our fixes ask for.
EXCLUDED = frozenset({"101", "311", "403", "404", "603", "607"})
# ruff gives no severity: these advisory checks are LOW, every other unshared one MEDIUM.
RUFF_LOW = frozenset({"104", "105", "106", "107", "108", "110", "112", "113", "324"})

_PASSWORD = re.compile(r"pass|pwd", re.IGNORECASE)
_ALL_INTERFACES = ('"0.0.0.0"', "'0.0.0.0'", '"::"', "'::'")  # what the rule looks for
_BANDIT_SEVERITY = {"LOW": Severity.LOW, "MEDIUM": Severity.MEDIUM, "HIGH": Severity.HIGH}


@dataclass(frozen=True, slots=True)
class ToolIssue:
    """One issue as a tool reported it, before mapping."""

    tool: str  # "bandit" or "ruff"
    code: str  # "B602" or "S602"
    line: int  # the file line
    text: str
    severity: Severity | None  # bandit's own; None for ruff
    unsure: bool  # bandit's confidence is LOW
    literal: bool  # the tool says the call looks safe (a literal command): the mild variant


def _shared_rule(number: str, source_line: str) -> str | None:
    rule = SHARED.get(number)
    if rule == "weak-password-hash" and not _PASSWORD.search(source_line):
        return None  # MD5 for a checksum: the tool's id at LOW, not our password rule
    if rule == "debug-bind-all" and not any(host in source_line for host in _ALL_INTERFACES):
        return None  # debug on localhost only
    return rule


def _unshared_severity(issue: ToolIssue, number: str) -> Severity:
    if number in ("303", "324"):
        return Severity.LOW  # a fast hash that is not a password's is almost always a checksum
    if issue.severity is None:
        return Severity.LOW if number in RUFF_LOW else Severity.MEDIUM
    return issue.severity.lowered() if issue.unsure else issue.severity


def to_finding(issue: ToolIssue, *, path: str, source_line: str) -> Finding | None:
    """The finding for one tool issue (``source_line`` is the flagged line), or None for an excluded check."""
    number = issue.code[1:]
    if number in EXCLUDED:
        return None
    tier = Tier.BANDIT if issue.tool == "bandit" else Tier.RUFF
    text = issue.text.strip().rstrip(".")
    rule = _shared_rule(number, source_line)
    if rule is not None:
        severity = RULES[rule].severity
        if issue.literal:
            severity = Severity.LOW
        elif issue.unsure:
            severity = severity.lowered()
        return Finding(
            rule=rule, severity=severity, path=path, line=issue.line,
            message=f"line {issue.line}: {text} ({issue.tool} {issue.code})", fix=RULES[rule].fix, tier=tier,
        )
    return Finding(
        rule=f"{issue.tool}-{issue.code}", severity=_unshared_severity(issue, number), path=path, line=issue.line,
        message=f"line {issue.line}: {text} ({issue.tool} {issue.code})",
        fix=f"change line {issue.line} so that {issue.tool} {issue.code} no longer applies: {text}", tier=tier,
    )


def bandit_severity(name: str) -> Severity | None:
    return _BANDIT_SEVERITY.get(name.upper())
