"""Keys never reach a log: websockets logs handshake headers (``Authorization``) at DEBUG, and
a person's stored provider key (``accounts.provider_keys``) must not show in any record.

Pure Python, shared by the model server, the upstream client and the settings' handlers.
"""

from __future__ import annotations

import logging
import re
import threading

_BEARER = re.compile(r"(?i)(bearer\s+)\S+")
MASK = "***"

# Every secret this process has handled in plain text (``remember_secret``): a person's stored
# key is added when it is stored or read for a connection. Shorter strings are not masked (they
# would mask ordinary words).
_MIN_SECRET = 8
_SECRETS: set[str] = set()
_LOCK = threading.Lock()


def remember_secret(secret: str) -> None:
    """Mask ``secret`` in every record a ``RedactBearer`` filter sees from now on."""
    if len(secret) >= _MIN_SECRET:
        with _LOCK:
            _SECRETS.add(secret)


def scrub(text: str) -> str:
    """``text`` with the credential after ``Bearer`` and every remembered secret masked."""
    cleaned = _BEARER.sub(rf"\1{MASK}", text)
    with _LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)  # a longer secret first: no half-masked one
    for secret in secrets:
        if secret in cleaned:
            cleaned = cleaned.replace(secret, MASK)
    return cleaned


class RedactBearer(logging.Filter):
    """Masks the credential after ``Bearer`` and every remembered secret in a record's message
    and its traceback. On a logger it covers that logger's own records; on a handler (the
    settings' ``LOGGING`` puts it on the console's) every record the handler writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


def redacting_logger(name: str) -> logging.Logger:
    """A logger whose records never carry a bearer credential (give it to websockets)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactBearer) for f in logger.filters):
        logger.addFilter(RedactBearer())
    return logger
