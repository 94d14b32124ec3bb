"""A round's last line of text (a Codex model's "I'll fix it." before its ``apply_patch``
call, with or without a line break) is the turn's prose before that call's blocks, and the
next round's text does not run into it. Found from the browser (tests/browser/
test_patch_chips.py): the transcript showed the round's chips, then the round line, then
"Fixing." (glued to the next round's "Done." when it had no line break). The text reader
holds a round's last line (it may be the path line of a search/replace block before its
fence) and nothing releases it when the response ends with tool calls: it goes out with the
next round's first text, or at the end of the turn."""

from __future__ import annotations

import pytest

from spark_ide.live.events import EditStatus, TurnFinished, TurnProse, TurnRound
from spark_ide.upstream import Usage
from tests.live.test_pilot_rounds import FILES, FIX_SUB, TOOLS, patch_call
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import pilot_rig


@pytest.mark.parametrize("last_line", ["Fixing.", "Fixing.\n"])
async def test_a_rounds_last_line_is_prose_before_its_calls_blocks(last_line: str) -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        first.delta(last_line)  # the message ends here
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
