"""Checkpoint storage without a room (``live.checkpoints``): content addressing, and retention
that drops old blobs without reading the kept checkpoints. A long random run (files changing,
coming back to old texts, appearing and going) through the memory store, which follows the
same plan as the database's: every kept checkpoint always loads whole, and the blobs held
stay bounded."""

from __future__ import annotations

import json
import random

import pytest

from spark_ide.live import checkpoints
from spark_ide.live.checkpoints import (
    Checkpoint,
    CheckpointKind,
    addressed,
    blob_key,
    new_checkpoint_id,
    plan_save,
)
from spark_ide.live.prompting import PastTurn
from tests.support.memory_store import MemoryRoomStore


def checkpoint(files: dict[str, str], history: tuple[PastTurn, ...] = ()) -> Checkpoint:
    return Checkpoint(id=new_checkpoint_id(), kind=CheckpointKind.TURN, files=dict(files), history=history)


def test_one_changed_file_of_many_makes_one_new_file_blob_and_one_new_bucket() -> None:
    files = {f"src/m{index}.py": f"N = {index}\n" for index in range(100)}
    before = addressed(checkpoint(files))
    after = addressed(checkpoint({**files, "src/m5.py": "N = 'five'\n"}))
    assert len(before.manifest) == 10  # about the square root of the number of files
    new = set(after.blobs) - set(before.blobs)
    assert len(new) == 2 and "N = 'five'\n" in {after.blobs[key] for key in new}
    assert len(set(after.manifest) - set(before.manifest)) == 1


def test_the_plan_marks_only_stale_blobs_and_drops_below_the_kept_ones_minus_the_slack() -> None:
    stored = addressed(checkpoint({"a.py": "a\n"}))
    keys = list(stored.blobs)
    plan = plan_save(stored, number=30, keep=10, used={keys[0]: 29, keys[1]: 20})
    assert plan.new == {} and plan.mark == [keys[1]]  # 20 is more than 5 (the slack) behind
    assert (plan.drop_through, plan.drop_blobs_below) == (20, 16)


async def test_a_long_random_run_keeps_every_kept_checkpoint_whole_and_the_blobs_bounded() -> None:
    chance = random.Random(31)
    store = MemoryRoomStore()
    keep = 7
    files = {f"f{index}.py": f"v = {index}\n" for index in range(12)}
    history: tuple[PastTurn, ...] = ()
    taken: dict[str, tuple[dict[str, str], tuple[PastTurn, ...]]] = {}
    for step in range(300):
        path = f"f{chance.randrange(16)}.py"
        roll = chance.random()
        if roll < 0.1 and path in files:
            del files[path]
        elif roll < 0.4:
            files[path] = f"v = {chance.randrange(5)}\n"  # often a text seen before
        else:
            files[path] = f"v = {step}\n"
        if chance.random() < 0.3:
            history = (*history[-3:], PastTurn(f"ask {step}", f"answer {step}"))
        one = checkpoint(files, history)
        await store.checkpoint_save(one, keep=keep)
        taken[one.id] = (dict(files), history)
        assert len(store.checkpoints) == min(step + 1, keep)
        for entry in store.checkpoints:
            loaded = await store.checkpoint_load(entry.checkpoint.id)
            assert loaded is not None
            assert (loaded.files, loaded.history) == taken[entry.checkpoint.id]
        # What the kept checkpoints use, and at most what the slack lets stay a while longer.
        used = set().union(*(addressed(checkpoint(*taken[entry.checkpoint.id])).blobs for entry in store.checkpoints))
        assert used <= set(store.blobs)
        assert len(store.blobs) <= len(used) * 3


def test_a_past_turn_is_encoded_and_hashed_once_and_its_text_made_only_for_a_store_that_lacks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    real_text = checkpoints._past_text

    def counted(turn: PastTurn) -> str:
        made.append(turn.prompt)
        return real_text(turn)

    monkeypatch.setattr(checkpoints, "_past_text", counted)
    old, new = PastTurn("first", "a long answer " * 1000), PastTurn("second", "Done.")
    first = addressed(checkpoint({"a.py": "a\n"}, (old,)))
    assert made == ["first"]  # its key
    held = {key: 1 for key in first.blobs}  # a store that saved the first checkpoint
    second = addressed(checkpoint({"a.py": "a\n"}, (old, new)))
    assert made == ["first", "second"]  # the old turn's key is kept, the new one's made
    plan = plan_save(second, number=2, keep=10, used={key: held[key] for key in second.blobs if key in held})
    assert set(plan.new) == {second.history[1]}
    assert plan.new[second.history[1]] == json.dumps({"output": "Done.", "prompt": "second"}, separators=(",", ":"))
    assert made == ["first", "second", "second"]  # the text of the one blob the store lacks
    # Every key is the hash of the text the store would hold, as before.
    assert second.history == [blob_key(second.blobs[key]) for key in second.history]
    assert len(second.blobs) == len(set(second.blobs)) == 4  # the file, its bucket, the two turns
