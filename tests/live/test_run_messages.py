"""A run's messages have one definition (``live.events``): the sandbox's task sends their
payloads over the channel layer and the room reads them back as the same events."""

from __future__ import annotations

import pytest

from spark_ide.live.events import RunError, RunFinished, RunOutput, run_message_from


def test_a_run_message_reads_back_as_the_event_it_was_sent_as() -> None:
    output = RunOutput(run="r1", stream="stdout", text="hi\n")
    ended = RunFinished(run="r1", exit_code=0, duration_ms=12, status="ok", truncated=False, message="", sandboxed=True)
    refused = RunFinished.refused("r2", RunError.SANDBOX_BUSY, "no free uid")
    for event in (output, ended, refused):
        assert run_message_from(event.payload()) == event
    assert refused.payload()["error"] == "sandbox_busy" and "error" not in ended.payload()
    assert (refused.exit_code, refused.status, refused.sandboxed) == (None, "failed", False)


@pytest.mark.parametrize("data", [
    {"type": "run.started", "run": "r1"},
    {"type": "run.output", "run": "r1", "text": "no stream"},
    {"type": "run.finished", "run": "r1", "exit_code": "x", "duration_ms": 0, "status": "ok", "truncated": False,
     "message": "", "sandboxed": True},
])
def test_anything_else_is_refused_by_name(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=str(data["type"])):
        run_message_from(data)
