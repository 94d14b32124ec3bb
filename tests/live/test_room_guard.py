"""``live.room_guard.RoomGuard``'s full scans: one at a time per room, those asked for meanwhile
together, each turn still told what its stream missed in its own files."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from spark_ide.guard import Finding, GuardMode, Severity, Tier
from spark_ide.live.events import Event, GuardFinding, TurnEvent
from spark_ide.live.room_guard import RoomGuard
from spark_ide.live.watchdog import GuardSettings


def _finding(path: str, line: int) -> Finding:
    return Finding(rule="os-system", severity=Severity.MEDIUM, path=path, line=line, message="m", fix="f",
                   tier=Tier.BANDIT)


class SlowScan:
    """A full scan that takes its time (a scan process too busy to keep up) and records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []
        self.running = 0
        self.most_at_once = 0
        self.release = asyncio.Event()

    async def __call__(self, files: Mapping[str, str]) -> list[Finding]:
        self.calls.append(dict(files))
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        await self.release.wait()
        self.running -= 1
        return [_finding(path, 1) for path in sorted(files)]


async def test_full_scans_asked_while_one_runs_go_together_and_each_turn_gets_its_own() -> None:
    texts = {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n"}
    published: list[TurnEvent] = []
    scan = SlowScan()

    async def mode() -> GuardMode:
        return GuardMode.FLAG

    def announce(event: Event) -> None:
        pass

    guard = RoomGuard(texts=lambda: dict(texts), publish=published.append, announce=announce, read_mode=mode,
                      settings=GuardSettings(full_scan=scan))
    guard.turn_ended("t1", ["a.py"], frozenset())
    await asyncio.sleep(0)
    assert len(scan.calls) == 1
    for n in range(2, 30):  # turns end faster than the scan goes: none of them starts a scan of its own
        guard.turn_ended(f"t{n}", ["b.py"] if n % 2 else ["c.py"], frozenset())
    await asyncio.sleep(0.01)
    assert len(scan.calls) == 1
    texts["b.py"] = "b = 2\n"  # the waiting scan reads the files as they are when it starts
    scan.release.set()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(scan.calls) == 2 and not scan.running:
            break
    assert len(scan.calls) == 2 and scan.most_at_once == 1
    assert scan.calls[1] == {"b.py": "b = 2\n", "c.py": "c = 1\n"}
    flagged = [(event.turn, event.path) for event in published if isinstance(event, GuardFinding)]
    assert ("t1", "a.py") in flagged
    assert all(path == ("b.py" if int(turn[1:]) % 2 else "c.py") for turn, path in flagged if turn != "t1")
    assert {turn for turn, _ in flagged} == {f"t{n}" for n in range(1, 30)}
    await guard.close()


async def test_a_finding_the_stream_reported_is_not_flagged_again() -> None:
    scan = SlowScan()
    scan.release.set()
    published: list[TurnEvent] = []

    async def mode() -> GuardMode:
        return GuardMode.FLAG

    guard = RoomGuard(texts=lambda: {"a.py": "x\n"}, publish=published.append, announce=lambda event: None,
                      read_mode=mode, settings=GuardSettings(full_scan=scan))
    guard.turn_ended("t1", ["a.py"], frozenset({_finding("a.py", 1).key}))
    await asyncio.sleep(0.05)
    assert len(scan.calls) == 1 and not [e for e in published if isinstance(e, GuardFinding)]
    await guard.close()
