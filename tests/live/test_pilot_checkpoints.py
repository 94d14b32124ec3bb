"""Checkpoints at the Pilot, without Django (``live.checkpoints``): one before every turn,
restoring code, conversation or both, undoing a restore, a restart in between, retention, and
the refusals that change nothing. The storage is the memory store, which keeps checkpoints
content-addressed as the database does."""

from __future__ import annotations

from functools import partial

from spark_ide.editing.document import set_file_text
from spark_ide.live.checkpoints import CheckpointKind
from spark_ide.live.events import CheckpointCreated, CheckpointRestored, ErrorCode
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.seen import HEADING
from spark_ide.live.turns import CommandKind
from spark_ide.upstream import Message, TurnRequest
from tests.support.memory_store import MemoryRoomStore
from tests.support.pilot_rig import PilotRig, pilot_rig
from tests.support.waits import eventually

FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}


def block(old: str, new: str) -> str:
    return f'<edit path="util.py">\n<old_text>\n{old}\n</old_text>\n<new_text>\n{new}\n</new_text>\n</edit>\n'


def said(request: TurnRequest) -> str:
    """Everything a request tells the model: the past turns, then this one."""
    return "\n".join(item.text for item in (*request.full_context, *request.input) if isinstance(item, Message))


async def three_turns(rig: PilotRig) -> list[str]:
    """Turns one, two, three: each sets X one higher (X = 2, 3, 4) and answers in words."""
    turns = []
    for number, word in ((1, "one"), (2, "two"), (3, "three")):
        turn = rig.prompt(f"turn {word}: raise X")
        stream = await rig.model.next_stream()
        stream.delta(f"Answer {word}.\n" + block(f"X = {number}", f"X = {number + 1}"))
        stream.complete(None)
        await rig.finished(turn)
        turns.append(turn)
    await eventually(lambda: len(rig.store.checkpoints) == 3, 5.0)
    return turns


def checkpoint_before(rig: PilotRig, turn: str) -> str:
    return next(entry.checkpoint.id for entry in rig.store.checkpoints if entry.checkpoint.turn == turn)


def answered(rig: PilotRig, count: int) -> bool:
    return len(rig.replies) >= count


async def next_request(rig: PilotRig, text: str = "turn four") -> str:
    turn = rig.prompt(text)
    stream = await rig.model.next_stream()
    stream.complete(None)
    await rig.finished(turn)
    return said(rig.model.requests[-1])


async def test_every_turn_records_its_files_and_conversation_and_unchanged_files_cost_nothing() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        stored = rig.store.checkpoints
        assert [entry.checkpoint.turn for entry in stored] == turns
        assert [entry.checkpoint.kind for entry in stored] == [CheckpointKind.TURN] * 3
        assert stored[1].checkpoint.prompt == "turn two: raise X" and stored[1].checkpoint.author == "ada"
        assert [len(entry.history) for entry in stored] == [0, 1, 2]  # the turns before each
        # app.py never changed: one blob for it; util.py had three texts; three buckets (the
        # two paths share one); two past turns.
        assert len({entry.file_keys(rig.store.blobs)["app.py"] for entry in stored}) == 1
        assert len(rig.store.blobs) == 1 + 3 + 3 + 2
        whole = await rig.store.checkpoint_load(stored[1].checkpoint.id)
        assert whole is not None
        assert whole.files == {**FILES, "util.py": "X = 2\n"}
        assert [(past.prompt, past.output) for past in whole.history] == [
            ("turn one: raise X", "Answer one.\n" + block("X = 1", "X = 2")),
        ]


async def test_a_steer_records_no_checkpoint_of_its_own() -> None:
    async with pilot_rig(FILES) as rig:
        rig.prompt("first")
        stream = await rig.model.next_stream()
        stream.delta("Working")
        rig.steer("no, do this")
        steered = await rig.model.next_stream()
        steered.complete(None)
        await rig.ended(2)
        await eventually(lambda: len(rig.store.turns) == 2, 5.0)
        assert len(rig.store.checkpoints) == 1


