"""A turn while it runs, and what is kept of it after: metrics, diff, history."""

from __future__ import annotations

import asyncio
import difflib
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from spark_ide.editing import BlockStatus, EditEvent, ProseEvent, TurnEditor
from spark_ide.upstream import Message, TurnRequest, TurnStream

from .events import DEFAULT_EFFORT, EditStatus, Effort, Event, TurnEditSteered, TurnEvent, TurnProse
from .focus import AskedRange, Focus
from .meter import Meter
from .model_link import ModelLink
from .prompting import CHARS_PER_TOKEN, PastTurn, steering_note
from .repetition import RepetitionGuard
from .rounds import ToolRounds
from .turn_watch import TurnWatch
from .usage import TurnUsage

# Behind the model (its deltas wait), the Pilot takes up to this many characters of them in
# one step: the work per step (publish, apply, watchdog, guard, policy) is then shared by
# many tokens, so a busy process spends less per token the busier it is; the watchdog still
# reads a step up to each line that may end a block before that line, and a step that makes
# the answer a loop is cut where it became one. 512 until 2026-11-29: 4,096 took the
# capacity run's server from 0.235-0.289 to 0.221-0.240 ms of its loop per 1,000 tokens.
MERGED_CHARS = 4096


def new_turn_id() -> str:
    return uuid.uuid4().hex[:12]


def no_changes() -> tuple[Message, ...]:
    return ()


class CommandKind(StrEnum):
    PROMPT = "prompt"
    STEER = "steer"
    STOP = "stop"
    REVERT = "revert"
    RESTORE = "restore"  # undo a revert
    REVIEW = "review"  # keep or undo applied blocks of a turn (hunk.keep, hunk.undo)
    CHECKPOINT_CREATE = "checkpoint.create"  # a named checkpoint (``text``: its name)
    CHECKPOINT_RESTORE = "checkpoint.restore"  # back to a checkpoint's code and/or conversation
    # The room's prompt queue (``live.prompt_queue``): edit, delete, move, steer with one now, merge.
    QUEUE_EDIT = "queue.edit"
    QUEUE_DELETE = "queue.delete"
    QUEUE_MOVE = "queue.move"
    QUEUE_STEER = "queue.steer"
    QUEUE_MERGE = "queue.merge"
    NEXT = "next"  # internal: a turn ended on its own, start what is queued
    # Steering by editing (``live.edit_steer``): the page's three messages go to the room's
    # ``EditSteering``; ``EDIT_STEER`` is its steer, for the Pilot (``turn``: the turn it edits).
    EDIT_STEER_COMMIT = "edit_steer.commit"
    EDIT_STEER_CANCEL = "edit_steer.cancel"
    EDIT_STEER_SWITCH = "edit_steer.switch"
    EDIT_STEER = "edit_steer"
    # Questions answered to the asker at once (``Pilot.submit``): what the next request would
    # carry of the workspace; a Python file's top-level definitions (for @file.py:name).
    CONTEXT_PREVIEW = "context.preview"
    SYMBOLS = "symbols"


ANSWERED_AT_ONCE = frozenset({CommandKind.CONTEXT_PREVIEW, CommandKind.SYMBOLS})


