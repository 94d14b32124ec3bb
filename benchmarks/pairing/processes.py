"""One room served by several IDE processes, as the fanout benchmark drives it
(``benchmarks.fanout``, its ``processes`` part): viewers placed on chosen processes that
reconnect as a page does, a measured answer, and the owner's process killed mid-turn.

A ``SharedRoom`` is one workspace's room on a ``Stack(daphnes=N, ...)``: its driver (a
``client.Browser``) opens it on process 0, which then owns it; its viewers are ``Seat``\\ s,
each one viewer across its connections (``scale.OrderedWatcher``: every frame timed, the
seq of every numbered event checked to rise across reconnections).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import WebSocketException

from benchmarks.pairing.client import Browser, play
from benchmarks.pairing.run import PACED_RATE
from benchmarks.pairing.scale import OrderedWatcher, SeqOrder, measure_level
from benchmarks.pairing.stack import Stack
from benchmarks.report import progress, summary

JOINED = b'"presence"'  # the last frame of an IDE join (after the transcript and the replay)
CONNECT_BATCH = 50  # sockets opened at once while a room fills up
SETTLE_S = 0.5  # after the last socket joined, before the answer starts
KILL_AFTER_S = 0.5  # of the doomed answer streaming before its owner is killed
TAKEOVER_TIMEOUT_S = 30.0
RETRY_S = 0.05  # between reconnection attempts (the room may still be changing hands)
POLL_S = 0.02

Events = list[tuple[float, dict[str, Any]]]


def paced(script: str) -> str:
    """The prompt that plays ``script`` at 1,000 tokens/s, at once."""
    return f"[script:{script}][rate:{PACED_RATE}][ttft:0]"


def _on(ws_url: str, http_url: str) -> str:
    """The session socket ``ws_url`` on the IDE process serving ``http_url``."""
    return urlunsplit(("ws", urlsplit(http_url).netloc, urlsplit(ws_url).path, "", ""))


def _after(url: str, order: SeqOrder) -> str:
    return f"{url}?after={order.top}" if order.top else url


def _hello(browser: Browser) -> tuple[float, dict[str, Any]]:
    return next((at, event) for at, event in browser.events if event["type"] == "hello")


class Seat:
    """One viewer across its connections: it reconnects (``?after=`` its highest seq, as a
    page does) when its process dies or the room moves."""

    def __init__(self, index: int, token: str) -> None:
        self.index = index
        self.token = token
        self.order = SeqOrder()
        self.socket: OrderedWatcher | None = None
        self.ended_at: float | None = None  # when its connection ended after the owner was killed

    @property
    def live(self) -> OrderedWatcher:
        assert self.socket is not None
        return self.socket

    async def connect(self, url: str, deadline: float) -> None:
        """A connection to ``url`` that completed its join; tried again (a moment later) while
        connections are refused or closed during the join, until ``deadline``."""
        while True:
            try:
                socket = cast(OrderedWatcher, await OrderedWatcher.open(
                    _after(url, self.order), self.token, ready_marker=JOINED,
                    timeout=max(deadline - time.monotonic(), 0.1),
                ))
                socket.order = self.order
                self.socket = socket
                while not socket.ready.is_set():
                    if socket.closed:
                        raise ConnectionError("the server closed the socket during the join")
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"viewer {self.index}: no join within the time allowed")
                    await asyncio.sleep(POLL_S)
                return
            except (OSError, ConnectionError):  # TimeoutError is an OSError: raised once past the deadline
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(RETRY_S)

    async def move(self, url: str, deadline: float) -> None:
        """Leave for ``url`` (what the old connection got is taken first: its seqs)."""
        old = self.live
        old.take()
        old.close()
        await old.gone.wait()
        await self.connect(url, deadline)

    async def back(self, url: str, mark: int, deadline: float) -> Events:
        """After the owner died: wait for the connection to end, then reconnect to ``url``.
        What the old connection got from ``mark`` on."""
        old = self.live
        await old.gone.wait()
        self.ended_at = old.lost_at
        before = old.take(mark)
        await self.connect(url, deadline)
        return before

    async def until_finished(self, turn: str) -> None:
        """Until the current connection got ``turn``'s ``turn.finished``."""
        socket, seen = self.live, 0
        needle = f'"turn":"{turn}"'.encode()
        while True:
            for _, payload in socket.frames[seen:]:
                if b'"turn.finished"' in payload and needle in payload:
                    return
            seen = len(socket.frames)
            if socket.closed:
                raise ConnectionError(f"viewer {self.index}: the server closed the socket")
            await asyncio.sleep(POLL_S)


