"""The event log keeps when each turn event was published; a merged run keeps its span."""

from __future__ import annotations

from spark_ide.live.event_log import EventLogBacklog
from spark_ide.live.events import EditStatus, TurnDelta, TurnProse, TurnStarted
from spark_ide.live.outbox import Frame


def frame(event: object, seq: int, at: int) -> Frame:
    made = Frame(event, seq)  # type: ignore[arg-type]
    made.at = at
    return made


def test_a_merged_run_is_stored_with_its_first_and_last_time() -> None:
    log = EventLogBacklog()
    log.add_frame(frame(TurnStarted(turn="t", prompt="p", steered_from=None, effort="medium", author="ada"), 1, 1000))
    for seq, at in ((2, 1010), (3, 1020), (4, 1090)):
        log.add_frame(frame(TurnDelta(turn="t", text=f"d{seq} "), seq, at))
    log.add_frame(frame(TurnProse(turn="t", text="Hello "), 5, 1100))
    log.add_frame(frame(TurnProse(turn="t", text="world"), 6, 1180))
    log.add_frame(frame(EditStatus(turn="t", block=0, path="a.py", state="locating"), 7, 1200))
    entries = log.take_entries()
    assert [(e.event.type, e.first_seq, e.seq, e.at, e.until) for e in entries] == [
        ("turn.started", 1, 1, 1000, 1000),
        ("turn.delta", 2, 4, 1010, 1090),
        ("turn.prose", 5, 6, 1100, 1180),
        ("edit.status", 7, 7, 1200, 1200),
    ]
    assert entries[1].event == TurnDelta(turn="t", text="d2 d3 d4 ")
    assert log.take_entries() == []  # taken: the times went with the events
    assert log.times == {}
