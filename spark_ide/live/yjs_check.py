"""Bounded reading of Yjs frames, before pycrdt decodes them (issue 16).

pycrdt (yrs) trusts the counts an update claims: a count of structs, clients or array items
is handed to the allocator before a byte of them is read, so a 20-byte frame claiming 3.4
billion structs made the server try to allocate gigabytes. ``check_sync`` walks a sync
message's structure (lib0 varints, varuint-prefixed buffers and strings, the Yjs v1 update
encoding: structs, then the delete set) without building anything, and refuses it when a
length or count claims more than the frame still holds, when it ends early, or when it
nests deeper than any document of ours does. What passes can still be refused by pycrdt
(bad UTF-8, JSON that does not parse), but whatever pycrdt then allocates is bounded by
the frame's size.

The walk runs on every keystroke's frame: it is straight-line byte arithmetic (a few
microseconds for a keystroke's update; see docs/security.md for the figures).

The encoding, as yjs and yrs write it (``Y.encodeStateAsUpdate``, v1):

- update: structs, then the delete set.
- structs: varUint clients; per client: varUint structs, varUint client, varUint clock;
  then per struct an info byte whose low 5 bits say what follows: 0 GC and 10 Skip (a
  varUint length), otherwise an item: a left origin ID when bit 0x80 is set, a right
  origin ID when 0x40 is set, and with neither the parent (varUint 1 then a varString
  root name, else an ID) and, when 0x20 is set, a varString map key; then the content.
- delete set: varUint clients; per client: varUint client, varUint ranges, then per range
  varUint clock and varUint length.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

__all__ = [
    "MAX_DEPTH", "BadFrames", "BadUpdate", "check_awareness", "check_state_vector", "check_sync", "check_update",
]

MAX_DEPTH = 64  # nested arrays/objects in an Any value; ours are flat, yrs recurses on them
MAX_VARINT_BYTES = 10  # 64 bits; lib0 writes at most 8 (53 bits), yrs reads at most 10

SYNC_STEP1, SYNC_STEP2, SYNC_UPDATE = 0, 1, 2

# Content kinds (the info byte's low 5 bits).
_GC, _DELETED, _JSON, _BINARY, _STRING, _EMBED, _FORMAT, _TYPE, _ANY, _DOC, _SKIP = range(11)
# Shared types whose content carries a name: an XML element (its tag) and an XML hook.
_TYPE_REFS = range(7)  # array, map, text, xml element, xml fragment, xml hook, xml text
_NAMED_TYPES = (3, 5)


class BadUpdate(ValueError):
    """The frame is not a Yjs message whose every length fits in it: the reason says where."""


class _Reader:
    """A cursor over ``data``; every read is checked against the end."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def left(self) -> int:
        return self.end - self.pos

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise BadUpdate(f"the frame ends at byte {pos} where more was due")
        self.pos = pos + 1
        return self.data[pos]

    def varuint(self) -> int:
        data, pos, end = self.data, self.pos, self.end
        value = shift = 0
        while pos < end:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return value
            shift += 7
            if shift >= 7 * MAX_VARINT_BYTES:
                raise BadUpdate(f"a number at byte {self.pos} is longer than {MAX_VARINT_BYTES} bytes")
        raise BadUpdate(f"a number at byte {self.pos} runs past the end of the frame")

    def varint(self) -> None:
        """A signed lib0 varint (its value does not matter here, only where it ends)."""
        data, pos, end = self.data, self.pos, self.end
        for _ in range(MAX_VARINT_BYTES):
            if pos >= end:
                break
            byte = data[pos]
            pos += 1
            if byte < 0x80:
                self.pos = pos
                return
        raise BadUpdate(f"a signed number at byte {self.pos} is cut off or too long")

    def skip(self, size: int, what: str) -> None:
        if size > self.end - self.pos:
            raise BadUpdate(f"{what} at byte {self.pos} claims {size} bytes; {self.end - self.pos} are left")
        self.pos += size

    def buffer(self, what: str) -> int:
        """A varUint length and that many bytes; returns where they start."""
        size = self.varuint()
        start = self.pos
        self.skip(size, what)
        return start

    def count(self, what: str, each: int = 1) -> int:
        """A varUint count of things at least ``each`` bytes long: never more than fit."""
        number = self.varuint()
        if number * each > self.end - self.pos:
            raise BadUpdate(f"{what} at byte {self.pos} claims {number}; the frame holds fewer")
        return number


