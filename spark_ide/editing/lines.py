"""Line helpers shared by the locator and the applier.

Lines are split on "\\n" only (`str.splitlines` would also split on form feeds and
Unicode separators, which are ordinary characters inside source code).
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """Lines without terminators; a final newline does not start another line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def split_lines_keeping_ends(text: str) -> list[str]:
    """Lines with their "\\n" (the last one may lack it)."""
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()
    if last != "\n":
        lines.append(last[:-1])
    return lines


def normalize(line: str) -> str:
    """The line with indentation dropped and inner whitespace runs collapsed."""
    return " ".join(line.split())


def utf8_length(text: str) -> int:
    """Y.Text (pycrdt) counts positions in UTF-8 bytes, Python in code points."""
    return len(text) if text.isascii() else len(text.encode())
