"""What the watchdog reports: a finding, its severity and tier, and how findings from several tiers merge.

Every tier (secret lines, Python statements, bandit, ruff) speaks this one vocabulary, so the Pilot, the Celery
task and the editor's lint gutter handle a finding the same way whichever tier found it.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable
from dataclasses import dataclass


@functools.total_ordering
class Severity(enum.Enum):
    """How bad a finding is; ordered so a policy can say "halt at HIGH and above"."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return _RANK[self.value]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> Severity:
        """The severity named by ``text`` (any case, surrounding blanks ignored); ValueError for anything else."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(f"unknown severity {text!r}: expected low, medium or high") from None

    def lowered(self) -> Severity:
        """One step down (LOW stays LOW): for a finding whose tool is unsure of it."""
        return _BY_RANK[max(0, self.rank - 1)]


_RANK = {"low": 0, "medium": 1, "high": 2}
_BY_RANK = (Severity.LOW, Severity.MEDIUM, Severity.HIGH)


class Tier(enum.StrEnum):
    """Which part of the watchdog found it: the first two run on the stream, the last two on whole files."""

    SECRET = "secret"  # noqa: S105 - a tier's name
    STATEMENT = "statement"
    BANDIT = "bandit"
    RUFF = "ruff"


_TIER_ORDER = {Tier.SECRET: 0, Tier.STATEMENT: 1, Tier.BANDIT: 2, Tier.RUFF: 3}

# Rules that are different words for one problem share a family, so two tiers reporting the same line merge into
# one finding. Every secret rule is one family (a line holding a key is one problem, however many patterns match),
# and so are bandit's and ruff's hardcoded-password checks; ruff's S rules re-implement bandit's under the same
# numbers, so "bandit-B113" and "ruff-S113" are one family too.
_SECRET_FAMILY = "secret"  # noqa: S105 - a family's name
_TOOL_PREFIXES = ("bandit-B", "ruff-S")
_TOOL_SECRET_CHECKS = frozenset({"105", "106", "107"})


def rule_family(rule: str) -> str:
    """The de-duplication family of a rule id: the id itself, except for secrets and the tools' shared checks."""
    if rule.startswith("secret-"):
        return _SECRET_FAMILY
    for prefix in _TOOL_PREFIXES:
        if rule.startswith(prefix):
            number = rule[len(prefix) :]
            return _SECRET_FAMILY if number in _TOOL_SECRET_CHECKS else f"check-{number}"
    return rule


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem at one line of one file, worded for the person (message) and for the model (fix)."""

    rule: str
    severity: Severity
    path: str
    line: int
    message: str
    fix: str
    tier: Tier

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity for de-duplication: the same problem family at the same line of the same file."""
        return (rule_family(self.rule), self.path, self.line)

    def as_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "fix": self.fix,
            "tier": self.tier.value,
        }


def _preferred(current: Finding, candidate: Finding) -> Finding:
    """Of two findings with one key: the more severe; on a tie the earlier tier (its message is the more precise)."""
    if candidate.severity != current.severity:
        return candidate if candidate.severity > current.severity else current
    return candidate if _TIER_ORDER[candidate.tier] < _TIER_ORDER[current.tier] else current


def merge_findings(*groups: Iterable[Finding]) -> list[Finding]:
    """All findings of all groups, one per key (the most severe), sorted by path, line and rule."""
    kept: dict[tuple[str, str, int], Finding] = {}
    for group in groups:
        for finding in group:
            current = kept.get(finding.key)
            kept[finding.key] = finding if current is None else _preferred(current, finding)
    return sorted(kept.values(), key=lambda f: (f.path, f.line, f.rule))


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """A completed top-level block of a streamed file, for tier 3 (bandit)."""

    first_line: int  # the file line of the block's first line
    source: str
