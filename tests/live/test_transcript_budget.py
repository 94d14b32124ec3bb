"""A new page's transcript: the newest whole turns within a size budget, the running one always."""

from __future__ import annotations

from spark_ide.live.events import EditStatus, TurnProse, TurnStarted
from spark_ide.live.outbox import Frame
from spark_ide.live.replay import within_budget


def turn(name: str, seq: int, prose: int) -> list[Frame]:
    return [
        Frame(TurnStarted(turn=name, prompt="p", steered_from=None, effort="medium", author="ada"), seq),
        Frame(TurnProse(turn=name, text="x" * prose), seq + 1),
    ]


def turns_of(frames: list[Frame]) -> list[str]:
    return sorted({frame.event.turn for frame in frames})  # type: ignore[attr-defined]


def test_the_newest_turns_that_fit_are_kept_whole_and_older_ones_stop_at_the_first_too_big() -> None:
    frames = turn("t1", 1, 100) + turn("t2", 3, 5000) + turn("t3", 5, 300) + turn("t4", 7, 300)
    kept = within_budget(frames, None, budget=1200)
    assert turns_of(kept) == ["t3", "t4"]  # t2 does not fit; t1 would, but is older than it
    assert all(frame in frames for frame in kept)


def test_the_running_turn_is_kept_whatever_its_size() -> None:
    frames = turn("t1", 1, 100) + turn("t2", 3, 50_000)
    assert turns_of(within_budget(frames, "t2", budget=1000)) == ["t1", "t2"]


def test_the_code_a_fences_final_status_carries_counts_as_its_turns_text() -> None:
    code = {"kind": "write", "fenced": True, "lines": [1, 400], "code": "x = 1\n" * 400}
    fenced = [
        Frame(TurnStarted(turn="t1", prompt="p", steered_from=None, effort="medium", author="ada"), 1),
        Frame(EditStatus(turn="t1", block=0, path="main.py", state="applied", detail=code), 2),
    ]
    frames = fenced + turn("t2", 3, 100)
    assert turns_of(within_budget(frames, None, budget=2000)) == ["t2"]  # 2,400 characters of code
    assert turns_of(within_budget(frames, None, budget=3000)) == ["t1", "t2"]