@dataclass
class Command:
    """What a participant asked of the Pilot (the consumer has checked role and fields)."""

    kind: CommandKind
    session: str = ""
    user_id: int | None = None
    author: str = ""
    text: str = ""
    effort: Effort = DEFAULT_EFFORT
    path: str = ""
    turn: str = ""  # revert, restore: which turn; prompt: the id the turn will have (given when queued)
    received_at: float = field(default_factory=time.monotonic)
    reply: Callable[[Event], None] | None = None  # tells the asking connection what went wrong (or its answer)
    correction: bool = False  # a steer by the watchdog (live.watchdog): counts against the turn's corrections
    block: int | None = None  # review: which block of ``turn`` (None: all those waiting for review)
    decision: str = ""  # review: "keep" or "undo"
    checkpoint: str = ""  # checkpoint.restore: which one
    code: bool = False  # checkpoint.restore: the files back
    conversation: bool = False  # checkpoint.restore: the next request starts from there
    position: int = 0  # queue.move: the queued prompt's new place (1 runs next)
    turns: tuple[str, ...] = ()  # queue.merge: the queued prompts made one
    range: AskedRange | None = None  # prompt, steer: the lines it is about (Ctrl+K; ``focus``)
    mentions: tuple[str, ...] = ()  # prompt, steer: @-mentions (``path`` or ``path:symbol``), first in the context
    exclude: tuple[str, ...] = ()  # prompt, steer: files the person took out of the context
    on: bool = False  # edit_steer.switch: the person's edits steer
    note: TurnEditSteered | None = None  # edit_steer: published as the steer begins (its ``turn``: the one steered)


