"""What a new turn is made of (``TurnMaker.make``): its request to the model (the files, the
newest past turns, the ledger of the last one, what others changed since the model saw the
files, the steering of the chain it continues: ``prompting``, ``seen``) and the edit engine
that applies its answer to the room's document; and what the next turns carry of one that
ended (``TurnMaker.ended``)."""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycrdt import Doc

from spark_ide.editing import TurnEditor
from spark_ide.editing.limits import FileLimits
from spark_ide.upstream import Message, TurnRequest

from .checkpoints import Conversation
from .context import Packing, context_payload, symbols_of
from .events import ContextPreview, SymbolList, TurnStatus
from .focus import AskedRange, Focus, settle
from .model_runs import ModelRuns, RunFor, TurnRuns
from .policy import AiPolicy
from .prompting import PastTurn, PromptStyle, TurnInput, build_request, request_showing
from .rounds import ToolRounds, offered_tools
from .run_report import RUN_OUTPUT_TO_MODEL
from .seen import SeenFiles
from .test_rounds import Point, TestRounds
from .turn_watch import TurnWatch
from .turns import Chain, Command, TurnRun, chain_of, new_turn_id
from .usage import request_tokens

DEFAULT_FENCE_PATH = "main.py"  # where a small model's code fence goes when no file is open


@dataclass(frozen=True, slots=True)
class Draft:
    """A turn's request and what it was made from (``TurnMaker.draft``), before the turn itself."""

    command: Command
    turn_id: str
    chain: Chain
    policy: AiPolicy
    texts: dict[str, str]  # the files the request shows (the turn's ``before``)
    runs: TurnRuns | None
    focus: Focus | None
    focus_note: str
    active_path: str
    request: TurnRequest
    packing: Packing


