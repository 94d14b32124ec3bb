"""``live.turn_watch.TurnWatch``: what it reads of a turn's code, and when (held while the stream
outruns the room, never past a block's end)."""

from __future__ import annotations

import random

from spark_ide.editing import BlockKind, BlockStatus, CodeText, EditState
from spark_ide.guard import Finding, scan_text
from spark_ide.live.turn_watch import HOLD_CHARS, TurnWatch
from spark_ide.live.watchdog import GuardRules

MODULE = "".join(
    f"def handler_{n}(request):\n    value = request.get('v{n}')\n    return value\n\n" for n in range(60)
) + (
    "def find(cursor, name):\n"
    "    cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
    "    return cursor.fetchall()\n"
    "\n"
    "API_TOKEN = 'ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "'\n"
) + "".join(f"def tail_{n}():\n    return {n}\n" for n in range(30))


def _pieces(text: str, seed: int) -> list[CodeText]:
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(text):
        size = rng.randint(1, 300)
        out.append(CodeText(block=0, path="app.py", first_line=1, text=text[at : at + size]))
        at += size
    return out


def _applied() -> BlockStatus:
    return BlockStatus(turn="t", block=0, path="app.py", kind=BlockKind.WRITE, state=EditState.APPLIED)


def _keys(findings: list[Finding]) -> list[tuple[str, str, int]]:
    return [finding.key for finding in findings]


def test_held_code_is_read_later_with_the_same_findings_as_read_at_once() -> None:
    whole = scan_text("app.py", MODULE)
    assert {finding.rule for finding in whole} >= {"sql-format"}
    for seed in range(20):
        rng = random.Random(seed)
        watch = TurnWatch(GuardRules())
        found: list[Finding] = []
        for piece in _pieces(MODULE, seed):
            found += watch.feed([piece], behind=rng.random() < 0.8)
        found += watch.feed([], [_applied()])  # the block's end: whatever is held is read
        assert not watch.holding
        assert _keys(found) == _keys(whole), seed


def test_behind_holds_until_the_cap_and_a_block_end_is_never_held() -> None:
    watch = TurnWatch(GuardRules())
    line = "x = compute(1)\n"
    held = 0
    while held + len(line) < HOLD_CHARS:
        assert watch.feed([CodeText(0, "app.py", 1, line)], behind=True) == []
        held += len(line)
        assert watch.holding and not watch.lines_ended
    watch.feed([CodeText(0, "app.py", 1, line)], behind=True)  # over the cap: all of it is read now
    assert not watch.holding and watch.lines_ended

    watch = TurnWatch(GuardRules())
    flaw = "import os\nos.system(command)\n"
    assert watch.feed([CodeText(0, "app.py", 1, flaw)], behind=True) == []
    found = watch.feed([], [_applied()], behind=True)  # a block's last status is never held back
    assert [finding.rule for finding in found] == ["os-system"] and not watch.holding


def test_not_behind_reads_every_delta_at_once() -> None:
    watch = TurnWatch(GuardRules())
    found = watch.feed([CodeText(0, "app.py", 1, "import os\nos.system(command)\n")])
    assert [finding.rule for finding in found] == ["os-system"]
    assert not watch.holding
