"""Soak benchmark (``spark_bench soak``): ten live rooms under load and faults for half an hour.

The real stack (``benchmarks.pairing.stack.Stack``: the scripted model server behind the frame
tap, the IDE under Daphne with its own SQLite). ``--rooms`` workspaces; in each, until
``--minutes`` have passed:

* the owner's socket prompts answers (prose, then a ``<write>`` block of ``bench/out.py``, about
  1,000 tokens at ``--rate`` tokens/s); some turns are steered mid-answer (``--steer-share``),
  some stopped (``--stop-share``), the rest complete;
* a collaborator's page types into ``app.py`` (``--type-every-s``): inserts and deletes made on
  its own pycrdt replica and sent as Yjs updates, as y-codemirror does;
* viewers come and go (``--sockets`` over the run, 1,000 per 30 minutes by default), held a
  moment each; some leave with a close frame, some drop the TCP connection without one.

Faults, one every ``--fault-every-s`` in turn (hostile, cut, stall, storm):

* *hostile*: a collaborator's socket sends garbage and truncated Yjs, unknown binary kinds, bad
  JSON and frames over the size cap; each must be answered by an ``error`` of the expected code,
  the socket must stay open and nothing may reach the document;
* *cut*: the model server's connection of one room is dropped mid-answer (``FrameTap.cut``,
  a TCP reset both ways); the turn must end (``failed``, or completed in full if the IDE
  recovers it) and the room's next turn must work;
* *stall*: a viewer stops reading for ``--stall-s`` (with a small receive buffer, so the server
  must hold what it cannot send); the server's memory is sampled during it, and the viewer must
  get the rest in order once it reads again;
* *storm*: ``--storm-rate`` reconnects a second for ``--storm-s`` into one room (each a viewer
  socket resuming with ``?after=<seq>``, taken to its ``hello`` and dropped again): the time to
  ``hello``, refusals, and the room's answers during the storm against the rest of the run.

Recorded: every operation that changed a document (each turn whose block was ``applied`` and the
answer it wrote; each typed insert or delete with its Yjs update), errors (those an injected
fault is meant to cause counted apart from the rest: any of the latter fails the run), the
IDE's RSS every ``--sample-s`` seconds and its growth over the second half (MB and % per hour),
the time per answer of late turns over early ones, CPU seconds.

The final check rebuilds each room's files independently: ``bench/out.py`` is the body of the
last answer whose block applied (a block rolled back by a steer, stop or cut leaves the file as
it was); ``app.py`` is the starting text with every typed insert and delete applied to a plain
string, in the order typed (one typist per room, the only one who edits it). Both must equal the
files over HTTP, the files of a client that joins afresh, and (``app.py``) a fresh pycrdt
document given the typist's starting state and then its recorded updates.

``--memtrace`` sends ``SIGUSR1`` to Daphne at the end of each quarter and keeps the reports of
``spark_ide.ops.memtrace`` (effective where that hook is installed in the ASGI module).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import signal
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil
from pycrdt import (
    Doc,
    Map,
    Text,
    YMessageType,
    YSyncMessageType,
    create_update_message,
    handle_sync_message,
)
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from benchmarks import report
from benchmarks.pairing.client import Browser, Watcher
from benchmarks.pairing.run import WRITE_PATH, bulk, write_body
from benchmarks.pairing.stack import FrameTap, Stack
from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.ops.memtrace import ENV_FILE, ENV_SWITCH, ENV_TRACEMALLOC, rss_bytes

SCENARIO = "soak"
QUICK = ["--minutes", "0.5", "--rooms", "10", "--sample-s", "1"]
ANSWERS = 16  # answer variants a0..a15: turn i plays a(i % 16), so consecutive turns differ
STEER_ANSWERS = 8  # what a steer asks for: s0..s7 (other bodies, shorter prose)
PROSE_TOKENS = 300
STEER_PROSE_TOKENS = 60
STEER_SALT = 100
TYPED_PATH = "app.py"
FILES = {TYPED_PATH: "def add(a, b):\n    return a + b\n", WRITE_PATH: "# nothing written yet\n"}
TURN_TIMEOUT_S = 60.0
LATE_OVER_EARLY_MAX = 1.05
GROWTH_PER_HOUR_MAX = 8.0  # percent (2 % per 15 minutes)
MIN_JUDGED_S = 300.0  # the memory trend is judged only over runs at least this long
SOCKETS_PER_30_MIN = 1000
STORM_HELLO_TIMEOUT_S = 15.0  # a storm's socket without its hello by then counts as failed
VIEWERS = 60  # viewer accounts the churning, stalling and storming sockets take turns with: a storm is
# many people's pages, each account under the per-user socket cap (SPARK_MAX_SOCKETS_PER_USER, 20)
FAULTS = ("hostile", "cut", "stall", "storm")
# What the hostile socket's frames must be answered with (docs/protocol.md, "Errors").
HOSTILE_CODES = {"malformed_binary", "too_large", "malformed_json", "bad_message", "bad_field", "missing_field",
                 "unknown_type"}
MAX_MESSAGE_BYTES = 256 * 1024  # the IDE's SPARK_WS_MAX_MESSAGE_BYTES (its default: the stack sets none)
DAPHNE_MAX_MESSAGE_BYTES = 1024 * 1024  # Daphne's own cap: a bigger message closes the socket
WORDS = ("x", "total", "value", "# note", "pass", "return", "  ", "\n", "def f():", "a + b", "items", "0")

SYNC_STEP2 = bytes([YMessageType.SYNC, YSyncMessageType.SYNC_STEP2])

T = TypeVar("T")


def scripts() -> dict[str, str]:
    texts = {f"a{k}": bulk(PROSE_TOKENS, salt=k, seed=k) for k in range(ANSWERS)}
    texts.update({f"s{k}": bulk(STEER_PROSE_TOKENS, salt=STEER_SALT + k, seed=STEER_SALT + k)
                  for k in range(STEER_ANSWERS)})
    return texts


def body_of(script: str) -> str:
    """The file content the answer ``script`` writes."""
    kind, k = script[0], int(script[1:])
    return write_body(k if kind == "a" else STEER_SALT + k)


@dataclass
class Tally:
    """Errors, sorted: what an injected fault is meant to cause (counted by kind) and everything
    else (kept, the first ones reported; any of these fails the run)."""

    expected: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)

    def expect(self, what: str) -> None:
        self.expected[what] += 1

    def unexpect(self, what: str) -> None:
        self.unexpected.append(what)


def _files_of(doc: Doc[Any]) -> dict[str, str]:
    files = doc.get("files", type=Map)
    return {str(path): str(text) for path, text in files.items()}


# -- the socket clients ------------------------------------------------------------------------


@dataclass(eq=False)
class TurnSeen:
    """One turn as the client saw it: counts and times, never the frames themselves."""

    id: str
    script: str
    steered_from: str | None
    started_at: float
    first_delta: asyncio.Future[float]
    done: asyncio.Future[dict[str, Any]]
    last_delta_at: float | None = None
    frames: int = 0
    chars: int = 0
    applied: bool = False


class SoakBrowser(Browser):
    """A session socket that keeps no growing list: each event updates the turn it belongs
    to (counts and timestamps) and wakes whoever waits for it."""

    def __init__(self, ws: Any) -> None:
        self.turns: dict[str, TurnSeen] = {}
        self.next_script = ""
        self.next_started: asyncio.Future[TurnSeen] | None = None
        self.errors: list[str] = []
        self.error_codes: Counter[str] = Counter()
        self.applied_script: str | None = None  # the last answer whose block was applied
        self.applied_blocks = 0
        self.text_frames = 0
        self.seq = 0  # the highest seq seen: where a reconnecting page would resume
        super().__init__(ws)

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    self.binary_frames += 1  # Yjs: counted, never answered
                    continue
                self.text_frames += 1
                self._take(time.monotonic(), json.loads(message))
        except ConnectionClosed as exc:
            self.errors.append(f"socket closed: {exc}")
        finally:
            self._arrived.set()
            for turn in self.turns.values():
                if not turn.done.done():
                    turn.done.set_exception(ConnectionError("the session socket closed"))

    def _take(self, at: float, event: dict[str, Any]) -> None:
        kind = event["type"]
        self.seq = max(self.seq, int(event.get("seq") or 0))
        if kind == "turn.delta":
            turn = self.turns.get(event["turn"])
            if turn is not None:
                turn.frames += 1
                turn.chars += len(event["text"])
                turn.last_delta_at = at
                if not turn.first_delta.done():
                    turn.first_delta.set_result(at)
        elif kind == "edit.status":
            turn = self.turns.get(event["turn"])
            if turn is not None and event.get("path") == WRITE_PATH:
                if event["state"] == "applied":
                    turn.applied, self.applied_script = True, turn.script
                    self.applied_blocks += 1
                elif event["state"] == "rolled_back" and turn.applied:
                    self.errors.append(f"turn {turn.id}: an applied block was rolled back")
        elif kind == "turn.started":
            turn = TurnSeen(event["turn"], self.next_script, event.get("steered_from"), at,
                            asyncio.get_running_loop().create_future(),
                            asyncio.get_running_loop().create_future())
            self.turns[turn.id] = turn
            if self.next_started is not None and not self.next_started.done():
                self.next_started.set_result(turn)
        elif kind == "turn.finished":
            turn = self.turns.get(event["turn"])
            if turn is not None and not turn.done.done():
                turn.done.set_result({**event, "at": at})
        elif kind == "error":
            self.error_codes[str(event.get("code"))] += 1
            self.errors.append(f"error event: {event.get('code')}: {event.get('message')}")
        elif kind == "hello":
            self.events.append((at, event))  # Browser.open waits for it
            self._arrived.set()

    def expect_turn(self, script: str) -> asyncio.Future[TurnSeen]:
        """The next ``turn.started``, which plays ``script``."""
        self.next_script = script
        self.next_started = asyncio.get_running_loop().create_future()
        return self.next_started


class Typist(Browser):
    """A collaborator's page that types into ``app.py``: a pycrdt replica of the document (kept
    up to date from the server's Yjs frames), each keystroke made there and sent as an update.

    Every operation is also applied to ``expected``, a plain string: the independent model of
    what the file must hold. ``updates`` keeps the Yjs updates in the order sent, ``start`` the
    replica's state once the server's sync arrived (the replay starts from it).
    """

    def __init__(self, ws: Any) -> None:
        self.doc: Doc[Any] = Doc()
        self.synced = asyncio.Event()
        self.start: bytes = b""
        self.expected = ""
        self.updates: list[bytes] = []  # since ``start``
        self.sent = 0  # updates sent in all
        self.replacements = 0  # documents adopted (``document.replaced``)
        self.adopted = asyncio.Event()  # set while the replica holds what was typed (after a replacement)
        self.adopted.set()
        self.ops: Counter[str] = Counter()
        self.errors: list[str] = []
        super().__init__(ws)

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    self.binary_frames += 1
                    if message[:1] == bytes([YMessageType.SYNC]):
                        handle_sync_message(message[1:], self.doc)
                        if message[1] == YSyncMessageType.SYNC_STEP2 and not self.synced.is_set():
                            self.start = self.doc.get_update()
                            self.expected = _files_of(self.doc).get(TYPED_PATH, "")
                            self.synced.set()
                    continue
                event = json.loads(message)
                if event["type"] == "error":
                    self.errors.append(f"typist: error event: {event.get('code')}: {event.get('message')}")
                elif event["type"] == "hello":
                    self.events.append((time.monotonic(), event))
                    self._arrived.set()
                elif event["type"] == "document.replaced":
                    await self._adopt(event)
        except ConnectionClosed as exc:
            self.errors.append(f"typist: socket closed: {exc}")
        finally:
            self._arrived.set()

    async def _adopt(self, event: dict[str, Any]) -> None:
        """The page's part of a replacement: the new document, then ``document.adopted``.
        Keystrokes still in flight reach it merged by the server; typing waits for them."""
        self.adopted.clear()
        self.doc = Doc()
        self.doc.apply_update(base64.b64decode(event["state"]))
        self.replacements += 1
        await self.ws.send(json.dumps({"type": "document.adopted", "generation": event["generation"]}))

    async def _caught_up(self) -> None:
        """After a replacement: wait until the new document holds every keystroke made (the
        server merges those in flight into it), then replay from there."""
        deadline = time.monotonic() + 10
        while _files_of(self.doc).get(TYPED_PATH) != self.expected:
            if time.monotonic() > deadline:
                self.errors.append(f"typist: the replaced document never got the keystrokes in flight in {TYPED_PATH}")
                break
            await asyncio.sleep(0.01)
        self.start, self.updates = self.doc.get_update(), []
        self.adopted.set()

    async def type_once(self, rng: random.Random) -> None:
        """One keystroke-sized edit at a random place: an insert, or now and then a delete."""
        if not self.adopted.is_set():
            await self._caught_up()
        target: Text = self.doc.get("files", type=Map)[TYPED_PATH]
        current = str(target)
        if current != self.expected:
            self.errors.append(f"typist: the replica's {TYPED_PATH} parted from the typed text")
            self.expected = current  # report once, then go on from what the replica holds
        before = self.doc.get_state()
        if len(current) > 60 and rng.random() < 0.3:
            at = rng.randrange(len(current) - 8)
            length = rng.randint(1, 8)
            with self.doc.transaction(origin="human"):
                del target[at : at + length]
            self.expected = current[:at] + current[at + length :]
            self.ops["delete"] += 1
            self.ops["deleted_chars"] += length
        else:
            at = rng.randint(0, len(current))
            word = rng.choice(WORDS)
            with self.doc.transaction(origin="human"):
                target.insert(at, word)
            self.expected = current[:at] + word + current[at:]
            self.ops["insert"] += 1
            self.ops["inserted_chars"] += len(word)
        update = self.doc.get_update(before)
        self.updates.append(update)
        self.sent += 1
        await self.ws.send(create_update_message(update))

    def replay(self) -> str:
        """``app.py`` rebuilt from the recorded updates alone (since the last replacement), in a
        fresh document."""
        doc: Doc[Any] = Doc()
        doc.apply_update(self.start)
        for update in self.updates:
            doc.apply_update(update)
        return _files_of(doc).get(TYPED_PATH, "")


async def fresh_files(url: str, token: str, timeout: float = 30.0) -> dict[str, str]:
    """The files as a page that joins now gets them: the server's sync step 2, applied to an
    empty pycrdt document. The socket is then dropped (a close handshake would first have to
    read through the frames queued behind the document)."""
    doc: Doc[Any] = Doc()
    ws = await connect(url, additional_headers={"Authorization": f"Token {token}"}, compression=None,
                       max_size=None, open_timeout=timeout)
    try:
        async with asyncio.timeout(timeout):
            async for message in ws:
                if isinstance(message, bytes) and message[:2] == SYNC_STEP2:
                    handle_sync_message(message[1:], doc)
                    return _files_of(doc)
    finally:
        ws.transport.abort()
    raise ConnectionError("the socket closed before the document arrived")


# -- one room ----------------------------------------------------------------------------------


@dataclass
class TurnRecord:
    index: int
    action: str  # plain / steer / stop / cut
    seconds: float | None  # plain turns: prompt sent -> turn.finished at the client
    status: str
    at: float = 0.0  # when the prompt was sent (monotonic)
    server_duration_ms: float | None = None
    steer_ms: float | None = None


@dataclass
class CutSeen:
    """The model connection cut in one room's turn, and how the turn ended."""

    room: int
    links_cut: int
    status: str
    reason: str | None
    ended_ms: float  # cut -> turn.finished at the client