class TurnMaker:
    """``document``: the room's document as it is now; ``texts``: its files' texts; ``runs``:
    the room's runs for the model (None: code does not run here); ``run_budget``: bytes of a
    run's output the model is told (``SPARK_RUN_OUTPUT_TO_MODEL``)."""

    def __init__(
        self,
        *,
        document: Callable[[], Doc[Any]],
        texts: Callable[[], dict[str, str]],
        style: PromptStyle,
        limits: FileLimits,
        runs: ModelRuns | None = None,
        run_budget: int = RUN_OUTPUT_TO_MODEL,
    ) -> None:
        self._document = document
        self._texts = texts
        self._style = style
        self._limits = limits
        self._runs = runs
        self._run_budget = run_budget
        # Only the newest turns go into a request: older ones are not kept (a long session grew by them).
        self.history: deque[PastTurn] = deque(maxlen=style.history_turns)
        self._last: TurnEditor | None = None  # the last turn's engine: its ledger goes into the next request
        self._last_ledger = ""  # the last ledger when there is no such engine (a checkpoint's conversation)
        self._notes: list[str] = []  # blocks of earlier turns people undid since the last request
        # What the model last saw of each file (None: it is not told what others changed).
        self.seen = SeenFiles() if style.tell_changes else None

    def make(
        self, command: Command, *, steered_from: TurnRun | None, policy: AiPolicy, watch: TurnWatch | None,
        auto_test: bool = False,
    ) -> TurnRun:
        """A turn for ``command`` (``steered_from``: the turn it steers, ``turns.chain_of``),
        under ``policy``; ``watch``: the watchdog over its code (None: none); ``auto_test``:
        the IDE runs the tests after the model's changes (``test_rounds``)."""
        draft = self.draft(command, steered_from=steered_from, policy=policy)
        return self.turn(draft, watch=watch, auto_test=auto_test)

    def draft(
        self, command: Command, *, steered_from: TurnRun | None, policy: AiPolicy, texts: dict[str, str] | None = None,
    ) -> Draft:
        """The request of a turn for ``command``, made first: a steer writes it to the model
        before the rest of its turn is made (``turn``), which must follow before the next draft.
        ``texts``: the files as they are now, when the caller read them."""
        texts = self._texts() if texts is None else texts
        chain = chain_of(command, steered_from, keep_request=not self._style.steer_as_request)
        turn_id = command.turn or new_turn_id()
        runs = self._turn_runs(turn_id, chain, policy)
        focus, focus_note = _focus(command, chain, steered_from, texts)
        turn_input = self._input(chain, policy, texts, runs=runs is not None, focus=focus)
        if self.seen is not None:
            turn_input.changes = self.seen.note(texts, {})
        request, packing = request_showing(turn_input, self._style)
        self._notes = []  # told
        return Draft(
            command=command, turn_id=turn_id, chain=chain, policy=policy, texts=texts, runs=runs, focus=focus,
            focus_note=focus_note, active_path=turn_input.active_path, request=request, packing=packing,
        )

    def turn(self, draft: Draft, *, watch: TurnWatch | None, auto_test: bool = False) -> TurnRun:
        """The turn of ``draft``: its edit engine over the room's document, its tool rounds and
        what its request carries of the workspace; ``watch`` and ``auto_test`` as ``make``'s."""
        texts, chain, policy, runs, request = draft.texts, draft.chain, draft.policy, draft.runs, draft.request
        seen = self.seen
        if seen is not None:
            seen.showed(texts, draft.packing.whole)
        fence_path = (draft.active_path or DEFAULT_FENCE_PATH) if self._style.whole_file_only else None
        editor = TurnEditor(
            self._document(), draft.turn_id, fence_path=fence_path, limits=self._limits,
            explain_only=not policy.edits_apply, seen=seen.text if seen is not None else None,
        )
        tests = TestRounds(runs, self._run_budget, Point(0, texts)) if runs is not None and auto_test else None
        tools = ToolRounds(
            editor, offered_tools(request.edit_style, runs=request.runs), self._style.max_rounds,
            runs=runs, tests=tests,
        )
        return TurnRun(
            id=draft.turn_id, command=draft.command, origin=chain.origin, request=request, editor=editor, tools=tools,
            before=texts, steering=chain.steering, redirects=chain.redirects, steered_from=chain.steered_from,
            watch=watch, corrections=chain.corrections, touched=chain.touched,
            rebuild=self._rebuilder(chain, policy, draft.focus) if self._style.steer_as_request else None,
            auto_test=auto_test, changes=lambda: self._changes(editor), focus=draft.focus, focus_note=draft.focus_note,
            context=self._context(chain, request, draft.packing), mentions=chain.mentions, exclude=chain.exclude,
        )

    def _context(self, chain: Chain, request: TurnRequest, packing: Packing) -> dict[str, object]:
        """What a request carries of the workspace (the ``context`` of ``turn.context`` and of a
        preview)."""
        return context_payload(
            packing, active=chain.active_path, mentions=chain.mentions, tokens=request_tokens(request),
            budget=self._style.context_tokens,
        )

    def preview(self, command: Command, policy: AiPolicy) -> ContextPreview:
        """What a turn for ``command`` (a ``context.preview``) would carry if it started now: its
        request made as ``make`` makes it, with nothing kept (what the model saw is copied)."""
        texts = self._texts()
        chain = chain_of(command, None, keep_request=True)
        turn_input = self._input(chain, policy, texts, runs=self._runs is not None and policy.model_runs)
        if self.seen is not None:
            turn_input.changes = copy.deepcopy(self.seen).note(texts, {})
        request, packing = request_showing(turn_input, self._style)
        return ContextPreview(text=command.text, context=self._context(chain, request, packing))

    def symbols(self, path: str) -> SymbolList:
        """The top-level definitions of the Python file ``path`` as it is now (``symbols``)."""
        text = self._texts().get(path)
        found = symbols_of(text) if text is not None else ()
        return SymbolList(path=path, exists=text is not None, symbols=tuple(symbol.as_dict() for symbol in found))

    def _changes(self, editor: TurnEditor) -> tuple[Message, ...]:
        """For a turn's next round: what others changed since the model saw the files (the
        model's own changes, which its ``editor`` reports, are not told)."""
        if self.seen is None:
            return ()
        note = self.seen.note(self._texts(), editor.take_touched())
        return (Message("user", note),) if note else ()

    def _input(
        self, chain: Chain, policy: AiPolicy, texts: dict[str, str], *, runs: bool, text: str = "",
        focus: Focus | None = None,
    ) -> TurnInput:
        return TurnInput(
            text=text or chain.origin.text, files=texts, active_path=focus.span.path if focus else chain.active_path,
            effort=policy.effort(chain.origin.effort), history=tuple(self.history), last_ledger=self._ledger(),
            steering=[] if text else chain.steering, explain_only=not policy.edits_apply, runs=runs,
            tests_only=policy.tests_only, focus=focus, mentions=chain.mentions, exclude=chain.exclude,
        )

    def _last_turn_ledger(self) -> str:
        """The last turn's ledger as it stands now (blocks people undid since included)."""
        return self._last.ledger.as_prompt() if self._last is not None else self._last_ledger

    def _ledger(self) -> str:
        """The last turn's ledger, and the blocks of older turns people undid since the last
        request."""
        ledger = self._last_turn_ledger()
        if self._notes:
            ledger = "\n".join([ledger, "Since then, people undid some of your earlier edits:",
                                 *(f"- {note}" for note in self._notes)]).strip()
        return ledger

    def _turn_runs(self, turn_id: str, chain: Chain, policy: AiPolicy) -> TurnRuns | None:
        """The turn's runs, when code runs here and the course lets the model's code run."""
        if self._runs is None or not policy.model_runs:
            return None
        origin = chain.origin
        owner = RunFor(turn=turn_id, by=origin.author, session=origin.session, author_id=origin.user_id)
        return TurnRuns(self._runs, owner, tests_only=policy.tests_only)

    def _rebuilder(self, chain: Chain, policy: AiPolicy, focus: Focus | None) -> Callable[[str], TurnRequest]:
        """A small model's next round: a plain request over the files as they are now, asking
        ``text`` and then the turn's request again (about the same lines)."""
        def rebuild(text: str) -> TurnRequest:
            asked = f"{text}\nThe request you are working on: {chain.origin.text}"
            turn_input = self._input(chain, policy, self._texts(), runs=False, text=asked, focus=focus)
            return build_request(turn_input, self._style)
        return rebuild

    @property
    def conversation(self) -> Conversation:
        """What the next request carries of the past (a checkpoint keeps it)."""
        return Conversation(history=tuple(self.history), ledger=self._last_turn_ledger())

    def go_back(self, conversation: Conversation) -> None:
        """The next request starts from ``conversation`` (a checkpoint's): the turns after it
        are not carried. Each request is built afresh (no response id is chained across turns),
        so nothing of the model's own memory of them is left either. What the model last saw of
        each file was seen in those turns: it is forgotten (the next request shows the files
        whole, and tells no changes against texts the model no longer remembers)."""
        self.history.clear()
        self.history.extend(conversation.history)
        self._last_ledger = conversation.ledger
        self._last = None
        self._notes = []  # of turns the conversation no longer has, or before the checkpoint
        if self.seen is not None:
            self.seen = SeenFiles()

    def restyle(self, style: PromptStyle) -> None:
        """The next turns are put to the model in ``style`` (the room switched models,
        ``room_models``): the conversation goes on, as many of its newest turns as the style
        carries; what the model saw of the files is kept when it is told changes, else dropped
        (a model that is not told them sees the files whole in each request)."""
        if style == self._style:
            return
        self._style = style
        self.history = deque(self.history, maxlen=style.history_turns)
        if not style.tell_changes:
            self.seen = None
        elif self.seen is None:
            self.seen = SeenFiles()

    def ended(self, run: TurnRun, status: TurnStatus, texts: dict[str, str] | None = None) -> None:
        """``run`` ended with ``status``: the next requests carry it in their history and its
        ledger as the last one. ``texts``: the files as they are now, when the caller read them."""
        if status is not TurnStatus.STEERED:
            # A steered turn lives on in its successor's request (the steering note carries
            # its partial answer), so it is not history of its own.
            self.history.append(run.as_past())
        self._last = run.editor
        touched = run.editor.take_touched()  # (also lets go of the texts it holds)
        if self.seen is not None and touched:
            self.seen.absorb(self._texts() if texts is None else texts, touched)  # what the model wrote is what it saw

    def reviewed(self, editor: TurnEditor, notes: list[str]) -> None:
        """People undid blocks of ``editor``'s turn (``notes`` say which, for the model): the
        next request says so. The last turn's ledger says it already."""
        if editor is not self._last:
            self._notes.extend(notes)


def _focus(
    command: Command, chain: Chain, steered_from: TurnRun | None, texts: dict[str, str],
) -> tuple[Focus | None, str]:
    """The lines a new turn is about (``focus.settle``), and what people are told of them: those
    its prompt or steer names; a steer that names none keeps the lines of the turn it steers."""
    asked = command.range
    if asked is None and steered_from is not None and steered_from.focus is not None:
        span = steered_from.focus.span
        asked = AskedRange(span.path, span.from_line, span.to_line)
    asked = asked or chain.origin.range
    return settle(asked, texts) if asked is not None else (None, "")
