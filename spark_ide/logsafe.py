"""Keys never reach a log: websockets logs handshake headers (``Authorization``) at DEBUG.

Pure Python, shared by the model server and the upstream client.
"""

from __future__ import annotations

import logging
import re

_BEARER = re.compile(r"(?i)(bearer\s+)\S+")


class RedactBearer(logging.Filter):
    """Replaces the credential after ``Bearer`` in a record's message by ``***``."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = _BEARER.sub(r"\1***", message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


def redacting_logger(name: str) -> logging.Logger:
    """A logger whose records never carry a bearer credential (give it to websockets)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactBearer) for f in logger.filters):
        logger.addFilter(RedactBearer())
    return logger
