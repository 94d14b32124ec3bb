"""A steer, in the order DESIGN.md §2 fixes, without Django: the old turn stops being
forwarded, its block in flight is rolled back, its end is announced (``steered``), and only
then does the re-prompt, carrying the steer, start; nothing of the old answer is published
after its ``turn.finished``, and the old generation is stopped upstream."""

from __future__ import annotations

from spark_ide.live.events import EditStatus, TurnContext, TurnDelta, TurnSteered
from spark_ide.live.prompting import PromptStyle
from spark_ide.upstream import UpstreamError
from tests.support.pilot_rig import pilot_rig, prompt_of
from tests.support.waits import eventually

FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}
HALF_BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n'
THREE = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 3\n</new_text>\n</edit>\n'


async def test_a_steer_mid_stream_ends_the_old_turn_before_the_re_prompt_which_carries_the_steer() -> None:
    async with pilot_rig(FILES) as rig:
        old = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        stream.delta("Changing X.\n")
        stream.delta(HALF_BLOCK)
        await eventually(lambda: "streaming" in rig.states(old))

        rig.steer("make it 3", author="cole", user_id=8)
        stream.delta("stale: sent as the steer came\n")
        new = await rig.started(lambda event: event.steered_from == old)
        stream.delta("stale: sent after the steer\n")
        successor = await rig.model.next_stream()

        finished = await rig.finished(old)
        assert (finished.status, finished.reason, finished.by) == ("steered", "steered", "cole")
        rolled_back = [e for e in rig.published.of(EditStatus, old) if e.state == "rolled_back"]
        assert len(rolled_back) == 1
        # (a)+(b) its block in flight rolled back, then its end announced, then (c) the new turn.
        assert rig.published.index(rolled_back[0]) < rig.published.index(finished) < rig.published.index(new)
        after_end = rig.published.items[rig.published.index(finished):]
        assert not [e for e in after_end if isinstance(e, TurnDelta | EditStatus) and e.turn == old]
        assert "stale" not in rig.answer(old)
        assert rig.texts() == FILES  # the half block went with the old turn
        assert rig.model.stopped == [stream]  # (d) the old generation is stopped upstream

        request = prompt_of(successor.request)
        assert "Request: change X" in request and "The user redirects you: make it 3" in request
        assert "Changing X." in request  # the partial answer it interrupted
        assert (new.author, new.prompt) == ("cole", "make it 3")
        steered = await rig.published.until(TurnSteered, lambda event: event.turn == new.turn)
        assert steered.steered_from == old and steered.steer_ms >= 0

        successor.delta(THREE)
        successor.complete(None)
        done = await rig.finished(new.turn)
        assert (done.status, done.reason) == ("completed", "answered")
        assert rig.texts()["util.py"] == "X = 3\n"
        await rig.recorded(new.turn)
        assert rig.store.turns[new.turn].record.steered_from == old
        assert rig.store.outcome(old).status == "steered"


async def test_a_chain_of_steers_keeps_the_first_request_and_every_redirection() -> None:
    async with pilot_rig(FILES) as rig:
        first = rig.prompt("change X")
        stream = await rig.model.next_stream()
        stream.delta("Looking.\n")
        await rig.delta_seen(first, "Looking.")
        rig.steer("use 3")
        second = await rig.started(lambda event: event.steered_from == first)
        stream = await rig.model.next_stream()
        stream.delta("Using 3.\n")
        await rig.delta_seen(second.turn, "Using 3.")
        rig.steer("no, 4")
        third = await rig.started(lambda event: event.steered_from == second.turn)
        text = prompt_of((await rig.model.next_stream()).request)
        assert "Request: change X" in text
        assert text.index("use 3") < text.index("no, 4")
        assert (await rig.finished(second.turn)).status == "steered"
        assert rig.pilot.running_turn == third.turn


async def test_a_small_model_is_re_prompted_with_the_steer_as_its_request() -> None:
    async with pilot_rig(FILES, style=PromptStyle.small_model(context_tokens=4096, max_output_tokens=256)) as rig:
        old = rig.prompt("write a function that checks if a number is prime")
        stream = await rig.model.next_stream()
        stream.delta("Sure, here is")
        await rig.delta_seen(old, "Sure")
        rig.steer("instead write a function that reverses a string")
        await rig.started(lambda event: event.steered_from == old)
        text = prompt_of((await rig.model.next_stream()).request)
        assert "Request: instead write a function that reverses a string" in text
        assert "prime" not in text and "redirects you" not in text


async def test_a_steer_with_nothing_running_starts_a_turn() -> None:
    async with pilot_rig(FILES) as rig:
        rig.steer("add a docstring")
        started = await rig.started()
        assert started.steered_from is None and started.prompt == "add a docstring"
        assert "Request: add a docstring" in prompt_of((await rig.model.next_stream()).request)


async def test_a_steer_the_model_cannot_take_fails_the_new_turn_and_stops_the_old_answer() -> None:
    async with pilot_rig(FILES) as rig:
        old = rig.prompt("change X")
        stream = await rig.model.next_stream()
        stream.delta(HALF_BLOCK)
        await eventually(lambda: "streaming" in rig.states(old))
        rig.model.refuse.append(UpstreamError("provider_unavailable", "gone"))
        rig.steer("make it 3")
        new = await rig.started(lambda event: event.steered_from == old)
        assert (await rig.finished(old)).reason == "steered"
        end = await rig.finished(new.turn)
        assert (end.status, end.reason) == ("failed", "model_unavailable") and "gone" in end.error
        assert rig.model.stopped == [stream]
        assert rig.texts() == FILES


