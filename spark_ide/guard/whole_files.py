"""The scan after a turn (run by a Celery worker): tiers 1-2, bandit and ruff's ``S`` rules over whole files."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from spark_ide.guard.bandit_tier import bandit_scan
from spark_ide.guard.external import EXCLUDED, ToolIssue, to_finding
from spark_ide.guard.findings import Finding, merge_findings
from spark_ide.guard.languages import language_for
from spark_ide.guard.scanner import scan_text

log = logging.getLogger(__name__)

RUFF_TIMEOUT = 60.0
_LITERAL_HINT = "seems safe"


def ruff_executable() -> str | None:
    """The ruff next to this interpreter (the project's pinned one), else the first on PATH."""
    beside = Path(sys.executable).parent / "ruff"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("ruff")


def ruff_scan(files: dict[str, str]) -> list[Finding]:
    """ruff's ``S`` findings over Python files (path -> text); [] with a warning if ruff is missing or fails."""
    if not files:
        return []
    ruff = ruff_executable()
    if ruff is None:
        log.warning("ruff is not installed: the full scan runs without its S rules")
        return []
    paths = list(files)
    with tempfile.TemporaryDirectory(prefix="spark-guard-") as folder:
        # Numbered names: a workspace path may be absolute, nested or hostile ("../x"); only the index maps back.
        for index, path in enumerate(paths):
            Path(folder, f"{index}.py").write_text(files[path], encoding="utf-8", errors="replace")
        command = [
            ruff, "check", "--isolated", "--no-cache", "--ignore-noqa", "--exit-zero", "--select", "S",
            "--ignore", ",".join(f"S{number}" for number in sorted(EXCLUDED)), "--output-format", "json",
            *(f"{index}.py" for index in range(len(paths))),
        ]
        try:
            done = subprocess.run(  # noqa: S603 - the pinned ruff on files of our own temp folder
                command, cwd=folder, capture_output=True, text=True, timeout=RUFF_TIMEOUT, check=False
            )
            reports = json.loads(done.stdout or "[]")
        except (OSError, subprocess.SubprocessError, ValueError):
            log.warning("ruff failed: the full scan goes on without its S rules", exc_info=True)
            return []
    found = []
    for report in reports:
        try:
            path = paths[int(Path(report["filename"]).stem)]
            line = int(report["location"]["row"])
            code, text = str(report["code"]), str(report["message"])
        except (KeyError, TypeError, ValueError, IndexError):
            continue
        lines = files[path].split("\n")
        finding = to_finding(
            ToolIssue(tool="ruff", code=code, line=line, text=text, severity=None, unsure=False,
                      literal=_LITERAL_HINT in text.lower()),
            path=path, source_line=lines[line - 1] if 0 < line <= len(lines) else "",
        )
        if finding is not None:
            found.append(finding)
    return found


def full_scan(files: dict[str, str]) -> list[Finding]:
    """Every tier over whole files (path -> text), de-duplicated by key and sorted by path and line."""
    groups: list[list[Finding]] = []
    python: dict[str, str] = {}
    for path, text in files.items():
        groups.append(scan_text(path, text))
        if language_for(path).is_python:
            python[path] = text
            groups.append(bandit_scan(path, text))
    groups.append(ruff_scan(python))
    return merge_findings(*groups)
