"""One set of path rules: the HTTP API's `clean_path` and a model's block agree."""

from __future__ import annotations

import unicodedata

import pytest

from spark_ide.editing import EditState, FailureReason, FileLimits, TurnEditor, workspace_files
from spark_ide.editing.paths import (
    MAX_PATH_LENGTH,
    MAX_SEGMENT_LENGTH,
    BadPath,
    block_path,
    clean_path,
    path_conflict,
)

from .support import make_doc

NFD_NAME = "cafe\u0301.py"  # "café.py" as macOS spells it
NFC_NAME = "caf\u00e9.py"
LONG_BUT_FINE = "/".join(["d" * 200, "e" * 200, "f.py"])  # 406 characters


@pytest.mark.parametrize(
    "path", ["a.py", "src/app/main.py", "docs/read me.md", ".github/ci.yml", LONG_BUT_FINE]
)
def test_it_accepts_relative_workspace_paths(path: str) -> None:
    assert clean_path(path) == path
    assert block_path(path) == path


def test_it_stores_paths_in_nfc() -> None:
    assert clean_path(NFD_NAME) == NFC_NAME
    assert block_path(NFD_NAME) == NFC_NAME


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("", "empty"),
        ("/etc/passwd", "relative"),
        ("../secret", "'..'"),
        ("a/../../b", "'..'"),
        ("./a", "'.'"),
        ("a//b", "empty folder name"),
        ("a/", "empty folder name"),
        ("a\\b", "'/'"),
        ("nul\x00byte", "NUL"),
        ("bell\x07.py", "control character"),
        ("line\nbreak", "control character"),
        ("tab\there", "control character"),
        (" padded", "blank"),
        ("padded ", "blank"),
        ("x" * (MAX_PATH_LENGTH + 1), f"longer than {MAX_PATH_LENGTH}"),
        ("d/" + "n" * (MAX_SEGMENT_LENGTH + 1), f"longer than {MAX_SEGMENT_LENGTH}"),
    ],
)
def test_it_refuses_bad_paths_and_says_why(path: str, why: str) -> None:
    with pytest.raises(BadPath, match=why):
        clean_path(path)
    assert block_path(path) is (FailureReason.MISSING_PATH if path == "" else FailureReason.BAD_PATH)


def test_a_deployment_sets_the_length_limit() -> None:
    with pytest.raises(BadPath, match="longer than 10"):
        clean_path("abcdefghijk", max_length=10)
    assert block_path("abcdefghijk", max_length=10) is FailureReason.BAD_PATH


@pytest.mark.parametrize("path", [None, "   "])
def test_a_block_without_a_path_misses_it(path: str | None) -> None:
    assert block_path(path) is FailureReason.MISSING_PATH


def test_a_model_write_lands_under_the_nfc_path() -> None:
    doc = make_doc({NFC_NAME: "old\n"})
    editor = TurnEditor(doc, "t1")
    events = editor.feed(f'<write path="{NFD_NAME}">\nnew\n</write>\n') + editor.finish()
    assert {path: str(text) for path, text in workspace_files(doc).items()} == {NFC_NAME: "new\n"}
    assert all(unicodedata.is_normalized("NFC", getattr(e, "path", "")) for e in events)


@pytest.mark.parametrize("path", ["bell\x07.py", " a.py", "a\\b.py", "a//b.py"])
def test_a_model_is_refused_the_paths_http_refuses(path: str) -> None:
    doc = make_doc({})
    editor = TurnEditor(doc, "t1")
    events = editor.feed(f'<write path="{path}">\nx\n</write>\n') + editor.finish()
    states = [(getattr(e, "state", None), getattr(e, "reason", None)) for e in events]
    assert states == [(EditState.FAILED, FailureReason.BAD_PATH.value)]
    assert len(workspace_files(doc)) == 0


def test_a_model_uses_the_deployments_path_length() -> None:
    doc = make_doc({})
    editor = TurnEditor(doc, "t1", limits=FileLimits(max_path_length=8))
    events = editor.feed('<write path="long_name.py">\nx\n</write>\n') + editor.finish()
    assert [getattr(e, "reason", None) for e in events] == [FailureReason.BAD_PATH.value]


@pytest.mark.parametrize(
    ("path", "existing", "conflict"),
    [
        ("a/b.py", {"a"}, "a parent folder of a/b.py is a file (a)"),
        ("a/b/c.py", {"a/b"}, "a parent folder of a/b/c.py is a file (a/b)"),
        ("a", {"a/b.py"}, "a is a folder"),
        ("a/c.py", {"a/b.py"}, None),
        ("ab", {"a/b.py"}, None),
        ("a.py", set(), None),
    ],
)
def test_a_file_cannot_also_be_a_folder(path: str, existing: set[str], conflict: str | None) -> None:
    assert path_conflict(path, existing) == conflict
