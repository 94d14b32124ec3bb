"""What a new turn is made of (``TurnMaker.make``): its request to the model (the files, the
newest past turns, the ledger of the last one, the steering of the chain it continues:
``prompting``) and the edit engine that applies its answer to the room's document; and what
the next turns carry of one that ended (``TurnMaker.ended``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from pycrdt import Doc

from spark_ide.editing import TurnEditor
from spark_ide.editing.limits import FileLimits

from .events import TurnStatus
from .policy import AiPolicy
from .prompting import PastTurn, PromptStyle, TurnInput, build_request
from .rounds import ToolRounds, offered_tools
from .turn_watch import TurnWatch
from .turns import Command, TurnRun, chain_of, new_turn_id

DEFAULT_FENCE_PATH = "main.py"  # where a small model's code fence goes when no file is open


class TurnMaker:
    """``document``: the room's document as it is now; ``texts``: its files' texts."""

    def __init__(
        self,
        *,
        document: Callable[[], Doc[Any]],
        texts: Callable[[], dict[str, str]],
        style: PromptStyle,
        limits: FileLimits,
    ) -> None:
        self._document = document
        self._texts = texts
        self._style = style
        self._limits = limits
        # Only the newest turns go into a request: older ones are not kept (a long session grew by them).
        self.history: deque[PastTurn] = deque(maxlen=style.history_turns)
        self._last_ledger = ""

    def make(
        self, command: Command, *, steered_from: TurnRun | None, policy: AiPolicy, watch: TurnWatch | None,
    ) -> TurnRun:
        """A turn for ``command`` (``steered_from``: the turn it steers, ``turns.chain_of``),
        under ``policy``; ``watch``: the watchdog over its code (None: none)."""
        texts = self._texts()
        chain = chain_of(command, steered_from, keep_request=not self._style.steer_as_request)
        turn_input = TurnInput(
            text=chain.origin.text, files=texts, active_path=chain.active_path,
            effort=policy.effort(chain.origin.effort), history=tuple(self.history), last_ledger=self._last_ledger,
            steering=chain.steering, explain_only=not policy.edits_apply,
        )
        turn_id = command.turn or new_turn_id()
        fence_path = (chain.active_path or DEFAULT_FENCE_PATH) if self._style.whole_file_only else None
        request = build_request(turn_input, self._style)
        editor = TurnEditor(
            self._document(), turn_id, fence_path=fence_path, limits=self._limits, explain_only=not policy.edits_apply,
        )
        tools = ToolRounds(editor, offered_tools(request.edit_style), self._style.max_rounds)
        return TurnRun(
            id=turn_id, command=command, origin=chain.origin, request=request, editor=editor, tools=tools,
            before=texts, steering=chain.steering, redirects=chain.redirects, steered_from=chain.steered_from,
            watch=watch, corrections=chain.corrections, touched=chain.touched,
        )

    def ended(self, run: TurnRun, status: TurnStatus) -> None:
        """``run`` ended with ``status``: the next requests carry it in their history and its
        ledger as the last one."""
        if status is not TurnStatus.STEERED:
            # A steered turn lives on in its successor's request (the steering note carries
            # its partial answer), so it is not history of its own.
            self.history.append(run.as_past())
        self._last_ledger = run.editor.ledger.as_prompt()
