"""The real-time security watchdog's pure core (issue 15): scans code while it streams, no Django.

Tier 1 (secrets, every completed line of every file) and tier 2 (Python rules on every completed statement) run in
``FileScanner`` as the text arrives; tier 3 runs bandit on completed top-level blocks (``bandit_scan``, blocking,
for a worker thread); ``full_scan`` adds ruff's S rules over whole files after a turn. See docs/guard.md.
"""

from spark_ide.guard.bandit_tier import BANDIT_HINTS, bandit_scan, wants_bandit, warm_up
from spark_ide.guard.catalog import RULES, Rule
from spark_ide.guard.findings import CodeBlock, Finding, Severity, Tier, merge_findings, rule_family
from spark_ide.guard.languages import Language, LineRule, StatementChecker, language_for, register_language
from spark_ide.guard.modes import GuardMode
from spark_ide.guard.scanner import FileScanner, scan_text
from spark_ide.guard.whole_files import full_scan, ruff_scan

__all__ = [
    "BANDIT_HINTS",
    "RULES",
    "CodeBlock",
    "FileScanner",
    "Finding",
    "GuardMode",
    "Language",
    "LineRule",
    "Rule",
    "Severity",
    "StatementChecker",
    "Tier",
    "bandit_scan",
    "full_scan",
    "language_for",
    "merge_findings",
    "register_language",
    "ruff_scan",
    "rule_family",
    "scan_text",
    "wants_bandit",
    "warm_up",
]