def _any(reader: _Reader, depth: int) -> None:
    """One lib0 ``Any`` value (``writeAny``): a tag byte, then the value."""
    if depth > MAX_DEPTH:
        raise BadUpdate(f"values nested deeper than {MAX_DEPTH}")
    tag = reader.byte()
    if tag in (127, 126, 121, 120):  # undefined, null, false, true
        return
    if tag == 125:  # integer
        reader.varint()
    elif tag == 124:  # float32
        reader.skip(4, "a float")
    elif tag in (123, 122):  # float64, bigint64
        reader.skip(8, "a number")
    elif tag in (119, 116):  # string, bytes
        reader.buffer("a string" if tag == 119 else "a byte array")
    elif tag == 118:  # object: key, value pairs
        for _ in range(reader.count("an object's size", 2)):
            reader.buffer("an object key")
            _any(reader, depth + 1)
    elif tag == 117:  # array
        for _ in range(reader.count("an array's length")):
            _any(reader, depth + 1)
    else:
        raise BadUpdate(f"unknown value tag {tag} at byte {reader.pos - 1}")


def _content(reader: _Reader, kind: int) -> None:
    if kind in (_STRING, _EMBED):  # embed: JSON text
        reader.buffer("a string")
    elif kind == _DELETED:
        reader.varuint()
    elif kind == _TYPE:
        ref = reader.varuint()
        if ref not in _TYPE_REFS:
            raise BadUpdate(f"unknown shared type {ref}")
        if ref in _NAMED_TYPES:
            reader.buffer("a type's name")
    elif kind == _ANY:
        for _ in range(reader.count("a list of values")):
            _any(reader, 1)
    elif kind == _FORMAT:
        reader.buffer("a format key")
        reader.buffer("a format value")
    elif kind == _BINARY:
        reader.buffer("binary content")
    elif kind == _JSON:
        for _ in range(reader.count("a list of JSON values")):
            reader.buffer("a JSON value")
    elif kind == _DOC:
        reader.buffer("a subdocument's id")
        _any(reader, 1)
    else:
        raise BadUpdate(f"unknown content kind {kind}")


def _skip_uint(data: bytes, pos: int, end: int) -> int:
    """Where the varUint at ``pos`` ends (its value is not needed: an ID, a clock)."""
    stop = min(end, pos + MAX_VARINT_BYTES)
    while pos < stop:
        if data[pos] < 0x80:
            return pos + 1
        pos += 1
    raise BadUpdate(f"a number before byte {pos} is cut off or longer than {MAX_VARINT_BYTES} bytes")


def _walk_update(reader: _Reader, known: Mapping[int, int] | None = None) -> None:
    # Structs. The smallest struct is two bytes (an info byte and one more). The loop reads
    # the bytes itself where it only needs to know where a number ends (IDs, clocks, GC
    # lengths): it runs for every struct of every frame.
    data, end = reader.data, reader.end
    for _ in range(reader.count("the number of clients", 3)):
        structs = reader.count("the number of structs", 2)
        if known is None:
            pos = _skip_uint(data, _skip_uint(data, reader.pos, end), end)  # client, clock
        else:
            client, clock = reader.varuint(), reader.varuint()
            if clock > known.get(client, 0):
                raise BadUpdate(
                    f"client {client}'s changes start at clock {clock}, after {known.get(client, 0)}: "
                    "they depend on changes the document never had"
                )
            pos = reader.pos
        for _ in range(structs):
            if pos >= end:
                raise BadUpdate(f"the frame ends at byte {pos} where a struct was due")
            info = data[pos]
            kind = info & 0x1F
            after = pos + 1
            pos = _skip_uint(data, after, end)  # a GC/Skip length, an origin's client, or the parent info
            if kind in (_GC, _SKIP):
                continue
            if info & 0xC0:  # the origins (left, right): client (read above) and clock
                pos = _skip_uint(data, pos, end)
                if info & 0xC0 == 0xC0:
                    pos = _skip_uint(data, _skip_uint(data, pos, end), end)
                reader.pos = pos
            else:  # no origin: the parent is spelled out
                reader.pos = after
                if reader.varuint() == 1:
                    reader.buffer("a root type's name")
                else:
                    reader.pos = _skip_uint(data, _skip_uint(data, reader.pos, end), end)
                if info & 0x20:
                    reader.buffer("a map key")
            _content(reader, kind)
            pos = reader.pos
        reader.pos = pos
    # The delete set.
    for _ in range(reader.count("the number of deleting clients", 2)):
        reader.varuint()  # client
        for _ in range(reader.count("the number of deleted ranges", 2)):
            reader.varuint()  # clock
            reader.varuint()  # length


