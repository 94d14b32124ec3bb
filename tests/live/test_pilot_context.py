"""Mentions and the context strip through the Pilot (issue 32): a ``context.preview`` is what
the request then carries (the same files, the same cut), a prompt's mentions go first, a
mention of a file deleted meanwhile is skipped with a note, an excluded file goes nowhere, a
steer and the queue keep them; and the messages that carry them are checked."""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.live.events import ContextPreview, ErrorCode, SymbolList, TurnContext, TurnQueued
from spark_ide.live.messages import MESSAGES, Invalid, Limits, validate
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.turns import CommandKind
from tests.support.pilot_rig import pilot_rig, prompt_of

FILES = {
    "app.py": "import util\n" * 30,
    "util.py": "def helper(x):\n    return x + 1\n\n\nclass Box:\n    pass\n",
    "big.md": "words " * 400,
    "notes.md": "n\n",
}
SMALL = PromptStyle(context_tokens=1200)  # the budget holds some of the files, not all


def paths_in(text: str) -> list[str]:
    return [line.split('"')[1] for line in text.splitlines() if line.startswith("<file path=")]


async def test_the_preview_is_what_the_request_then_carries() -> None:
    async with pilot_rig(FILES, style=SMALL) as rig:
        asked: dict[str, Any] = {
            "text": "tidy @util.py", "path": "app.py", "mentions": ("util.py", "gone.py"), "exclude": ("notes.md",),
        }
        rig.command(CommandKind.CONTEXT_PREVIEW, **asked)
        preview = rig.answers[-1]  # answered at once, to the asker only
        assert isinstance(preview, ContextPreview) and preview.text == "tidy @util.py"
        assert rig.published.of(TurnContext) == [] and not rig.pilot.busy
        context = preview.context
        assert context["whole"][:2] == ["util.py", "app.py"] and context["left_out"] == ["big.md"]
        assert context["missing"] == [{"mention": "gone.py", "why": "no such file"}]
        assert context["excluded"] == ["notes.md"] and context["budget"] == 1200 and context["tokens"] > 0

        turn = rig.prompt(**asked)
        await rig.model.next_stream()
        sent = prompt_of(rig.model.requests[-1])
        recorded = await rig.published.until(TurnContext, lambda event: event.turn == turn)
        assert recorded.context == context  # the strip showed exactly what went
        assert paths_in(sent) == ["util.py", "app.py"]  # mentions first; notes.md excluded; big.md cut by budget
        assert "Files not shown (context budget): big.md" in sent
        assert "Mentioned but skipped: @gone.py (no such file)" in sent


async def test_a_steer_and_the_queue_keep_the_mentions() -> None:
    async with pilot_rig(FILES) as rig:
        rig.prompt("first", mentions=("notes.md",))
        stream = await rig.model.next_stream()
        queued = rig.prompt("later", mentions=("util.py:helper",), exclude=("big.md",))
        await rig.published.until(TurnQueued)
        rig.steer("now", mentions=("util.py",))
        await rig.model.next_stream()
        steered = rig.published.of(TurnContext)[-1].context
        assert steered["mentions"] == ["notes.md", "util.py"]  # the chain's, then the steer's
        assert paths_in(prompt_of(rig.model.requests[-1]))[:2] == ["notes.md", "util.py"]
        rig.command(CommandKind.QUEUE_STEER, turn=queued)  # taken out of the queue: its mentions with it
        await rig.published.until(TurnContext, lambda event: event.turn == queued)
        context = rig.published.of(TurnContext)[-1].context
        assert context["mentions"] == ["notes.md", "util.py", "util.py:helper"]  # it steers the chain
        assert context["symbols"] == []  # util.py comes whole (mentioned before): its symbol is in it
        assert context["excluded"] == ["big.md"]
        del stream


async def test_a_queue_edit_brings_its_texts_mentions_and_keeps_the_exclusions() -> None:
    async with pilot_rig(FILES) as rig:
        rig.prompt("first")
        stream = await rig.model.next_stream()
        queued = rig.prompt("later @util.py", mentions=("util.py",), exclude=("big.md",))
        await rig.published.until(TurnQueued)
        rig.command(CommandKind.QUEUE_EDIT, turn=queued, text="later @notes.md", mentions=("notes.md",))
        rig.stop()
        stream.complete(None)
        started = await rig.published.until(TurnContext, lambda event: event.turn == queued)
        assert started.context["mentions"] == ["notes.md"] and started.context["excluded"] == ["big.md"]


async def test_symbols_are_listed_for_a_python_file() -> None:
    async with pilot_rig(FILES) as rig:
        rig.command(CommandKind.SYMBOLS, path="util.py")
        rig.command(CommandKind.SYMBOLS, path="nope.py")
        found, missing = rig.answers[-2:]
        assert isinstance(found, SymbolList) and isinstance(missing, SymbolList)
        listed = [(s["name"], s["kind"], s["first"]) for s in found.symbols]
        assert listed == [("helper", "function", 1), ("Box", "class", 5)]
        assert missing.exists is False and missing.symbols == ()


def checked(kind: str, **fields: Any) -> dict[str, Any]:
    return validate(MESSAGES[kind], {"type": kind, **fields}, Limits())


@pytest.mark.parametrize("kind", ["prompt", "steer", "context.preview"])
def test_mentions_and_exclude_are_checked(kind: str) -> None:
    base = {"text": "go"}
    values = checked(kind, **base, mentions=["a.py", "a.py:f", "a.py"], exclude=[])
    assert values["mentions"] == ("a.py", "a.py:f") and values["exclude"] == ()
    assert checked(kind, **base)["mentions"] == ()
    refusals: list[tuple[dict[str, Any], ErrorCode, str]] = [
        ({"mentions": "a.py"}, ErrorCode.BAD_FIELD, "'mentions' must be a list of paths or path:symbol (strings)"),
        ({"mentions": [1]}, ErrorCode.BAD_FIELD, "'mentions' must be a list of paths or path:symbol (strings)"),
        ({"exclude": [""]}, ErrorCode.BAD_FIELD, "'exclude' must be a list of paths (strings)"),
        ({"mentions": [f"f{n}.py" for n in range(21)]}, ErrorCode.TOO_LONG, "'mentions' holds more than 20 items"),
        ({"exclude": ["x" * 513]}, ErrorCode.TOO_LONG, "an item of 'exclude' is longer than 512 characters"),
    ]
    for fields, code, message in refusals:
        with pytest.raises(Invalid) as refused:
            checked(kind, **base, **fields)
        assert (refused.value.code, refused.value.message) == (code, message)