class SharedRoom:
    """A workspace's room on a stack of several IDE processes: its driver on process 0 (the
    owner), its viewers on the processes ``fill`` names."""

    def __init__(self, stack: Stack, name: str, ws_url: str, text: str) -> None:
        self.stack, self.name, self.text = stack, name, text
        self.urls = [_on(ws_url, http) for http in stack.ide_urls]
        self.seats: list[Seat] = []
        self.driver: Browser | None = None
        self.epoch = 0  # of the owner the driver joined last (its hello)
        self.pids = {"server": stack.pids["daphne"], "server_b": stack.pids["daphne-2"],
                     "modelserver": stack.pids["modelserver"]}

    @property
    def driving(self) -> Browser:
        assert self.driver is not None
        return self.driver

    async def open(self) -> None:
        """The driver opens the room on process 0 (which then owns it) and plays a first turn
        (imports, connections)."""
        self.driver = await Browser.open(self.urls[0], self.stack.token)
        self.epoch = int(_hello(self.driver)[1]["epoch"])
        await play(self.driver, f"[say]warm up[/say][rate:{PACED_RATE}][ttft:0]")

    async def fill(self, count: int, processes: list[int]) -> None:
        """``count`` viewers, viewer ``i`` on ``processes[i % len(processes)]``; then a turn
        they all get (the other processes' first relay)."""
        deadline = time.monotonic() + 60
        self.seats = [Seat(i, self.stack.token) for i in range(count)]
        for start in range(0, count, CONNECT_BATCH):
            batch = self.seats[start : start + CONNECT_BATCH]
            await asyncio.gather(*(s.connect(self.urls[processes[s.index % len(processes)]], deadline) for s in batch))
        await asyncio.sleep(SETTLE_S)  # the last joins' presence events reach everyone
        counts = [seat.live.finished for seat in self.seats]
        await play(self.driving, f"[say]everyone here[/say][rate:{PACED_RATE}][ttft:0]")
        await asyncio.gather(*(s.live.until_finished(n + 1) for s, n in zip(self.seats, counts, strict=True)))
        for seat in self.seats:
            seat.live.take()

    async def measure(self, script: str) -> dict[str, Any]:
        """One answer of ``script`` (the room's ``text``), measured as a ramp level is, and
        how many numbered events came out of order."""
        disorder = sum(seat.order.disorder for seat in self.seats)

        async def drive() -> None:
            await play(self.driving, paced(script))

        figures = await measure_level(
            self.stack, self.pids, [seat.live for seat in self.seats], drive, lambda _: self.text,
        )
        self.driving.events.clear()
        figures["disorder"] = sum(seat.order.disorder for seat in self.seats) - disorder
        progress("fanout", f"{self.name}: p50 {figures['added_ms'].get('p50')} ms, p99 "
                 f"{figures['added_ms'].get('p99')} ms, {figures['lossy_sockets']} lossy, "
                 f"{figures['disorder']} out of order, generator CPU {figures['generator_cpu_share']:.0%}")
        return figures

    async def close(self) -> None:
        for seat in self.seats:
            if seat.socket is not None:
                seat.socket.close()
        if self.driver is not None:
            await self.driver.close()

    # -- the takeover -----------------------------------------------------------------------

    async def takeover(self, owner: int, doomed: tuple[str, str], new: tuple[str, str]) -> dict[str, Any]:
        """Kill process ``owner`` (its process group, SIGKILL) while the driver's answer of
        script ``doomed`` streams; everyone comes back on ``owner + 1``, where the driver plays
        script ``new`` at once. ``doomed`` and ``new`` are (script name, its text). The even
        viewers are on the owner, the odd ones on the next process (moved there first)."""
        survivor = self.urls[owner + 1]
        if owner:
            deadline = time.monotonic() + TAKEOVER_TIMEOUT_S
            await asyncio.gather(*(s.move(survivor, deadline) for s in self.seats if s.index % 2))
            await asyncio.sleep(SETTLE_S)
        epoch, counts = self.epoch, self._counts()
        marks = [len(seat.live.frames) for seat in self.seats]
        driver = self.driving
        start = len(driver.events)
        await driver.send({"type": "prompt", "text": paced(doomed[0])})
        began = await driver.first(lambda e: e["type"] == "turn.started", start)
        doomed_turn = driver.events[began][1]["turn"]
        await driver.first(lambda e: e["type"] == "turn.delta" and e["turn"] == doomed_turn, began)
        await asyncio.sleep(KILL_AFTER_S)
        killed_at = time.monotonic()
        os.killpg(self.stack.daphne_processes[owner].pid, signal.SIGKILL)
        deadline = killed_at + TAKEOVER_TIMEOUT_S
        back = asyncio.ensure_future(self._driver_back(survivor, new[0], deadline))
        try:
            async with asyncio.timeout(TAKEOVER_TIMEOUT_S):
                befores = await asyncio.gather(*(
                    s.back(survivor, mark, deadline) for s, mark in zip(self.seats, marks, strict=True)
                ))
                driver_hello_at, new_turn = await back
                await asyncio.gather(*(seat.until_finished(new_turn) for seat in self.seats))
        except (TimeoutError, OSError, ConnectionError, WebSocketException) as exc:
            return {"killed": owner, "failed": f"the room did not come back within {TAKEOVER_TIMEOUT_S:g} s "
                    f"({type(exc).__name__}: {exc})"}
        finally:
            back.cancel()
        figures = self._judge(killed_at, epoch, (doomed_turn, doomed[1]), (new_turn, new[1]), befores)
        disorder, resyncs = self._counts()
        figures.update(killed=owner, survivor=owner + 1, driver_hello_s=round(driver_hello_at - killed_at, 3),
                       disorder=disorder - counts[0], resyncs=resyncs - counts[1])
        progress("fanout", f"takeover {owner} -> {owner + 1}: every viewer back with the new owner's hello after "
                 f"{figures['hello_s'].get('max')} s, a new turn's first delta after {figures['back_s']} s")
        return figures

    def _counts(self) -> tuple[int, int]:
        """Numbered events out of order and resyncs, over every viewer so far."""
        return sum(s.order.disorder for s in self.seats), sum(s.order.resyncs for s in self.seats)

    async def _driver_back(self, url: str, script: str, deadline: float) -> tuple[float, str]:
        """The driver reconnects (as a page does) and prompts ``script`` once it joined: (its
        hello's arrival, the new turn's id)."""
        old = self.driving
        await old.ws.wait_closed()
        order = SeqOrder(top=max((int(e["seq"]) for _, e in old.events if "seq" in e), default=0))
        while True:
            try:
                driver = await Browser.open(_after(url, order), self.stack.token)
                break
            except (OSError, WebSocketException):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(RETRY_S)
        self.driver = driver
        await driver.first(lambda e: e["type"] == "presence")  # the join's end: its replay is in
        hello_at, hello = _hello(driver)
        self.epoch = int(hello["epoch"])
        return hello_at, (await play(driver, paced(script))).id

    def _judge(
        self, killed_at: float, epoch: int, doomed: tuple[str, str], new: tuple[str, str], befores: list[Events],
    ) -> dict[str, Any]:
        """A takeover's figures from what each viewer got before (``befores``) and after the
        kill; ``doomed`` and ``new`` are (turn id, its script's text)."""
        ended, hello, first = [], [], []
        stale = without_owner_lost = 0
        lossy: list[dict[str, Any]] = []
        for seat, before in zip(self.seats, befores, strict=True):
            after = seat.live.take()
            if seat.ended_at is not None:
                ended.append(seat.ended_at - killed_at)
            hellos = [(at, event) for at, event in after if event["type"] == "hello"]
            if hellos:
                hello.append(hellos[0][0] - killed_at)
            stale += not hellos or int(hellos[0][1]["epoch"]) <= epoch
            got = "".join(str(e["text"]) for _, e in [*before, *after]
                          if e["type"] == "turn.delta" and e["turn"] == doomed[0])
            deltas = [(at, str(e["text"])) for at, e in after if e["type"] == "turn.delta" and e["turn"] == new[0]]
            new_got = "".join(text for _, text in deltas)
            if not doomed[1].startswith(got) or new_got != new[1]:
                lossy.append({"viewer": seat.index, "killed_turn": _compare(got, doomed[1], prefix=True),
                              "new_turn": _compare(new_got, new[1])})
            without_owner_lost += not any(
                e["type"] == "turn.finished" and e["turn"] == doomed[0] and e.get("reason") == "owner_lost"
                for _, e in after
            )
            if deltas:
                first.append(deltas[0][0] - killed_at)
        return {
            "viewers": len(self.seats), "connection_ended_s": summary(ended), "hello_s": summary(hello),
            "first_delta_s": summary(first), "back_s": round(max(first), 3) if len(first) == len(self.seats) else None,
            "lossy_viewers": len(lossy), "lossy": lossy[:5],  # the first few, for a reader to look into
            "stale_hello": stale, "without_owner_lost": without_owner_lost,
        }


def _compare(got: str, script: str, *, prefix: bool = False) -> str:
    """How a viewer's text of a turn differs from the script ("ok" when it does not)."""
    if got == script or (prefix and script.startswith(got)):
        return "ok"
    at = next((i for i, (a, b) in enumerate(zip(got, script, strict=False)) if a != b), min(len(got), len(script)))
    return f"{len(got)} characters against the script's {len(script)}, first different at {at}"
