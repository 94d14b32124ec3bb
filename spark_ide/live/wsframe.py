"""A server's WebSocket frame (RFC 6455 §5.2), built once and written as it is to many sockets.

A server's frames are not masked; a message goes as one frame (FIN set, no fragments) and
without extensions (no ``permessage-deflate``: a socket that negotiated compression needs its
own framing, and the server that frames here never offers it). ``live.outbox`` frames each
event once with this and writes the same bytes to every socket that takes them
(``pairing.daphne_writes``).
"""

from __future__ import annotations

import struct

TEXT = 0x81  # FIN + opcode 1
BINARY = 0x82  # FIN + opcode 2
_MEDIUM = struct.Struct("!BBH")
_LARGE = struct.Struct("!BBQ")


def ws_frame(payload: bytes, *, binary: bool) -> bytes:
    """``payload`` as one unmasked frame: a text message (UTF-8 already) or a binary one."""
    first = BINARY if binary else TEXT
    size = len(payload)
    if size <= 125:
        header = bytes((first, size))
    elif size <= 0xFFFF:
        header = _MEDIUM.pack(first, 126, size)
    else:
        header = _LARGE.pack(first, 127, size)
    return header + payload


def text_frame(text: str) -> bytes:
    """A text message. A lone surrogate (a model's broken escape, kept by the JSON encoder) has no
    UTF-8: it goes as ``?`` rather than failing every socket's write."""
    return ws_frame(text.encode("utf-8", "replace"), binary=False)


def binary_frame(data: bytes) -> bytes:
    return ws_frame(data, binary=True)
