"""Checkpoint storage without a room (``live.checkpoints``): content addressing, and retention
that drops old blobs without reading the kept checkpoints. A long random run (files changing,
coming back to old texts, appearing and going) through the memory store, which follows the
same plan as the database's: every kept checkpoint always loads whole, and the blobs held
stay bounded."""

from __future__ import annotations

import random

from spark_ide.live.checkpoints import Checkpoint, CheckpointKind, addressed, new_checkpoint_id, plan_save
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
