"""A file's language, from Pygments' lexer lookup by file name."""

from __future__ import annotations

import functools

from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound

PLAIN = "Text only"


@functools.lru_cache(maxsize=4096)
def language_for(path: str) -> str:
    """The Pygments lexer name for ``path`` (e.g. ``Python``), or ``Text only``."""
    name = path.rsplit("/", 1)[-1]
    try:
        return str(get_lexer_for_filename(name).name)
    except ClassNotFound:
        return PLAIN