async def test_restoring_code_puts_every_file_back_and_the_restore_is_undone_by_its_own_checkpoint() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        # A file made since the checkpoint goes; a file deleted since comes back.
        set_file_text(rig.doc, "new.py", "print('new')\n", "test")
        set_file_text(rig.doc, "app.py", None, "test")
        after = rig.texts()
        target = checkpoint_before(rig, turns[1])
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=target, code=True)
        restored = await rig.published.until(CheckpointRestored)
        assert (restored.checkpoint, restored.code, restored.conversation, restored.by) == (target, True, False, "ada")
        assert restored.turn == turns[1]  # kept in the log under the turn its checkpoint came before
        assert rig.texts() == {**FILES, "util.py": "X = 2\n"}
        undo = rig.store.checkpoints[-1].checkpoint
        assert (undo.id, undo.kind, undo.author) == (restored.undo, CheckpointKind.RESTORE, "ada")
        # The conversation was not restored: the next request still carries turn three.
        assert "turn three" in await next_request(rig)

        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=undo.id, code=True)
        await rig.published.until(CheckpointRestored, lambda event: event.checkpoint == undo.id)
        assert rig.texts() == after


async def test_after_a_code_restore_a_turn_reverts_as_text_and_is_refused_where_its_lines_changed() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=checkpoint_before(rig, turns[1]), code=True)
        await rig.published.until(CheckpointRestored)
        rig.revert(turns[2])  # its line is "X = 2" now, not the "X = 4" it wrote
        await eventually(partial(answered, rig, 1), 5.0)
        assert rig.replies[-1].code is ErrorCode.REVERT_UNAVAILABLE
        assert rig.texts() == {**FILES, "util.py": "X = 2\n"}


async def test_restoring_the_conversation_cuts_the_later_turns_from_the_next_request_and_keeps_the_files() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        assert "turn two: raise X" in said(rig.model.requests[-1])
        files = rig.texts()
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=checkpoint_before(rig, turns[1]), conversation=True)
        await rig.published.until(CheckpointRestored)
        assert rig.texts() == files
        request = await next_request(rig)
        assert "turn one: raise X" in request and "Answer one." in request
        assert "turn two" not in request and "turn three" not in request and "Answer two" not in request
        assert "Request: turn four" in request


async def test_the_next_request_tells_a_code_restore_as_a_change_and_forgets_what_a_restored_chat_never_saw() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        target = checkpoint_before(rig, turns[1])
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=target, code=True)
        await rig.published.until(CheckpointRestored)
        told = await next_request(rig)
        assert HEADING in told and "Since you last saw util.py" in told and "-X = 4\n+X = 2\n" in told
        # The conversation goes back to before turn two: what the model saw since is forgotten.
        set_file_text(rig.doc, "app.py", "changed by a person\n", "ada-page")
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=target, conversation=True)
        await rig.published.until(CheckpointRestored, lambda event: event.conversation)
        assert HEADING not in await next_request(rig, "turn five")


async def test_restoring_both_after_a_restart_gives_back_the_files_and_the_conversation_of_then() -> None:
    store = MemoryRoomStore(files=dict(FILES))
    async with pilot_rig(FILES, store=store) as rig:
        turns = await three_turns(rig)
        target = checkpoint_before(rig, turns[2])
    async with pilot_rig(FILES, store=store) as rig:  # the server restarted: the Pilot holds no history
        assert "turn one" not in await next_request(rig, "after the restart")
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=target, code=True, conversation=True)
        await rig.published.until(CheckpointRestored)
        assert rig.texts() == {**FILES, "util.py": "X = 3\n"}
        request = await next_request(rig)
        assert "turn one: raise X" in request and "turn two: raise X" in request
        assert "turn three" not in request and "after the restart" not in request


async def test_a_named_checkpoint_is_taken_on_request_and_announced() -> None:
    async with pilot_rig(FILES) as rig:
        rig.command(CommandKind.CHECKPOINT_CREATE, text="before refactor")
        created = await rig.announced.until(CheckpointCreated)
        entry = rig.store.checkpoints[-1].checkpoint
        assert (created.checkpoint, created.name, created.by) == (entry.id, "before refactor", "ada")
        assert (entry.kind, entry.name, entry.turn) == (CheckpointKind.NAMED, "before refactor", "")


