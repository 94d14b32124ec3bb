"""The edit format's markers and tag patterns (PROTOCOL.md §4), for the streaming parser.

Whether a line is a marker must never depend on where a chunk ended, so every test here
is bounded by MAX_TAG_LENGTH: past it, a line is content or prose whatever follows.
"""

from __future__ import annotations

import re

# A line that starts like a tag but runs this long without closing is prose.
MAX_TAG_LENGTH = 500

SEARCH_MARKER = "<<<<<<< SEARCH"
DIVIDER_MARKER = "======="
REPLACE_MARKER = ">>>>>>> REPLACE"
FENCE_MARKER = "```"
CLOSING_TAG_START = "</"  # of every closing tag: </old_text>, </new_text>, </write>, </edit>

# Text that ends an edit block holds one of these: a closing tag, a fence, the arrows of the
# REPLACE marker. A reader of the stream looks for them in a chunk together with the last
# BLOCK_END_CHARS characters of the chunk before, so a marker cut in two is still seen.
BLOCK_END_MARKERS = (CLOSING_TAG_START, FENCE_MARKER, REPLACE_MARKER.split(" ")[0])
BLOCK_END_CHARS = max(map(len, BLOCK_END_MARKERS))

# Attributes are bounded so that whether a line is a tag never depends on chunking: by
# the time a held line reaches MAX_TAG_LENGTH, any tag in it has been seen.
_ATTRIBUTES = rf"(?=[\s>/])([^>\n]{{0,{MAX_TAG_LENGTH - 20}}})>"
OPENING_TAG = re.compile(r"<(edit|write)" + _ATTRIBUTES)
OPENING_TAG_START = re.compile(r"<(edit|write)[\s/]")  # may still become an OPENING_TAG
SECTION_TAG = re.compile(r"<(old_text|new_text)" + _ATTRIBUTES)
PATH_ATTR = re.compile(r"""\bpath\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""")
LINE_ATTR = re.compile(r"""\bline\s*=\s*["']?(\d{1,9})""")
HORIZONTAL_SPACE = " \t\r"


def could_become(partial: str, marker: str) -> bool:
    """True when the partial line may still turn into `marker` plus trailing blanks."""
    if len(partial) > MAX_TAG_LENGTH:
        return False
    if marker.startswith(partial):
        return True
    return partial.startswith(marker) and not partial[len(marker) :].strip(HORIZONTAL_SPACE)


def is_marker_line(line: str, marker: str) -> bool:
    """A whole-line marker; overlong lines never are, so holding back stays bounded."""
    return len(line) <= MAX_TAG_LENGTH and line.rstrip(HORIZONTAL_SPACE) == marker


def attribute_path(attributes: str) -> str | None:
    found = PATH_ATTR.search(attributes)
    if found is None:
        return None
    return next(group for group in found.groups() if group is not None)


def may_end_a_block(text: str) -> bool:
    """Whether ``text`` may hold the end of an edit block (see ``BLOCK_END_MARKERS``). Asked
    for every delta with the watchdog on: a plain loop (a generator cost more than the scans)."""
    for marker in BLOCK_END_MARKERS:  # noqa: SIM110
        if marker in text:
            return True
    return False
