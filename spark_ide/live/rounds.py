"""A turn's tool calls, round by round (the tool loop, docs/protocol.md §4 "Rounds").

A model that edits through the ``apply_patch`` tool ends a response with its calls; the IDE
applies each call while its input streams (``editing.PatchCall``: hunks land in place) and
answers all of them in the next request of the same turn, on the same warm connection
(``TurnRequest.next_round``). The turn ends with a response without calls, at the round limit
(``SPARK_MAX_ROUNDS``), or by whatever ends a turn today (stop, steer, revert, quota, the
watchdog).

``ToolRounds`` keeps the calls of the round in progress and turns them into outputs. A call
to a tool the IDE does not offer (a hallucinated name) is answered ``failed`` saying so; a
call cut off by the turn's end is answered ``failed: interrupted by the user`` (the editor's
``cancel`` closes it), so no call is ever left unanswered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from spark_ide.editing import EditEvent, PatchCall, PatchOperation, TurnEditor
from spark_ide.upstream import ToolCall, ToolCallDone, ToolCallStarted, ToolOutput
from spark_ide.upstream.dialects import APPLY_PATCH, EditStyle


@dataclass(slots=True)
class ToolRounds:
    """The tool calls of one turn. ``offered``: the tool names its requests offer (none for a
    text dialect or an explain-only turn, whose patches are then refused as unknown tools)."""

    editor: TurnEditor
    offered: frozenset[str]
    max_rounds: int
    round: int = 1
    _patches: dict[str, PatchCall] = field(default_factory=dict)  # this round's, by call id
    _unknown: dict[str, str] = field(default_factory=dict)  # call id -> the name asked for

    @property
    def last_round(self) -> bool:
        return self.round >= self.max_rounds

    def started(self, event: ToolCallStarted) -> list[EditEvent]:
        """A call begins: the model's text before it is whole (what the text reader held is
        prose now, before the call's blocks); an ``apply_patch`` call starts applying; any
        other name is noted."""
        said = self.editor.end_text()
        if event.name not in self.offered:
            self._unknown[event.call_id] = event.name
            return said
        operation = None
        if event.operation is not None:
            operation = PatchOperation(event.operation, event.path or "")
        self._patches[event.call_id] = self.editor.open_patch(event.call_id, operation)
        return said

    def delta(self, call_id: str, text: str) -> list[EditEvent]:
        """More of a call's input: applied at once (hunks stream into the file)."""
        patch = self._patches.get(call_id)
        if patch is None or patch.ended:
            return []
        return patch.feed(text)

    def done(self, event: ToolCallDone) -> list[EditEvent]:
        """A call's input is whole: its last hunk and operation close."""
        patch = self._patches.get(event.call_id)
        if patch is None or patch.ended:
            return []
        return patch.finish()

    def finish_open(self) -> list[EditEvent]:
        """The response ended: a call whose last event never came ends with what came of it."""
        return [event for patch in self._patches.values() if not patch.ended for event in patch.finish()]

    def outputs(self, calls: Sequence[ToolCall]) -> list[ToolOutput]:
        """One output per call the response ended with, in its order (after ``finish_open``);
        the round is over."""
        outputs = [self._output(call) for call in calls]
        self._patches.clear()
        self._unknown.clear()
        return outputs

    def next_round(self) -> None:
        self.round += 1

    def _output(self, call: ToolCall) -> ToolOutput:
        patch = self._patches.get(call.call_id)
        if patch is None:
            name = self._unknown.get(call.call_id, call.name)
            offered = ", ".join(sorted(self.offered)) or "none (editing is off)"
            return ToolOutput(call, f"Failed: there is no tool named {name!r} here. Tools offered: {offered}.",
                              "failed")
        result = patch.result
        return ToolOutput(call, result.output, result.status.value)


def offered_tools(edit_style: EditStyle | None) -> frozenset[str]:
    """The tool names a request with ``edit_style`` offers (``TurnRequest.edit_style``)."""
    return frozenset({APPLY_PATCH}) if edit_style is not None and edit_style.uses_tool else frozenset()
