"""A round's text that does not end with a line break (a Codex model's "I'll fix it." before
its ``apply_patch`` call) is the turn's prose before that call's blocks, and the next round's
text starts on a line of its own. Found from the browser (tests/browser/test_patch_chips.py):
the transcript showed the chips, then the round line, then "Fixing.Done." run together.
The text reader holds a trailing word without a line break (it may be the path line of a
search/replace block) and nothing releases it when a response ends with tool calls."""

from __future__ import annotations

import pytest

from spark_ide.live.events import EditStatus, TurnFinished, TurnProse, TurnRound
from spark_ide.upstream import Usage
from tests.live.test_pilot_rounds import FIX_SUB, TOOLS, FILES, patch_call
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import pilot_rig


@pytest.mark.xfail(strict=True, reason="a round's last line without a line break is held until the turn ends")
async def test_a_rounds_last_line_is_prose_before_its_calls_blocks() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        first.delta("Fixing.")  # one word, no line break: the message ends here
        play_tool_call(first, patch_call("call_1", FIX_SUB), [FIX_SUB])
        first.complete(Usage(input_tokens=50, output_tokens=20))
        second = await rig.model.next_stream()
        second.delta("Done.")
        second.complete(Usage(input_tokens=80, output_tokens=2))
        await rig.finished(turn)
        events = rig.published.items
        prose = [event for event in events if isinstance(event, TurnProse) and event.turn == turn]
        first_block = next(event for event in events if isinstance(event, EditStatus) and event.turn == turn)
        [round_two] = rig.published.of(TurnRound, turn)
        assert "".join(event.text for event in prose).replace("\n", "") == "Fixing.Done."
        said = next(event for event in prose if "Fixing." in event.text)
        assert rig.published.index(said) < rig.published.index(first_block)  # its words, then its edit
        done = next(event for event in prose if "Done." in event.text)
        assert "Done." not in said.text  # round 2's words are not glued to round 1's
        assert rig.published.index(round_two) < rig.published.index(done)
        assert rig.published.of(TurnFinished, turn)
