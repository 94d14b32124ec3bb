"""A turn's figures count from its first round: its time to first token is the first
response's, and its rate spans every round. Found from the browser (tests/browser/
test_patch_chips.py, at 40 tokens/s): the footer said "TTFT 2523 ms · 3909 tok/s", the time to
round 2's first token and the tokens of all rounds over round 2's time alone. turn_metrics
(live.turns) reads ``run.stream``, which answer.py replaces by each new round's stream."""

from __future__ import annotations

import asyncio

from spark_ide.upstream import Usage
from tests.live.test_pilot_rounds import FILES, FIX_SUB, TOOLS, patch_call
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import pilot_rig

ROUND_ONE_S = 0.4  # round 1 streams this long before its call ends


async def test_a_turns_ttft_is_its_first_rounds() -> None:
    async with pilot_rig(FILES, style=TOOLS) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        first.delta("Fixing sub.\n")
        await asyncio.sleep(ROUND_ONE_S)
        play_tool_call(first, patch_call("call_1", FIX_SUB), [FIX_SUB])
        first.complete(Usage(input_tokens=50, output_tokens=20))
        second = await rig.model.next_stream()
        second.delta("Done.")
        second.complete(Usage(input_tokens=80, output_tokens=2))
        metrics = (await rig.finished(turn)).metrics
        ttft = metrics["ttft_ms"]
        assert isinstance(ttft, float) and ttft < ROUND_ONE_S * 1000 / 2, metrics