async def test_refusals_change_nothing() -> None:
    other = MemoryRoomStore(files={"x.py": "x\n"})
    async with pilot_rig({"x.py": "x\n"}, store=other) as elsewhere:
        elsewhere.command(CommandKind.CHECKPOINT_CREATE, text="theirs")
        foreign = (await elsewhere.announced.until(CheckpointCreated)).checkpoint
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        files, saved = rig.texts(), len(rig.store.checkpoints)
        for count, wanted in enumerate(("cp-nobody-has", foreign), start=1):
            rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=wanted, code=True, conversation=True)
            await eventually(partial(answered, rig, count), 5.0)
            assert rig.replies[-1].code is ErrorCode.NO_SUCH_CHECKPOINT and rig.replies[-1].ref == wanted
            assert wanted[:20] in rig.replies[-1].message
        # While a turn runs: refused (stop it first).
        running = rig.prompt("turn four")
        stream = await rig.model.next_stream()
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=checkpoint_before(rig, turns[0]), code=True)
        await eventually(lambda: len(rig.replies) == 3, 5.0)
        assert rig.replies[-1].code is ErrorCode.CHECKPOINT_BUSY
        stream.complete(None)
        await rig.finished(running)
        assert rig.texts() == files and not rig.published.of(CheckpointRestored)
        assert len(rig.store.checkpoints) == saved + 1  # turn four's own, no checkpoint of a restore
        assert "turn three" in said(rig.model.requests[-1])


async def test_a_checkpoint_that_cannot_be_stored_refuses_the_restore() -> None:
    async with pilot_rig(FILES) as rig:
        turns = await three_turns(rig)
        files = rig.texts()
        rig.store.fail("checkpoint_save")
        rig.command(CommandKind.CHECKPOINT_RESTORE, checkpoint=checkpoint_before(rig, turns[0]), code=True)
        await eventually(lambda: bool(rig.replies), 5.0)
        assert rig.replies[-1].code is ErrorCode.STORAGE_FAILED and "nothing changed" in rig.replies[-1].message
        assert rig.texts() == files and not rig.published.of(CheckpointRestored)


async def test_only_the_newest_checkpoints_are_kept_with_the_blobs_they_use() -> None:
    async with pilot_rig(FILES) as rig:
        rig.pilot.checkpoints.keep = 2
        turns = []
        for number in (1, 2, 3, 4):
            turn = rig.prompt(f"raise X to {number + 1}")
            stream = await rig.model.next_stream()
            stream.delta(block(f"X = {number}", f"X = {number + 1}"))
            stream.complete(None)
            await rig.finished(turn)
            turns.append(turn)
        await eventually(lambda: rig.store.checkpoints[-1].checkpoint.turn == turns[3], 5.0)
        assert [entry.checkpoint.turn for entry in rig.store.checkpoints] == turns[2:]
        # "X = 1" went with the first checkpoint (those only the second used may stay a
        # checkpoint longer: blobs are marked lazily); the kept ones load whole.
        assert "X = 1\n" not in rig.store.blobs.values()
        for entry, text in zip(rig.store.checkpoints, ("X = 3\n", "X = 4\n"), strict=True):
            whole = await rig.store.checkpoint_load(entry.checkpoint.id)
            assert whole is not None and whole.files == {**FILES, "util.py": text}


async def test_a_small_model_without_history_restores_the_code_alone() -> None:
    style = PromptStyle.small_model(context_tokens=8000, max_output_tokens=None)
    async with pilot_rig(FILES, style=style) as rig:
        turn = rig.prompt("anything")
        stream = await rig.model.next_stream()
        stream.complete(None)
        await rig.finished(turn)
        await eventually(lambda: len(rig.store.checkpoints) == 1, 5.0)
        rig.command(
            CommandKind.CHECKPOINT_RESTORE, checkpoint=rig.store.checkpoints[0].checkpoint.id, code=True,
            conversation=True,
        )
        await rig.published.until(CheckpointRestored)
        assert rig.texts() == FILES