def check_update(update: bytes, known: Mapping[int, int] | None = None) -> None:
    """Raise ``BadUpdate`` unless ``update`` (Yjs v1) reads to its end within its bytes, and,
    given ``known`` (the document's state vector: client -> next clock), unless it leaves a
    gap in some client's changes (see ``check_sync``)."""
    _walk_update(_Reader(update), known)


def check_state_vector(vector: bytes) -> dict[int, int]:
    """``vector`` (sync step 1's payload, or ``Doc.get_state()``) as client -> next clock;
    ``BadUpdate`` unless it fits in its bytes."""
    reader = _Reader(vector)
    clocks = {}
    for _ in range(reader.count("the number of clients", 2)):
        client = reader.varuint()
        clocks[client] = reader.varuint()
    return clocks


def check_sync(message: bytes, start: int = 1, state: Callable[[], bytes] | None = None) -> None:
    """A y-protocols sync message from ``start`` (after its leading message type): the
    sub-type, then one varuint-prefixed payload, walked as a state vector (step 1) or an
    update (step 2, update). Raises ``BadUpdate``.

    ``state`` gives the document's state vector (``Doc.get_state``, asked only for an update
    with changes in it): an update whose
    changes of some client start past what the document holds of that client is refused. A
    real client never sends one (it sends its own changes in order, and answers our step 1
    with what we lack); pycrdt would integrate such structs without telling the update
    observer, so the room's document and everyone's copy would differ from then on (the
    fuzz test found it with a flipped bit in a client id)."""
    reader = _Reader(message, start)
    sub = reader.byte()
    if sub > SYNC_UPDATE:
        raise BadUpdate(f"unknown sync message type {sub}")
    begin = reader.buffer("the payload")
    payload = _Reader(message, begin, reader.pos)
    if sub != SYNC_STEP1 and not payload.left():
        return  # an empty update: nothing new (the room answers it without pycrdt)
    if sub == SYNC_STEP1:
        for _ in range(payload.count("the number of clients", 2)):
            payload.varuint()
            payload.varuint()
    else:
        _walk_update(payload, None if state is None else check_state_vector(state()))


def check_awareness(message: bytes, start: int = 1) -> None:
    """A y-protocols awareness message from ``start``: one varuint-prefixed payload holding a
    count of clients and, per client, its id, its clock and its state (a JSON string). The
    server relays it without reading the states; this keeps garbage from reaching the
    other pages' decoders. Raises ``BadUpdate``."""
    reader = _Reader(message, start)
    begin = reader.buffer("the payload")
    payload = _Reader(message, begin, reader.pos)
    for _ in range(payload.count("the number of clients", 3)):
        payload.varuint()
        payload.varuint()
        payload.buffer("a client's state")


class BadFrames:
    """Refused binary frames: counted, and told in the log as one warning line at most every
    ``every_s`` seconds (the first at once), which says how many came since the last line.

    A client's garbage is expected input, not a fault of ours: a traceback per frame let a
    client turn its traffic into log volume (357 tracebacks for 4,000 fuzzed frames).
    """

    def __init__(self, logger: logging.Logger, every_s: float = 10.0) -> None:
        self.log = logger
        self.every_s = every_s
        self.total = 0  # since the process started
        self.unlogged = 0  # since the last line
        self._last: float | None = None

    def note(self, who: str, reason: str) -> None:
        self.total += 1
        self.unlogged += 1
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every_s:
            return
        self.log.warning(
            "refused %d bad Yjs frame(s) since the last report (%d in all); the latest from %s: %s",
            self.unlogged, self.total, who or "?", reason[:200],
        )
        self.unlogged = 0
        self._last = now
