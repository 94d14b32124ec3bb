from __future__ import annotations

import pytest

from spark_ide.editing import FailureReason
from spark_ide.editing.paths import MAX_PATH_LENGTH, path_problem


@pytest.mark.parametrize("path", ["a.py", "src/app/main.py", "docs/read me.md", ".github/ci.yml"])
def test_it_accepts_relative_workspace_paths(path: str) -> None:
    assert path_problem(path) is None


@pytest.mark.parametrize("path", [None, "", "   "])
def test_it_reports_a_missing_path(path: str | None) -> None:
    assert path_problem(path) is FailureReason.MISSING_PATH


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../secret",
        "a/../../b",
        "a//b",
        "./a",
        "a/",
        "a\\b",
        "nul\x00byte",
        " padded",
        "line\nbreak",
        "x" * (MAX_PATH_LENGTH + 1),
    ],
)
def test_it_rejects_bad_paths(path: str) -> None:
    assert path_problem(path) is FailureReason.BAD_PATH