async def test_a_re_prompt_that_goes_out_at_once_precedes_the_announcements_which_keep_their_order() -> None:
    """On a warm socket the re-prompt is written before the old turn's ``turn.finished`` and the
    new turn's ``turn.started`` are published: the same events in the same order, and the old
    turn is still stopped and rolled back first."""
    async with pilot_rig(FILES) as rig:
        rig.model.at_once = True
        published_at_steer: list[int] = []
        running_at_steer: list[object] = []

        def at_steer() -> None:
            published_at_steer.append(len(rig.published.items))
            running_at_steer.append(rig.pilot.running)  # the new turn is made after its request is written

        rig.model.on_steer = at_steer
        old = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        stream.delta("Changing X.\n")
        stream.delta(HALF_BLOCK)
        await eventually(lambda: "streaming" in rig.states(old))

        rig.steer("make it 3", author="cole", user_id=8)
        stream.delta("stale: sent as the steer came\n")
        new = await rig.started(lambda event: event.steered_from == old)
        successor = await rig.model.next_stream()

        finished = await rig.finished(old)
        assert (finished.status, finished.reason, finished.by) == ("steered", "steered", "cole")
        rolled_back = [e for e in rig.published.of(EditStatus, old) if e.state == "rolled_back"]
        assert len(rolled_back) == 1
        assert rig.published.index(rolled_back[0]) < published_at_steer[0] <= rig.published.index(finished)
        assert rig.published.index(finished) < rig.published.index(new)
        after_end = rig.published.items[rig.published.index(finished):]
        assert not [e for e in after_end if isinstance(e, TurnDelta | EditStatus) and e.turn == old]
        assert rig.model.stopped == [stream]
        request = prompt_of(successor.request)
        assert "The user redirects you: make it 3" in request and "Changing X." in request
        assert "X = 2" not in rig.texts()["util.py"]  # the request was made after the rollback
        steered = await rig.published.until(TurnSteered, lambda event: event.turn == new.turn)
        assert rig.published.index(new) < rig.published.index(steered)
        assert running_at_steer == [None]  # the old turn handed over, the new one made after the write
        running = rig.pilot.running
        assert running is not None and running[0].id == new.turn and running[0].stream is successor
        context = await rig.published.until(TurnContext, lambda event: event.turn == new.turn)
        assert rig.published.index(new) < rig.published.index(context)
        assert context.context["tokens"] > 0  # what the request carries, made after it was written

        successor.delta(THREE)
        successor.complete(None)
        done = await rig.finished(new.turn)
        assert (done.status, done.reason) == ("completed", "answered")
        await rig.recorded(new.turn)
        assert rig.store.outcome(old).status == "steered"


async def test_a_re_prompt_that_may_wait_is_sent_for_a_turn_already_made_and_announced() -> None:
    """A steer whose re-prompt may wait on the network (``steers_at_once`` False) makes and
    announces its new turn first: while the request goes, the room has the new turn running."""
    async with pilot_rig(FILES) as rig:
        running_at_steer: list[tuple[str, bool]] = []

        def at_steer() -> None:
            running = rig.pilot.running
            assert running is not None
            running_at_steer.append((running[0].id, running[0].stream is None))

        rig.model.on_steer = at_steer
        old = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        stream.delta("Changing X.\n")
        await eventually(lambda: "Changing X." in rig.answer(old))
        rig.steer("make it 3")
        new = await rig.started(lambda event: event.steered_from == old)
        successor = await rig.model.next_stream()
        assert running_at_steer == [(new.turn, True)]  # made and announced before its request was written
        assert rig.published.index(await rig.finished(old)) < rig.published.index(new)
        successor.complete(None)
        assert (await rig.finished(new.turn)).status == "completed"


async def test_a_steer_reads_the_files_once_for_the_old_turns_hand_over_and_the_re_prompt() -> None:
    """The old turn changed a file: what the model wrote is what it saw (``seen.absorb``) and the
    re-prompt shows the files, both from one read of the document as the rollback left it."""
    async with pilot_rig(FILES) as rig:
        reads: list[int] = []
        read = rig.pilot._maker._texts

        def counted() -> dict[str, str]:
            reads.append(1)
            return read()

        rig.pilot._texts = rig.pilot._maker._texts = counted
        reads_at_steer: list[int] = []
        rig.model.on_steer = lambda: reads_at_steer.append(len(reads))
        old = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        stream.delta(THREE)  # a whole block: applied, the file touched
        stream.delta('<edit path="util.py">\n<old_text>\nX = 3\n</old_text>\n<new_text>\nX = 2\n')  # then one in flight
        await eventually(lambda: "streaming" in rig.states(old))
        reads.clear()
        rig.steer("make it 4")
        successor = await rig.model.next_stream()
        assert reads_at_steer == [1]
        request = prompt_of(successor.request)
        assert '<file path="util.py">\nX = 3\n</file>' in request  # the block applied kept, the one in flight gone
        assert "The user redirects you: make it 4" in request
        assert rig.texts()["util.py"] == "X = 3\n"
