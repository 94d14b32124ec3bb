"""A reopened room's conversation from the turn records (live.reopen), without a database:
steering chains told as the live history tells them, a restored checkpoint's conversation
as the start, the ledger back from its stored form, and what cannot be read."""

from __future__ import annotations

import dataclasses
import time

import pytest

from spark_ide.editing.ledger import Ledger, LedgerEntry, Outcome
from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind
from spark_ide.live.checkpoints import Checkpoint, CheckpointKind, new_checkpoint_id
from spark_ide.live.events import CheckpointRestored, TurnStarted
from spark_ide.live.prompting import PastTurn, PromptStyle
from spark_ide.live.reopen import PastRecord, StoredPast, conversation_of, reopened
from spark_ide.live.store import StoredEvent, TurnOutcome, TurnRecord
from tests.support.memory_store import MemoryRoomStore

APPLIED = {
    "block": 0, "path": "a.py", "kind": "edit", "outcome": "applied", "lines": [3, 4], "reason": None,
    "candidates": [], "conflicts": [], "merge": {"replaced": ["f"], "added": []},
}


def test_a_stored_ledger_reads_back_as_the_live_one_told_it() -> None:
    entries = [
        LedgerEntry(0, "a.py", BlockKind.EDIT, Outcome.APPLIED, (3, 4), merge=MergeReport(replaced=("f",))),
        LedgerEntry(1, "b.py", BlockKind.WRITE, Outcome.FAILED, reason="not_found", candidates=(7, 9)),
        LedgerEntry(2, "c.py", BlockKind.EDIT, Outcome.CONFLICTED, (1, 2), conflicts=(2,),
                    merge=MergeReport(inserted=True)),
    ]
    live = Ledger("t1")
    live._entries = {entry.block: entry for entry in entries}
    assert Ledger.from_dicts("t1", live.as_dicts()).as_prompt() == live.as_prompt()
    assert Ledger.from_dicts("t1", [APPLIED]).as_prompt() == (
        "Edit blocks of turn t1:\n- block 0 <edit> a.py lines 3-4: applied (merged: replaced f)"
    )


def record(turn: str, prompt: str, status: str = "completed", *, steered_from: str | None = None) -> PastRecord:
    return PastRecord(turn=turn, prompt=prompt, status=status, output=f"out {turn}", steered_from=steered_from)


def test_a_steering_chain_is_one_past_turn_told_as_its_request() -> None:
    past = StoredPast(
        turns=(
            record("t1", "make it fast", "steered"),
            record("t2", "use a dict", "steered", steered_from="t1"),
            record("t3", "and keep order", steered_from="t2"),
            record("t4", "add tests", "failed"),
        ),
        last=dataclasses.replace(record("t4", "add tests", "failed"), ledger=[APPLIED]),
    )
    conversation = conversation_of(past, PromptStyle())
    assert conversation.history == (
        PastTurn("make it fast\n(Redirected: use a dict)\n(Redirected: and keep order)", "out t3"),
        PastTurn("add tests", "out t4"),
    )
    assert conversation.ledger.startswith("Edit blocks of turn t4:")
    # Reverted since it ended: its ledger says so, as the live one does after the revert.
    assert past.last is not None
    reverted = dataclasses.replace(past, last=dataclasses.replace(past.last, reverted=True))
    assert conversation_of(reverted, PromptStyle()).ledger == (
        "Edit blocks of turn t4:\n- block 0 <edit> a.py: reverted"
    )
    # A model whose steer is a plain new request has the steer's own text as its request.
    plain = conversation_of(past, dataclasses.replace(PromptStyle(), steer_as_request=True, history_turns=1))
    assert plain.history == (PastTurn("add tests", "out t4"),)


def test_an_unreadable_ledger_is_left_out() -> None:
    past = StoredPast(last=dataclasses.replace(record("t1", "x"), ledger=[{"block": "zero"}]))
    assert conversation_of(past, PromptStyle()).ledger == ""


async def test_the_conversation_starts_over_at_the_last_restore_of_one() -> None:
    store = MemoryRoomStore()
    seq = 0

    async def ran(turn: str, prompt: str) -> None:
        nonlocal seq
        seq += 1
        await store.turn_started(TurnRecord(turn, "s", None, prompt, "medium", "", None))
        store.events.append(StoredEvent(seq, seq, TurnStarted(turn, prompt, None, "medium", "ada")))
        await store.turn_finished(TurnOutcome(turn, "completed", "done", f"out {turn}", [], {}, {}))

    await ran("t1", "one")
    await ran("t2", "two")
    before_two = Checkpoint(
        id=new_checkpoint_id(), kind=CheckpointKind.TURN, files={}, history=(PastTurn("one", "out t1"),),
        ledger="Turn t1: no edit blocks.", at=round(time.time() * 1000),
    )
    await store.checkpoint_save(before_two, keep=10)
    seq += 1
    store.events.append(StoredEvent(seq, seq, CheckpointRestored(
        turn="t2", checkpoint=before_two.id, code=False, conversation=True, by="ada", undo="cp-x",
    )))
    style = PromptStyle()
    conversation = await reopened(store, style)
    assert conversation is not None
    assert (conversation.history, conversation.ledger) == ((PastTurn("one", "out t1"),), "Turn t1: no edit blocks.")

    await ran("t3", "three")  # after the restore
    conversation = await reopened(store, style)
    assert conversation is not None
    assert conversation.history == (PastTurn("one", "out t1"), PastTurn("three", "out t3"))
    assert conversation.ledger == "Turn t3: no edit blocks."


async def test_a_room_with_no_past_or_whose_past_cannot_be_read_opens_without_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryRoomStore()
    assert await reopened(store, PromptStyle()) is None
    store.fail("stored_past")
    assert await reopened(store, PromptStyle()) is None
    assert "could not be read" in caplog.text
