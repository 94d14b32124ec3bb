"""Request bodies of the tool loop: tools per dialect, tool outputs chained or the whole
conversation with every round's calls and outputs, and the Chat Completions messages."""

from __future__ import annotations

import json

import pytest

from spark_ide.upstream import EditStyle, Message, ToolCall, ToolOutput, TurnRequest, UpstreamError, profile_for
from spark_ide.upstream.request import chat_completion, responses_create

CUSTOM = ToolCall(call_id="c1", name="apply_patch", kind="custom", input="*** Begin Patch\n...", item_id="ctc_1")
BUILTIN = ToolCall(call_id="c2", name="apply_patch", kind="apply_patch", input="@@\n-a\n+b\n",
                   operation="update_file", path="a.py")
DELETE = ToolCall(call_id="c3", name="apply_patch", kind="apply_patch", input="", operation="delete_file", path="b.py")
FUNCTION = ToolCall(call_id="c4", name="apply_patch", kind="function", input="P", arguments='{"input": "P"}')
OPENAI = profile_for("openai", "gpt-5.1-codex")


def first(style: EditStyle | None = EditStyle.APPLY_PATCH) -> TurnRequest:
    return TurnRequest(instructions="i", input=(Message("user", "go"),), edit_style=style)


def body(request: TurnRequest, *, chain: bool) -> dict[str, object]:
    return responses_create(request, model="m", profile=OPENAI, store=False, chain=chain)


@pytest.mark.parametrize("style", list(EditStyle))
def test_every_round_offers_the_dialects_tool_and_explain_only_none(style: EditStyle) -> None:
    tools = body(first(style), chain=False).get("tools")
    assert (tools is not None) is style.uses_tool
    assert "tools" not in body(first(None), chain=False)
    assert "tools" not in chat_completion(first(None), model="m", profile=OPENAI)


def test_a_round_chained_sends_only_its_outputs_on_the_previous_response() -> None:
    request = first().next_round(response_id="resp_1", answer="Patching.", calls=[CUSTOM, BUILTIN, DELETE, FUNCTION],
                                 outputs=[ToolOutput(BUILTIN, "applied 1 hunk"),
                                          ToolOutput(CUSTOM, "hunk 2 failed: not found", "failed"),
                                          ToolOutput(DELETE, "deleted b.py"), ToolOutput(FUNCTION, "applied")])
    sent = body(request, chain=True)
    assert sent["previous_response_id"] == "resp_1"
    assert sent["input"] == [
        {"type": "apply_patch_call_output", "call_id": "c2", "status": "completed", "output": "applied 1 hunk"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "hunk 2 failed: not found"},
        {"type": "apply_patch_call_output", "call_id": "c3", "status": "completed", "output": "deleted b.py"},
        {"type": "function_call_output", "call_id": "c4", "output": "applied"},
    ]


def test_without_the_chain_every_round_goes_in_full_calls_before_their_outputs() -> None:
    round2 = first().next_round(response_id="resp_1", answer="", calls=[CUSTOM], outputs=[ToolOutput(CUSTOM, "ok")])
    round3 = round2.next_round(response_id="resp_2", answer="Now the rest.", calls=[BUILTIN, DELETE, FUNCTION],
                               outputs=[ToolOutput(BUILTIN, "ok"), ToolOutput(DELETE, "gone"),
                                        ToolOutput(FUNCTION, "no", "failed")])
    sent = body(round3, chain=False)
    assert "previous_response_id" not in sent
    assert sent["input"] == [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch\n..."},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "assistant", "content": "Now the rest."},
        {"type": "apply_patch_call", "call_id": "c2", "status": "completed",
         "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-a\n+b\n"}},
        {"type": "apply_patch_call", "call_id": "c3", "status": "completed",
         "operation": {"type": "delete_file", "path": "b.py"}},
        {"type": "function_call", "call_id": "c4", "name": "apply_patch", "arguments": '{"input": "P"}'},
        {"type": "apply_patch_call_output", "call_id": "c2", "status": "completed", "output": "ok"},
        {"type": "apply_patch_call_output", "call_id": "c3", "status": "completed", "output": "gone"},
        {"type": "function_call_output", "call_id": "c4", "output": "no"},
    ]
    assert round3.input == (ToolOutput(BUILTIN, "ok"), ToolOutput(DELETE, "gone"), ToolOutput(FUNCTION, "no", "failed"))


def test_chat_completions_carries_the_rounds_as_assistant_tool_calls_and_tool_messages() -> None:
    round2 = first(EditStyle.FUNCTION).next_round(
        response_id=None, answer="Two patches.", calls=[FUNCTION, CUSTOM],
        outputs=[ToolOutput(FUNCTION, "applied"), ToolOutput(CUSTOM, "failed: x", "failed")])
    sent = chat_completion(round2, model="m", profile=profile_for("openai-compatible", "m"))
    assert sent["messages"] == [
        {"role": "system", "content": "i"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Two patches.", "tool_calls": [
            {"id": "c4", "type": "function", "function": {"name": "apply_patch", "arguments": '{"input": "P"}'}},
            # a call made through another dialect goes back as the function it is offered as here
            {"id": "c1", "type": "function", "function": {
                "name": "apply_patch", "arguments": json.dumps({"input": "*** Begin Patch\n..."})}},
        ]},
        {"role": "tool", "tool_call_id": "c4", "content": "applied"},
        {"role": "tool", "tool_call_id": "c1", "content": "failed: x"},
    ]
    assert json.loads(json.dumps(sent["tools"]))[0]["function"]["name"] == "apply_patch"


@pytest.mark.parametrize(
    ("calls", "outputs"),
    [([CUSTOM, BUILTIN], [ToolOutput(CUSTOM, "ok")]),  # a call left unanswered
     ([CUSTOM], [ToolOutput(CUSTOM, "ok"), ToolOutput(BUILTIN, "ok")]),  # an output for no call
     ([CUSTOM], [ToolOutput(CUSTOM, "ok"), ToolOutput(CUSTOM, "again")])],  # one call answered twice
)
def test_a_round_must_answer_every_call_once(calls: list[ToolCall], outputs: list[ToolOutput]) -> None:
    with pytest.raises(UpstreamError, match="every tool call needs one output"):
        first().next_round(response_id="r", answer="", calls=calls, outputs=outputs)


def test_a_tool_output_status_is_completed_or_failed() -> None:
    with pytest.raises(UpstreamError, match="status"):
        ToolOutput(CUSTOM, "x", "partial")  # type: ignore[arg-type]
