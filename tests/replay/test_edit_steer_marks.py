"""A steer by editing on the replay's scrubber (issue 33): its mark says what was edited, by whom,
and the steer's new prompt does not overwrite it."""

from __future__ import annotations

from spark_ide.replay.services import marks


def test_a_steer_by_editing_is_marked_with_what_was_edited() -> None:
    events = [
        {"type": "turn.started", "turn": "t1", "prompt": "write it", "t": 0},
        {"type": "turn.edit_steered", "turn": "t1", "path": "a.py", "lines": [12, 14], "by": "Ana", "diff": "", "t": 5},
        {"type": "turn.finished", "turn": "t1", "reason": "steered", "t": 5},
        {"type": "turn.started", "turn": "t2", "prompt": "write it", "steered_from": "t1", "t": 6},
        {"type": "turn.finished", "turn": "t2", "reason": "steered", "t": 9},
        {"type": "turn.started", "turn": "t3", "prompt": "shorter", "steered_from": "t2", "t": 10},
    ]
    assert [(m["kind"], m["turn"], m["text"]) for m in marks(events)] == [
        ("turn", "t1", "write it"),
        ("edit_steer", "t1", "steered by editing a.py:12\u201314 (Ana)"),
        ("steer", "t2", "shorter"),  # an ordinary steer after it: its text
    ]