@dataclass
class TurnRun:
    """One turn while the model writes it."""

    id: str
    command: Command
    origin: Command  # the prompt that began the steering chain
    request: TurnRequest
    editor: TurnEditor
    before: dict[str, str]  # the files when the turn began (for its diff)
    steering: list[str]  # the steering notes sent with this turn's request
    redirects: list[str]  # the steering texts of the chain, in order
    tools: ToolRounds  # its tool calls, round by round
    steered_from: str | None = None
    stream: TurnStream | None = None
    task: asyncio.Task[None] | None = None
    live: bool = True  # False from the moment it ends: nothing of it is forwarded after
    deltas: int = 0
    chars: int = 0  # of the answer so far
    repetition: RepetitionGuard = field(default_factory=RepetitionGuard)
    steer_ms: float | None = None
    watch: TurnWatch | None = None  # the watchdog over its code (None: off, or nothing is applied)
    corrections: int = 0  # the watchdog's corrections in its steering chain so far
    tail: str = ""  # the end of the last delta applied (an end marker may be cut between two)
    touched: set[str] = field(default_factory=set)  # files its chain changed (the full scan's)
    said: list[str] = field(default_factory=list)  # the text of its earlier rounds
    rounds: list[TurnStream] = field(default_factory=list)  # the streams of its earlier rounds
    # A small model's next round after failing tests: a plain new request over the files as they
    # are, asking ``text`` (None: the next round chains on the conversation, ``next_round``).
    rebuild: Callable[[str], TurnRequest] | None = None
    auto_test: bool = False  # test rounds were on when its chain began (a steer keeps them so)
    # The model's connection it runs on (``room_models``): its steering chain keeps it when
    # the room switches models meanwhile (None: not started yet).
    link: ModelLink | None = None
    # What others changed in the files the model saw, for its next round's request (``seen``):
    # messages to send after the round's tool outputs (none: nothing changed, or not told).
    changes: Callable[[], tuple[Message, ...]] = no_changes
    focus: Focus | None = None  # the lines its request is about (``focus.settle``)
    focus_note: str = ""  # what the people are told about them (a range cut at the file's end)
    context: Mapping[str, object] = field(default_factory=dict)  # what its request carries (``turn.context``)
    mentions: tuple[str, ...] = ()  # its chain's @-mentions (``Chain``)
    exclude: tuple[str, ...] = ()  # the files its chain took out of the context

    def take_delta(self, text: str, most: int | None = None) -> str:
        """A delta of the answer, with those waiting behind it when the room is behind the
        model (up to ``MERGED_CHARS`` in all, and at most ``most`` of them: a quota's tokens
        left): what the Pilot applies in one step."""
        return self._take(text, most, None)

    def take_input(self, call_id: str, text: str, most: int | None = None) -> str:
        """More of tool call ``call_id``'s input, with what is waiting of it (as ``take_delta``)."""
        return self._take(text, most, call_id)

    def _take(self, text: str, most: int | None, call_id: str | None) -> str:
        more = 0
        stream = self.stream
        if stream is not None and stream.waiting and (most is None or most > 0):
            # A quota's tokens left bound the deltas taken and their text (a delta may carry
            # several tokens: a provider that fell behind hands them over in one piece).
            limit = MERGED_CHARS if most is None else min(MERGED_CHARS, most * CHARS_PER_TOKEN)
            if call_id is None:
                waiting, more = stream.take_waiting_text(limit, most)
            else:
                waiting, more = stream.take_waiting_input(call_id, limit, most)
            text += waiting
        if most is not None and len(text) > (most + 1) * CHARS_PER_TOKEN:
            # A provider that fell behind may hand over many tokens in one delta: what passes
            # the quota is not taken (the quota then ends the turn).
            text = text[: (most + 1) * CHARS_PER_TOKEN]
        self.deltas += 1 + more
        self.chars += len(text)
        return text

    @property
    def streamed_tokens(self) -> int:
        """Output tokens so far, while the provider has not counted them: a delta may carry
        several tokens, and a token is about ``CHARS_PER_TOKEN`` characters, so the larger
        estimate counts."""
        return max(self.deltas, self.chars // CHARS_PER_TOKEN)

    @property
    def streams(self) -> list[TurnStream]:
        """Its responses' streams, round by round."""
        return [*self.rounds, *([self.stream] if self.stream is not None else [])]

    @property
    def output(self) -> str:
        """What the model said over all its rounds (a tool call's input is not said)."""
        return "".join(self.said) + (self.stream.text if self.stream is not None else "")

    def chain_prompt(self) -> str:
        """What the user asked over a steering chain: the first prompt and each redirection."""
        return chain_text(self.origin.text, self.redirects)

    def as_past(self) -> PastTurn:
        return PastTurn(prompt=self.chain_prompt(), output=self.output)


def chain_text(origin: str, redirects: Iterable[str]) -> str:
    """A steering chain's request as its past turn tells it: the first prompt, then each
    redirection (``TurnRun.chain_prompt``; a reopened room's history, ``live.reopen``)."""
    return origin + "".join(f"\n(Redirected: {text})" for text in redirects)


@dataclass(frozen=True, slots=True)
class Chain:
    """What a new turn carries over from the turn it steers (nothing, for a turn of its own)."""

    origin: Command  # the prompt whose request the turn answers
    steering: list[str]  # the steering notes sent with that request
    redirects: list[str]  # the steering texts of the chain, in order
    active_path: str
    steered_from: str | None
    corrections: int  # the watchdog's, in the chain so far
    touched: set[str]
    mentions: tuple[str, ...] = ()  # the chain's @-mentions so far (a steer adds its own)
    exclude: tuple[str, ...] = ()  # the files taken out of its context so far


def chain_of(command: Command, steered_from: TurnRun | None, *, keep_request: bool) -> Chain:
    """The chain of the turn for ``command``. A steer keeps the original request and adds its
    direction (``keep_request``), or, for a model that cannot use that, is a plain new request
    over the current files (still one chain: its corrections and the files it touched)."""
    if steered_from is None:
        return Chain(
            origin=command, steering=[], redirects=[], active_path=command.path, steered_from=None,
            corrections=int(command.correction), touched=set(), mentions=command.mentions, exclude=command.exclude,
        )
    origin, steering, redirects = command, [], []
    if keep_request:
        origin, redirects = steered_from.origin, [*steered_from.redirects, command.text]
        steering = [*steered_from.steering, steering_note(
            partial_output=steered_from.output, ledger=_ledger(steered_from), text=command.text,
            by_user=not command.correction,
        )]
    return Chain(
        origin=origin, steering=steering, redirects=redirects, active_path=origin.path or steered_from.origin.path,
        steered_from=steered_from.id, corrections=steered_from.corrections + int(command.correction),
        touched=set(steered_from.touched), **steered_context(steered_from, command),
    )


def steered_context(steered_from: TurnRun, command: Command) -> dict[str, tuple[str, ...]]:
    """What a steer's chain carries of the context: the mentions and the files taken out of
    the turn it steers, and its own after them."""
    return {
        "mentions": tuple(dict.fromkeys((*steered_from.mentions, *command.mentions))),
        "exclude": tuple(dict.fromkeys((*steered_from.exclude, *command.exclude))),
    }


def _ledger(run: TurnRun) -> str:
    """What a turn did, for the re-prompt of a steer: its edits, then its runs."""
    return "\n".join(part for part in (run.editor.ledger.as_prompt(), *run.tools.ran) if part)


def publish_edits(publish: Callable[[TurnEvent], None], events: Iterable[EditEvent]) -> None:
    """Publish what the edit engine reported as session events: block statuses, and prose (an
    empty piece of prose is none)."""
    for event in events:
        if isinstance(event, BlockStatus):
            publish(EditStatus(
                turn=event.turn, block=event.block, path=event.path, state=event.state.value, detail=event.detail(),
            ))
        elif isinstance(event, ProseEvent) and event.text:
            publish(TurnProse(turn=event.turn, text=event.text))


def turn_metrics(
    run: TurnRun, ended: float, usage: TurnUsage, *, model: str | None = None,
) -> dict[str, float | int | str | None]:
    """``turn.finished`` metrics, counted in one place.

    ``tokens`` is the turn's output tokens as ``usage`` counts them (``usage.turn_usage``:
    the provider's count of each response, else an estimate); ``ttft_ms`` runs from the
    moment the prompt (or steer) reached the server to the first text of the answer;
    ``model`` is the model the turn ran on (None: no model client was had).
    """
    received = run.command.received_at
    first = next((stream.first_token_at for stream in run.streams if stream.first_token_at is not None), None)
    tokens = usage.output_tokens
    generating = ended - first if first is not None else 0.0
    metrics: dict[str, float | int | str | None] = {
        "ttft_ms": None if first is None else round((first - received) * 1000, 2),
        "tokens": tokens,
        "tokens_per_s": round(tokens / generating, 1) if generating > 0 else None,
        "duration_ms": round((ended - received) * 1000, 2),
        "model": model or None,
    }
    if run.steer_ms is not None:
        metrics["steer_ms"] = round(run.steer_ms, 3)
    return metrics


def meter_turn(
    meter: Meter, run: TurnRun, status: str, reason: str, metrics: Mapping[str, object], usage: TurnUsage,
) -> None:
    """Tell ``meter`` how ``run`` ended (``metrics`` as ``turn_metrics`` made them, ``usage``
    its tokens and cost), and how often its request had to be resent."""
    meter.turn_finished(
        status, reason, model=str(metrics.get("model") or ""), tokens=usage.output_tokens,
        ttft_ms=_number(metrics.get("ttft_ms")), steer_ms=_number(metrics.get("steer_ms")),
        input_tokens=usage.input_tokens, cached_input_tokens=usage.cached_input_tokens,
        cost_usd=None if usage.cost_usd is None else float(usage.cost_usd),
    )
    for _ in range(sum(stream.resends for stream in run.streams)):
        meter.upstream_reconnected("resend")


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def changed_files(run: TurnRun, now: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(path, text at the turn's start, text ``now``) of each file the turn touched that differs."""
    touched = {entry.path for entry in run.editor.ledger.entries}
    pairs = ((path, run.before.get(path, ""), now.get(path, "")) for path in sorted(touched))
    return [(path, before, after) for path, before, after in pairs if before != after]


def unified_diffs(changed: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Unified diffs of ``changed_files``: plain strings in, so it may run on a thread (difflib
    takes milliseconds for a few hundred lines, more for a large file)."""
    diffs = {}
    for path, before, after in changed:
        lines = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}",
        )
        diffs[path] = "".join(lines)
    return diffs