@dataclass
class Room:
    number: int
    workspace: str
    url: str
    browser: SoakBrowser
    typist: Typist
    rng: random.Random
    texts: dict[str, str]
    rate: float
    tap: FrameTap
    tally: Tally
    records: list[TurnRecord] = field(default_factory=list)
    cut_next: asyncio.Future[CutSeen] | None = None  # set by the fault schedule: cut the next turn

    @property
    def tag(self) -> str:
        """In every prompt of the room: the frame tap finds the room's model connection by it
        (the scripted engine ignores text that is no directive)."""
        return f"room-{self.number:02d}."

    def prompt_text(self, script: str) -> str:
        return f"{self.tag} [script:{script}][rate:{self.rate:g}][ttft:0]"

    async def _wait(self, awaitable: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                return await awaitable
        except TimeoutError:
            raise TurnTimeout(f"room {self.number}: no {what} within {TURN_TIMEOUT_S:g} s") from None

    def _check_complete(self, turn: TurnSeen, finished: dict[str, Any]) -> str:
        status = str(finished["status"])
        if status == "failed":
            self.tally.unexpect(f"turn {turn.id} failed: {finished.get('reason')}: {finished.get('error')}")
        elif status == "completed" and turn.chars != len(self.texts[turn.script]):
            self.tally.unexpect(f"turn {turn.id}: {turn.chars} characters, expected {len(self.texts[turn.script])}")
        return status

    async def turn(self, index: int, action: str) -> None:
        browser = self.browser
        script = f"a{index % ANSWERS}"
        started = browser.expect_turn(script)
        sent = await browser.send({"type": "prompt", "text": self.prompt_text(script)})
        turn = await self._wait(started, "turn.started")
        if action == "plain":
            finished = await self._wait(turn.done, "turn.finished")
            status = self._check_complete(turn, finished)
            self.records.append(TurnRecord(index, action, finished["at"] - sent, status, sent,
                                           finished.get("metrics", {}).get("duration_ms")))
            return
        await self._wait(turn.first_delta, "first delta")
        # Somewhere in the answer: in its prose, or in its write block.
        await asyncio.sleep(self.rng.uniform(0.05, 0.9) * self.answer_seconds(script))
        if action == "cut":
            await self._cut(index, turn, sent)
            return
        if action == "stop":
            await browser.send({"type": "stop"})
            finished = await self._wait(turn.done, "turn.finished after stop")
            self.records.append(TurnRecord(index, action, None, self._check_complete(turn, finished), sent))
            return
        steer = f"s{self.rng.randrange(STEER_ANSWERS)}"
        successor = browser.expect_turn(steer)
        await browser.send({"type": "steer", "text": self.prompt_text(steer)})
        old = await self._wait(turn.done, "turn.finished after steer")
        self._check_complete(turn, old)
        # After a steer that raced the answer's end, the steer is a plain prompt.
        new = await self._wait(successor, "steered turn.started")
        finished = await self._wait(new.done, "steered turn.finished")
        status = self._check_complete(new, finished)
        steer_ms = finished.get("metrics", {}).get("steer_ms")
        self.records.append(TurnRecord(index, action, None, status, sent, steer_ms=steer_ms))

    async def _cut(self, index: int, turn: TurnSeen, sent: float) -> None:
        """Drop the room's model connection now; the turn must end, failed with a reason or
        completed in full (a recovery the client cannot tell from a plain turn)."""
        cut_at = time.monotonic()
        links = self.tap.cut(self.tag.encode())
        finished = await self._wait(turn.done, "turn.finished after the model connection was cut")
        status, reason = str(finished["status"]), finished.get("reason")
        if status == "failed":
            self.tally.expect(f"cut: turn failed ({reason})")
        elif status == "completed" and turn.chars == len(self.texts[turn.script]):
            self.tally.expect("cut: turn completed all the same")
        else:
            self.tally.unexpect(f"turn {turn.id} after a cut: {status} ({reason}), {turn.chars} characters")
        seen = CutSeen(self.number, links, status, reason, round((finished["at"] - cut_at) * 1000, 1))
        self.records.append(TurnRecord(index, "cut", None, status, sent))
        if self.cut_next is not None and not self.cut_next.done():
            self.cut_next.set_result(seen)
        self.cut_next = None

    def answer_seconds(self, script: str) -> float:
        return len(split_tokens(self.texts[script])) / self.rate

    async def loop(self, deadline: float, steer_share: float, stop_share: float) -> None:
        index = 0
        try:
            while time.monotonic() < deadline:
                draw = self.rng.random()
                action = "steer" if draw < steer_share else "stop" if draw < steer_share + stop_share else "plain"
                if index == 0:
                    action = "plain"
                elif self.cut_next is not None:
                    action = "cut"
                await self.turn(index, action)
                # Forget the turns that ended: the client keeps nothing that grows.
                for turn_id in [t for t, seen in self.browser.turns.items() if seen.done.done()]:
                    del self.browser.turns[turn_id]
                index += 1
        except (TurnTimeout, ConnectionError) as exc:
            self.tally.unexpect(str(exc))

    async def type_loop(self, deadline: float, every_s: float) -> None:
        """The typist's keystrokes, ``every_s`` apart on average, until the deadline."""
        rng = random.Random(self.rng.random())  # noqa: S311 - a reproducible mix, not a secret
        try:
            while (pause := min(rng.expovariate(1 / every_s), deadline - time.monotonic())) > 0:
                await asyncio.sleep(pause)
                await self.typist.type_once(rng)
        except ConnectionClosed as exc:
            self.tally.unexpect(f"room {self.number}: the typist's socket closed: {exc}")


class TurnTimeout(Exception):
    """A turn did not reach the next step in time (the room stops there)."""


# -- sockets that come and go, and the faults ---------------------------------------------------


@dataclass
class Sockets:
    """The viewers' sockets of the whole run (churn, stalls and storms alike)."""

    opened: int = 0
    hello: int = 0
    closed_cleanly: int = 0
    dropped_abruptly: int = 0
    failed: Counter[str] = field(default_factory=Counter)


@dataclass
class Load:
    """What the soak drives besides the rooms' own turns: viewer sockets and the faults."""

    stack: Stack
    rooms: list[Room]
    tokens: dict[str, str]
    daphne: psutil.Process
    tally: Tally
    args: argparse.Namespace
    rng: random.Random
    sockets: Sockets = field(default_factory=Sockets)
    faults: Counter[str] = field(default_factory=Counter)
    windows: list[tuple[str, float, float]] = field(default_factory=list)  # (fault, start, end)
    hostiles: list[dict[str, Any]] = field(default_factory=list)
    cuts: list[CutSeen] = field(default_factory=list)
    stalls: list[dict[str, Any]] = field(default_factory=list)
    storms: list[dict[str, Any]] = field(default_factory=list)
    _next_viewer: int = 0
    storming: bool = False  # a storm is going on (or its sockets are still waiting)

    def viewer_token(self) -> str:
        self._next_viewer += 1
        return self.tokens[f"viewer-{self._next_viewer % VIEWERS}"]

    async def visit(self, url: str, hold_s: float, abrupt: bool, what: str, timeout: float = 30.0) -> float | None:
        """A viewer's socket: open, wait for ``hello`` (``timeout``), hold, leave; seconds to
        ``hello``, None when it got none (counted in ``sockets.failed``; a churning viewer that
        fails is an error of the soak, a storm's are the storm's figure)."""
        begun = time.monotonic()
        during_storm = self.storming  # a viewer that queued behind a storm's connects fails with it
        self.sockets.opened += 1
        try:
            async with asyncio.timeout(timeout):
                watcher = await Watcher.open(url, self.viewer_token(), timeout=timeout)
                await watcher.ready.wait()
        except (OSError, TimeoutError) as exc:
            self.sockets.failed[f"{what}: {type(exc).__name__}: {str(exc)[:80]}"] += 1
            if what != "storm" and (self.storming or during_storm):  # the storm's backlog: part of its figure
                self.tally.expect(f"storm: a {what} viewer got no hello during it")
            elif what != "storm":
                self.tally.unexpect(f"a {what} viewer got no hello: {type(exc).__name__}: {str(exc)[:80]}")
            return None
        took = time.monotonic() - begun
        self.sockets.hello += 1
        await asyncio.sleep(hold_s)
        if watcher.closed:
            self.sockets.failed[f"{what}: closed by the server while held"] += 1
            if what != "storm":
                self.tally.unexpect(f"the server closed a {what} viewer's socket while it was held")
        elif abrupt:
            watcher.abort()
            self.sockets.dropped_abruptly += 1
        else:
            watcher.close()
            self.sockets.closed_cleanly += 1
        return took

    async def churn(self, started: float, deadline: float, count: int) -> None:
        """``count`` viewers over the run, evenly spread, each held 0.2-3 s; a third drop
        their TCP connection without a close frame."""
        visits: set[asyncio.Task[float | None]] = set()
        gap = (deadline - started) / max(count, 1)
        for k in range(count):
            await asyncio.sleep(max(0.0, started + k * gap - time.monotonic()))
            room = self.rng.choice(self.rooms)
            task = asyncio.create_task(self.visit(room.url, self.rng.uniform(0.2, 3.0), k % 3 == 0, "churn"))
            visits.add(task)
            task.add_done_callback(visits.discard)
        await asyncio.gather(*visits)

    async def schedule(self, started: float, deadline: float) -> None:
        """One fault every ``--fault-every-s``, the classes in turn, while the rooms run."""
        every = self.args.fault_every_s or max(6.0, min(60.0, (deadline - started) / 6))
        k = 0
        while (at := started + every * (k + 1)) + 3 < deadline:
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            kind = FAULTS[k % len(FAULTS)]
            room = self.rooms[k % len(self.rooms)]
            begun = time.monotonic()
            try:
                await getattr(self, kind)(room, every)
            except (OSError, TimeoutError, ConnectionClosed) as exc:
                self.tally.unexpect(f"fault {kind} in room {room.number}: {type(exc).__name__}: {exc}")
            self.faults[kind] += 1
            self.windows.append((kind, begun, time.monotonic()))
            report.progress(SCENARIO, f"fault {k + 1}: {kind} in room {room.number}")
            k += 1

    async def hostile(self, room: Room, every: float) -> None:
        """A collaborator's socket sends frames no page would; each must be answered by an
        ``error`` of the expected code, with the socket still open. Last, a frame over Daphne's
        own 1 MB message cap, which Daphne answers by closing the socket (1009): that close is
        the expected answer to it."""
        frames = hostile_frames(self.rng)
        browser = await Browser.open(room.url, self.tokens["mallory"])
        try:
            for frame in frames:
                await browser.ws.send(frame)
                await asyncio.sleep(0.002)  # within the socket's rate limits: the checks, not the limiter
            await browser.send({"type": "ping", "id": "after-the-garbage"})
            await browser.first(lambda e: e["type"] == "pong", timeout=30)
        except ConnectionError:
            self.tally.unexpect(f"room {room.number}: the server closed the hostile socket")
        codes = Counter(str(e.get("code")) for _, e in browser.events if e["type"] == "error")
        for code, n in codes.items():
            for _ in range(n):
                if code in HOSTILE_CODES:
                    self.tally.expect(f"hostile: {code}")
                else:
                    self.tally.unexpect(f"room {room.number}: hostile frame answered {code}")
        closed = None
        with contextlib.suppress(ConnectionClosed):
            await browser.ws.send(bytes([YMessageType.SYNC, 2]) + bytes(DAPHNE_MAX_MESSAGE_BYTES + 1024))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await browser.ws.wait_closed()
                closed = browser.ws.close_code
        if closed is None:
            self.tally.unexpect(f"room {room.number}: a frame over Daphne's message cap left the socket open")
        else:
            self.tally.expect(f"hostile: closed for a frame over Daphne's 1 MB cap ({closed})")
        self.hostiles.append({"room": room.number, "frames": len(frames), "answered_with_error": sum(codes.values()),
                              "binary": sum(isinstance(f, bytes) for f in frames), "codes": dict(codes),
                              "over_daphne_cap_closed_with": closed})
        await browser.close()

    async def cut(self, room: Room, every: float) -> None:
        """The room's next turn has its model connection dropped mid-answer (``Room._cut``)."""
        room.cut_next = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(max(every, TURN_TIMEOUT_S)):
                self.cuts.append(await room.cut_next)
        except TimeoutError:
            room.cut_next = None
            self.tally.unexpect(f"room {room.number}: the cut turn did not end in time")

    async def stall(self, room: Room, every: float) -> None:
        """A viewer stops reading for ``--stall-s`` with a 4 KB receive buffer, so what the
        room sends it piles up in the server; then it reads again and must get it all."""
        seconds = self.args.stall_s or min(20.0, every * 0.8)
        watcher = await Watcher.open(room.url, self.viewer_token())
        self.sockets.opened += 1
        async with asyncio.timeout(30):
            await watcher.ready.wait()
        self.sockets.hello += 1
        watcher.shrink_receive_buffer()
        mark, rss_before = len(watcher.frames), rss_bytes(self.daphne.pid) / 1e6
        seq_before = room.browser.seq
        watcher.pause_reading()
        peak = rss_before
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(0.5)
            peak = max(peak, rss_bytes(self.daphne.pid) / 1e6)
        seq_at_resume = room.browser.seq
        watcher.resume_reading()
        # It must catch up: the frames it missed arrive, the last ones with the room's seq.
        deadline = time.monotonic() + 30
        caught_up = False
        while time.monotonic() < deadline and not watcher.closed:
            if watcher.frames[mark:] and _last_seq(watcher.frames) >= seq_at_resume:
                caught_up = True
                break
            await asyncio.sleep(0.1)
        held = sum(len(payload) for _, payload in watcher.frames[mark:])
        if watcher.closed:
            self.tally.unexpect(f"room {room.number}: the server closed the stalled viewer")
        elif not caught_up:
            self.tally.unexpect(f"room {room.number}: the stalled viewer did not catch up within 30 s")
        self.stalls.append({
            "room": room.number, "seconds": round(seconds, 1), "room_events_meanwhile": seq_at_resume - seq_before,
            "frames_after_resume": len(watcher.frames) - mark, "text_bytes_after_resume": held,
            "caught_up": caught_up, "ide_rss_mb": [round(rss_before, 1), round(peak, 1)],
            "ide_rss_growth_mb": round(peak - rss_before, 1),
        })
        watcher.close()
        self.sockets.closed_cleanly += 1

    async def storm(self, room: Room, every: float) -> None:
        """``--storm-rate`` reconnects a second into one room for ``--storm-s``: each resumes
        with ``?after=<seq>``, waits for its ``hello`` and drops again (every other one without
        a close frame), as pages do when a load balancer restarts."""
        rate, count = self.args.storm_rate, max(1, round(self.args.storm_rate * self.args.storm_s))
        url = f"{room.url}?after={room.browser.seq}"
        began = time.monotonic()
        tasks = []
        self.storming = True
        try:
            for k in range(count):
                await asyncio.sleep(max(0.0, began + k / rate - time.monotonic()))
                tasks.append(asyncio.create_task(self.visit(url, 0.0, k % 2 == 0, "storm", STORM_HELLO_TIMEOUT_S)))
            sent_over = time.monotonic() - began
            hellos = [t * 1000 for t in await asyncio.gather(*tasks) if t is not None]
        finally:
            self.storming = False
        took = time.monotonic() - began
        failed = count - len(hellos)  # the storm's own figure (its row), not an error of the soak
        self.storms.append({
            "room": room.number, "reconnects": count, "asked_rate_per_s": rate,
            "opened_rate_per_s": round(count / sent_over, 1) if sent_over else None,
            "served_rate_per_s": round(len(hellos) / took, 1) if took else None,
            "hello": len(hellos), "failed": failed, "hello_ms": report.summary(hellos), "seconds": round(took, 2),
        })


def _last_seq(frames: list[tuple[float, bytes]]) -> int:
    """The seq of the last text frame that has one (the JSON events carry it)."""
    for _, payload in reversed(frames):
        with contextlib.suppress(ValueError):
            seq = json.loads(payload).get("seq")
            if isinstance(seq, int):
                return seq
    return -1


def hostile_frames(rng: random.Random) -> list[bytes | str]:
    """What the hostile socket sends: Yjs-looking garbage, truncated real updates (one that
    would add a file if it were whole), unknown binary kinds, bad JSON, frames over the cap."""
    frames: list[bytes | str] = []
    for _ in range(30):  # a sync update (or step) of random bytes
        frames.append(bytes([YMessageType.SYNC, rng.choice([1, 2])]) + rng.randbytes(rng.randint(4, 300)))
    junk: Doc[Any] = Doc()
    junk.get("files", type=Map)["junk/injected.py"] = Text("import os\n" * 20)
    whole = create_update_message(junk.get_update())
    for _ in range(10):  # a real update cut short: the file must not appear
        frames.append(whole[: rng.randint(3, len(whole) - 2)])
    for _ in range(5):
        frames.append(bytes([rng.randint(2, 255)]) + rng.randbytes(rng.randint(0, 40)))
    frames += ['{"type": "prompt"', '{"type": "prompt", "effort": ["high"], "text": "x"}', '{"type": 7}',
               '{"type": "no-such-message"}', '{"type": "steer"}']
    frames.append(bytes([YMessageType.SYNC, 2]) + rng.randbytes(MAX_MESSAGE_BYTES + 1024))
    frames.append(json.dumps({"type": "prompt", "text": "x" * (MAX_MESSAGE_BYTES + 1024)}))
    return frames


# -- server resources ---------------------------------------------------------------------------


@dataclass
class Sampler:
    """RSS of the IDE over time, and its CPU seconds against the turns the rooms completed."""

    daphne: psutil.Process
    rooms: list[Room]
    started: float
    samples: list[tuple[float, float]] = field(default_factory=list)  # (s since start, MB)
    cpu: list[tuple[int, float]] = field(default_factory=list)  # (turns ended so far, IDE CPU s)

    def sample(self) -> None:
        self.samples.append((round(time.monotonic() - self.started, 2), rss_bytes(self.daphne.pid) / 1e6))
        self.cpu.append((sum(len(room.records) for room in self.rooms), cpu_seconds(self.daphne)))

    async def run(self, every_s: float) -> None:
        while True:
            self.sample()
            await asyncio.sleep(every_s)


def slope_per_s(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None with fewer than 3 points."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else None


def memory_figures(samples: list[tuple[float, float]], seconds: float) -> dict[str, Any]:
    """Growth over the second half (and the first, for comparison) in MB and as % of the RSS at
    the half's start, per hour (and per 15 minutes), both from the least-squares line."""
    def half(lo: float, hi: float) -> dict[str, Any]:
        points = [p for p in samples if lo <= p[0] <= hi]
        slope = slope_per_s(points)
        if slope is None:
            return {"samples": len(points)}
        start = statistics.fmean(p[1] for p in points) - slope * (statistics.fmean(p[0] for p in points) - lo)
        return {
            "samples": len(points), "mb_at_start": round(start, 1), "mb_at_end": round(start + slope * (hi - lo), 1),
            "mb_per_min": round(slope * 60, 3), "mb_per_hour": round(slope * 3600, 1),
            "percent_per_15_min": round(slope * 900 / start * 100, 2),
            "percent_per_hour": round(slope * 3600 / start * 100, 2),
        }

    warm = min(seconds * 0.1, 60.0)  # the first turns import code and fill the caches
    return {
        "warm_up_s": round(warm, 1),
        "first_half": half(warm, seconds / 2),
        "second_half": half(seconds / 2, seconds),
        "rss_first_mb": samples[0][1] if samples else None, "rss_last_mb": samples[-1][1] if samples else None,
    }


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


# -- the run -----------------------------------------------------------------------------------


def cpu_per_turn(points: list[tuple[int, float]]) -> dict[str, Any]:
    """IDE CPU ms per turn over the first and the last fifth of the run (after a warm-up
    fifth), and their ratio: the late-vs-early figure in CPU time, which other work on the
    machine does not inflate."""
    if len(points) < 10:
        return {}
    fifth = len(points) // 5

    def window(part: list[tuple[int, float]]) -> float | None:
        turns, cpu = part[-1][0] - part[0][0], part[-1][1] - part[0][1]
        return round(cpu * 1000 / turns, 2) if turns > 0 else None

    early, late = window(points[fifth : 2 * fifth + 1]), window(points[-fifth - 1 :])
    return {"early_ms": early, "late_ms": late,
            "late_over_early": round(late / early, 3) if early and late else None}


def early_late(records: list[list[TurnRecord]]) -> dict[str, Any]:
    """Median time per answer of plain turns: late (last fifth of the turn indexes every room
    reached) over early (the first fifth, turn 0 left out)."""
    reached = min((len(r) for r in records), default=0)
    if reached < 6:
        return {"turns_every_room_reached": reached}
    fifth = max(1, reached // 5)
    early = [t.seconds * 1000 for r in records for t in r[1 : 1 + fifth] if t.seconds is not None]
    late = [t.seconds * 1000 for r in records for t in r[reached - fifth : reached] if t.seconds is not None]
    if not early or not late:
        return {"turns_every_room_reached": reached}
    return {
        "turns_every_room_reached": reached, "early_indexes": [1, fifth],
        "late_indexes": [reached - fifth, reached - 1],
        "early_ms": report.summary(early), "late_ms": report.summary(late),
        "late_over_early": round(statistics.median(late) / statistics.median(early), 4),
    }


def per_index(records: list[list[TurnRecord]]) -> list[tuple[float, float]]:
    """(turn index, median time per answer in ms over the rooms' plain turns of that index)."""
    by_index: dict[int, list[float]] = {}
    for room in records:
        for t in room:
            if t.seconds is not None:
                by_index.setdefault(t.index, []).append(t.seconds * 1000)
    return [(i, round(statistics.median(v), 2)) for i, v in sorted(by_index.items())]


def during_faults(records: list[list[TurnRecord]], windows: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Median time per answer of the plain turns sent during each fault class's windows
    against those sent outside every window: how the rooms fared while it went on."""
    plain = [t for r in records for t in r if t.seconds is not None]
    inside: dict[str, list[float]] = {}
    outside = []
    for t in plain:
        kinds = [kind for kind, lo, hi in windows if lo <= t.at <= hi]
        for kind in kinds:
            inside.setdefault(kind, []).append(t.seconds * 1000 if t.seconds is not None else 0.0)
        if not kinds:
            outside.append(t.seconds * 1000 if t.seconds is not None else 0.0)
    base = statistics.median(outside) if outside else None
    figures: dict[str, Any] = {"outside_ms": round(base, 1) if base else None, "outside_turns": len(outside)}
    for kind, values in sorted(inside.items()):
        median = statistics.median(values)
        figures[kind] = {"turns": len(values), "median_ms": round(median, 1),
                         "over_outside": round(median / base, 3) if base else None}
    return figures


def _process(stack: Stack, module: str) -> psutil.Process:
    for process in stack.processes:
        if isinstance(process.args, list) and module in process.args[1:3]:
            return psutil.Process(process.pid)
    raise RuntimeError(f"no {module} process in the stack")


async def _memtrace_dumps(daphne: psutil.Process, seconds: float, path: Path) -> None:
    for quarter in range(1, 5):
        await asyncio.sleep(seconds / 4 - (2 if quarter == 4 else 0))
        with contextlib.suppress(ProcessLookupError):
            os.kill(daphne.pid, signal.SIGUSR1)
        report.progress(SCENARIO, f"memtrace report {quarter} asked for ({path})")


async def _http_files(stack: Stack, workspace: str) -> list[str]:
    async with httpx.AsyncClient(base_url=stack.ide_url, headers={"Authorization": f"Token {stack.token}"},
                                 timeout=30) as http:
        answer = await http.get(f"/api/workspaces/{workspace}")
        answer.raise_for_status()
        return sorted(str(f["path"]) for f in answer.json()["files"])


async def final_check(stack: Stack, room: Room, token: str) -> dict[str, Any]:
    """Each room's files, rebuilt from the recorded operations, against the server's three
    views: HTTP, a page joining now, and (the typed file) the pycrdt replay of the updates."""
    expected = {TYPED_PATH: room.typist.expected,
                WRITE_PATH: body_of(room.browser.applied_script) if room.browser.applied_script else FILES[WRITE_PATH]}
    http = {path: await stack.file_text(room.workspace, path, text, timeout=10) for path, text in expected.items()}
    paths = await _http_files(stack, room.workspace)
    try:
        fresh = await fresh_files(room.url, token)
    except (OSError, TimeoutError, ConnectionError, ConnectionClosed) as exc:  # an error of the run, not its end
        why = f"{type(exc).__name__} {exc}"
        room.tally.unexpect(f"room {room.number}: a page joining at the end got no document: {why}")
        fresh = {}
    replayed = room.typist.replay()
    checks = {
        "http": http == expected and paths == sorted(expected),
        "fresh_join": fresh == expected,
        "replay": replayed == expected[TYPED_PATH],
        "typist_replica": _files_of(room.typist.doc) == expected,
    }
    differs = [f"{view}" for view, ok in checks.items() if not ok]
    if differs:
        room.tally.unexpect(f"room {room.number}: final files differ from the replay in {', '.join(differs)}"
                            f" (paths over HTTP {paths}, fresh join {sorted(fresh)})")
    return {"room": room.number, **checks, "ok": all(checks.values()),
            "typed_chars": len(expected[TYPED_PATH]), "written": room.browser.applied_script}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = report.Setup()
    texts = scripts()
    seconds = args.minutes * 60.0
    sockets = args.sockets if args.sockets is not None else max(20, round(SOCKETS_PER_30_MIN * args.minutes / 30))
    trace_file = Path(tempfile.gettempdir()) / f"spark-soak-memtrace-{os.getpid()}.txt"
    if args.memtrace:  # Stack passes this process's environment on to Daphne
        os.environ[ENV_SWITCH] = "1"
        os.environ[ENV_FILE] = str(trace_file)
        if args.tracemalloc:
            os.environ[ENV_TRACEMALLOC] = str(args.tracemalloc)
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    tally = Tally()
    began = time.monotonic()
    async with Stack(texts, relay=False) as stack:
        report.progress(SCENARIO, f"stack up in {time.monotonic() - began:.1f} s")
        assert stack.tap is not None
        daphne, model, me = _process(stack, "daphne"), _process(stack, "spark_ide.modelserver"), psutil.Process()
        made = [await stack.session(FILES) for _ in range(args.rooms)]
        session_ids = [url.rstrip("/").rsplit("/", 1)[-1] for _, url in made]
        roles = {f"viewer-{k}": "viewer" for k in range(VIEWERS)}
        roles.update({f"typist-{n}": "collaborator" for n in range(args.rooms)}, mallory="collaborator")
        tokens = await stack.participants(session_ids, roles)
        report.progress(SCENARIO, f"rooms and people made at {time.monotonic() - began:.1f} s")
        rooms: list[Room] = []
        for number, (workspace, url) in enumerate(made):
            browser = await SoakBrowser.open(url, stack.token)
            typist = await Typist.open(url, tokens[f"typist-{number}"])
            assert isinstance(browser, SoakBrowser) and isinstance(typist, Typist)
            async with asyncio.timeout(30):
                await typist.synced.wait()
            rng = random.Random(args.seed * 1000 + number)  # noqa: S311 - a reproducible mix, not a secret
            rooms.append(Room(number, workspace, url, browser, typist, rng, texts, args.rate, stack.tap, tally))
        load = Load(stack, rooms, tokens, daphne, tally, args, random.Random(args.seed))  # noqa: S311
        report.progress(SCENARIO, f"{args.rooms} rooms up; soaking for {seconds:.0f} s")
        cpu_before = {"ide": cpu_seconds(daphne), "model_server": cpu_seconds(model), "load_generator": cpu_seconds(me)}
        started = time.monotonic()
        deadline = started + seconds
        sampler = Sampler(daphne, rooms, started)
        sampling = asyncio.create_task(sampler.run(args.sample_s))
        tracing = asyncio.create_task(_memtrace_dumps(daphne, seconds, trace_file)) if args.memtrace else None
        try:
            await asyncio.gather(
                *(room.loop(deadline, args.steer_share, args.stop_share) for room in rooms),
                *(room.type_loop(deadline, args.type_every_s) for room in rooms),
                load.churn(started, deadline, sockets), load.schedule(started, deadline),
            )
        finally:
            sampling.cancel()
            if tracing is not None:
                tracing.cancel()
        wall = time.monotonic() - started
        sampler.sample()
        cpu = {name: round(cpu_seconds(p) - cpu_before[name], 2)
               for name, p in (("ide", daphne), ("model_server", model), ("load_generator", me))}
        await asyncio.sleep(0.5)  # the typists' last updates reach the server and come back
        report.progress(SCENARIO, f"run over at {time.monotonic() - began:.1f} s; the final check")
        checks = [await final_check(stack, room, tokens["mallory"]) for room in rooms]
        report.progress(SCENARIO, f"final check done at {time.monotonic() - began:.1f} s")
        for room in rooms:
            for error in room.browser.errors + room.typist.errors:
                tally.unexpect(f"room {room.number}: {error}")
            await room.browser.close()
            await room.typist.close()
        memtrace = trace_file.read_text() if args.memtrace and trace_file.exists() else None
    return figures(args, rooms, load, sampler, cpu, wall, checks, memtrace, setup)


def figures(
    args: argparse.Namespace, rooms: list[Room], load: Load, sampler: Sampler, cpu: dict[str, float], wall: float,
    checks: list[dict[str, Any]], memtrace: str | None, setup: report.Setup,
) -> dict[str, Any]:
    records = [room.records for room in rooms]
    tally = load.tally
    trend = early_late(records)
    cpu_turn = cpu_per_turn(sampler.cpu)
    memory = memory_figures(sampler.samples, wall)
    second = memory["second_half"]
    growth = second.get("percent_per_hour")
    # Over the first minutes each room's replay log (10,000 events) and caches still fill:
    # a short run's growth is warm-up, not a trend.
    judged = growth is not None and wall >= MIN_JUDGED_S
    growth_note = (f"RSS {second['mb_at_start']} -> {second['mb_at_end']} MB, {second['mb_per_hour']} MB per hour"
                   if growth is not None else "")
    if growth is not None and not judged:
        growth_note += f"; not judged: runs under {MIN_JUDGED_S / 60:g} minutes are still warming up"
    ratio = trend.get("late_over_early")
    turns = [t for r in records for t in r]
    plain = [t.seconds * 1000 for t in turns if t.seconds is not None]
    actions = {a: sum(1 for t in turns if t.action == a) for a in ("plain", "steer", "stop", "cut")}
    typed: Counter[str] = sum((room.typist.ops for room in rooms), Counter())
    applied = sum(room.browser.applied_blocks for room in rooms)
    operations = {"turns": len(turns), **actions, "blocks_applied": applied,
                  "typed_inserts": typed["insert"], "typed_deletes": typed["delete"],
                  "typed_chars": typed["inserted_chars"] + typed["deleted_chars"],
                  "yjs_updates_sent": sum(room.typist.sent for room in rooms),
                  "documents_replaced": sum(room.typist.replacements for room in rooms)}
    changed = applied + typed["insert"] + typed["delete"]
    hostile_frames = sum(h["frames"] for h in load.hostiles)
    answered = sum(h["answered_with_error"] for h in load.hostiles)
    storm = load.storms
    reconnects = sum(s["reconnects"] for s in storm)
    storm_failed = sum(s["failed"] for s in storm)
    hello_p95 = max((s["hello_ms"].get("p95") or 0 for s in storm), default=None) if storm else None
    served = min((s["served_rate_per_s"] or 0 for s in storm), default=None) if storm else None
    stall_growth = max((s["ide_rss_growth_mb"] for s in load.stalls), default=None)
    fault_total = sum(load.faults.values())
    ok_rooms = sum(1 for c in checks if c["ok"])
    effect = during_faults(records, load.windows)
    cpus = os.cpu_count() or 1
    share = {name: round(s / wall / cpus, 3) for name, s in cpu.items()}
    socks = load.sockets
    rows = [
        report.row("soak: late vs early turns, time per answer (median)",
                   trend.get("late_ms", {}).get("p50"), unit="ms", baseline=trend.get("early_ms", {}).get("p50"),
                   ratio=ratio, target=f"<= {LATE_OVER_EARLY_MAX}", met=report.at_most(ratio, LATE_OVER_EARLY_MAX),
                   note=f"{args.rooms} rooms, {wall / 60:.1f} min, {len(turns)} turns"),
        report.row("soak: IDE server memory growth per hour, second half", growth, unit="% per hour",
                   baseline=second.get("mb_at_start"), ratio=None,
                   target=f"< {GROWTH_PER_HOUR_MAX} % per hour (flat)",
                   met=growth < GROWTH_PER_HOUR_MAX if judged and growth is not None else None, note=growth_note),
        report.row("soak: IDE CPU per turn, late vs early", cpu_turn.get("late_ms"), unit="ms",
                   baseline=cpu_turn.get("early_ms"), ratio=cpu_turn.get("late_over_early"),
                   note="the same comparison in CPU time, unaffected by other load"),
        report.row("soak: operations that changed a document", changed,
                   note=f"{applied} blocks applied by {len(turns)} turns ({actions['steer']} steered, "
                        f"{actions['stop']} stopped, {actions['cut']} cut); {typed['insert']} typed inserts, "
                        f"{typed['delete']} deletes"),
        report.row("soak: final documents match the independent replay", f"{ok_rooms}/{len(checks)} rooms",
                   target="all (HTTP, a fresh join, the replayed updates)",
                   met=bool(checks) and ok_rooms == len(checks)),
        report.row("soak: faults injected", fault_total,
                   note=", ".join(f"{n} {k}" for k, n in sorted(load.faults.items()))),
        report.row("soak: unexpected errors", len(tally.unexpected), target="0", met=not tally.unexpected),
        report.row("soak: expected errors (answers to the injected faults)", sum(tally.expected.values()),
                   note="; ".join(f"{n} {k}" for k, n in tally.expected.most_common(6))),
        report.row("soak: hostile frames answered with an error", answered, baseline=hostile_frames,
                   target="all, the socket open, the document untouched",
                   met=answered == hostile_frames if load.hostiles else None),
        report.row("soak: reconnect storm, reconnects served per second", served, unit="/s",
                   baseline=args.storm_rate, target=f">= {args.storm_rate:g}/s asked, none refused",
                   met=storm_failed == 0 and served is not None and served >= args.storm_rate * 0.9 if storm else None,
                   note=f"{reconnects} reconnects in {len(storm)} storms, {storm_failed} failed; hello p95 "
                        f"{hello_p95} ms; the storm room's answers {effect.get('storm', {}).get('over_outside')}x "
                        "the time outside faults"),
        report.row("soak: never-reading viewer, IDE memory held", stall_growth, unit="MB",
                   note=f"{len(load.stalls)} stalls; "
                        + ", ".join(f"{s['text_bytes_after_resume'] / 1e6:.1f} MB sent on after {s['seconds']} s"
                                    for s in load.stalls[:3])),
        report.row("soak: viewer sockets opened and dropped", socks.opened,
                   note=f"{socks.dropped_abruptly} without a close frame, {sum(socks.failed.values())} failed"),
        report.row("soak: load generator CPU share", share["load_generator"], unit="of all cores",
                   note=f"IDE {share['ide']}, model server {share['model_server']}"),
    ]
    charts = {
        "soak_time_per_answer": report.chart(
            "Soak: time per answer vs turn index (median over rooms, plain turns)", "turn index", "ms",
            {"time per answer": per_index(records)}),
        "soak_rss": report.chart("Soak: IDE server RSS over time", "s", "MB", {"Daphne RSS": sampler.samples}),
    }
    return {
        "rows": rows, "charts": charts,
        "setup": setup.finish(rooms=args.rooms, minutes=args.minutes, rate=args.rate, steer_share=args.steer_share,
                              stop_share=args.stop_share, sample_s=args.sample_s, seed=args.seed,
                              type_every_s=args.type_every_s, storm_rate=args.storm_rate, storm_s=args.storm_s,
                              fault_every_s=args.fault_every_s, stall_s=args.stall_s),
        "time_per_answer": trend,
        "ide_cpu_per_turn": cpu_turn,
        "plain_turn_ms": {"min": round(min(plain), 3) if plain else None, **report.summary(plain)},
        # The engine's own schedule: no plain answer can take less (token i is due at i / rate).
        "generation_ms_min": round(min(len(split_tokens(t)) - 1 for n, t in scripts().items() if n[0] == "a")
                                   / args.rate * 1000, 3),
        "memory": memory,
        "turns": {"total": len(turns), **actions, "per_room": [len(r) for r in records]},
        "operations": operations,
        "faults": {"count": fault_total, "by_class": dict(load.faults), "hostiles": load.hostiles,
                   "cuts": [vars(c) for c in load.cuts], "stalls": load.stalls, "storms": load.storms,
                   "answers_during": effect},
        "sockets": {"opened": socks.opened, "hello": socks.hello, "closed_cleanly": socks.closed_cleanly,
                    "dropped_abruptly": socks.dropped_abruptly, "failed": dict(socks.failed)},
        "errors": {"unexpected": len(tally.unexpected), "first": tally.unexpected[:10],
                   "expected": dict(tally.expected)},
        "final_check": checks,
        "cpu_seconds": cpu, "cpu_share_of_all_cores": share,
        "client_frames": {"text": sum(r.browser.text_frames for r in rooms),
                          "binary": sum(r.browser.binary_frames + r.typist.binary_frames for r in rooms)},
        "rss_samples": sampler.samples,
        **({"memtrace": memtrace} if memtrace is not None else {}),
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_bench soak",
                                     description="Rooms prompting, steering and editing under faults for a while.")
    parser.add_argument("--rooms", type=int, default=10, help="rooms, one session socket and one typist each")
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the rooms keep going")
    parser.add_argument("--rate", type=float, default=1000.0, help="engine tokens/s")
    parser.add_argument("--steer-share", type=float, default=0.15, help="share of turns steered mid-answer")
    parser.add_argument("--stop-share", type=float, default=0.1, help="share of turns stopped mid-answer")
    parser.add_argument("--type-every-s", type=float, default=0.5, help="mean seconds between a typist's edits")
    parser.add_argument("--sockets", type=int, default=None,
                        help="viewer sockets opened and dropped over the run (default: 1,000 per 30 minutes)")
    parser.add_argument("--fault-every-s", type=float, default=0.0,
                        help="seconds between faults (default: a sixth of the run, 6 to 60 s)")
    parser.add_argument("--stall-s", type=float, default=0.0,
                        help="how long the stalled viewer reads nothing (default: 0.8 x the fault spacing, <= 20 s)")
    parser.add_argument("--storm-rate", type=float, default=200.0, help="reconnects per second in a storm")
    parser.add_argument("--storm-s", type=float, default=2.0, help="how long a storm lasts")
    parser.add_argument("--sample-s", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memtrace", action="store_true",
                        help="ask the IDE for spark_ide.ops.memtrace reports (SIGUSR1) each quarter")
    parser.add_argument("--tracemalloc", type=int, default=0,
                        help="with --memtrace: also trace allocations with this many frames (slow)")
    args = parser.parse_args(argv)
    if args.rooms < 1 or args.minutes <= 0 or args.rate <= 0 or args.sample_s <= 0 or args.type_every_s <= 0:
        parser.error("--rooms must be >= 1; --minutes, --rate, --sample-s and --type-every-s > 0")
    if min(args.steer_share, args.stop_share) < 0 or args.steer_share + args.stop_share > 1:
        parser.error("--steer-share and --stop-share must be >= 0 and add up to at most 1")
    if args.tracemalloc < 0 or args.fault_every_s < 0 or args.stall_s < 0 or (args.sockets or 0) < 0:
        parser.error("--tracemalloc, --fault-every-s, --stall-s and --sockets take numbers >= 0")
    if args.storm_rate <= 0 or args.storm_s <= 0:
        parser.error("--storm-rate and --storm-s must be > 0")
    return args


def main(argv: list[str]) -> dict[str, Any]:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    print(json.dumps(main(__import__("sys").argv[1:]), indent=1))
