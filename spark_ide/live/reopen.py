"""A room that opens again carries on the model's conversation.

The Pilot keeps the past turns its next request carries (``TurnMaker.history``) and the last
turn's ledger in memory. When a room opens (the first page after everyone left, or after a
restart) they are rebuilt from the turn records (``RoomStore.stored_past``), as the live
history would hold them: every ended turn but a steered one (its successor carries it), each
told as its steering chain's request (``turns.chain_text``) and the model's whole output over
its rounds (``Turn.output``), the newest ``PromptStyle.history_turns`` of them; and the ledger
of the last turn that ended (a steered one included), as that turn left it (or, reverted
since, as the revert left it).

A restore of a checkpoint's conversation (``checkpoint.restored`` with ``conversation``, in the
room's event log) is where the conversation starts over: the history is the checkpoint's, then
the turns that started after the restore.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from spark_ide.editing.ledger import Ledger

from .checkpoints import Checkpoint, Conversation
from .events import TurnStatus
from .prompting import PastTurn, PromptStyle
from .turns import chain_text

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PastRecord:
    """A turn as its record keeps it, once it ended."""

    turn: str
    prompt: str  # what its command said (a steer: the steering text)
    status: str
    output: str  # what the model said over its rounds
    ledger: Sequence[Mapping[str, Any]] = ()  # as ``Ledger.as_dicts``
    steered_from: str | None = None
    reverted: bool = False  # reverted since (and not restored)


@dataclass(frozen=True, slots=True)
class StoredPast:
    """What a reopened room's conversation is made of. ``turns``: oldest first, the newest
    ended turns that are not steered (at most the number asked for) and the turns their
    steering chains started from; ``last``: the turn that ended last (its ledger); both only
    of turns that started after ``restored``, the checkpoint whose conversation was last
    restored (None: none was)."""

    turns: tuple[PastRecord, ...] = ()
    last: PastRecord | None = None
    restored: str | None = None


class PastSource(Protocol):
    """Where the past comes from (``RoomStore``)."""

    async def stored_past(self, *, turns: int) -> StoredPast: ...

    async def checkpoint_load(self, checkpoint: str) -> Checkpoint | None: ...


def conversation_of(past: StoredPast, style: PromptStyle, since: Conversation | None = None) -> Conversation:
    """The conversation ``past`` stands for, after ``since`` (a restored checkpoint's)."""
    by_id = {record.turn: record for record in past.turns}
    history = list(since.history if since is not None else ())
    for record in past.turns:
        if record.status not in (TurnStatus.STEERED.value, TurnStatus.RUNNING.value):
            history.append(PastTurn(prompt=_request(record, by_id, style), output=record.output))
    kept = history[-style.history_turns:] if style.history_turns > 0 else []
    before = since.ledger if since is not None else ""
    return Conversation(history=tuple(kept), ledger=_ledger_text(past.last) if past.last is not None else before)


def _request(record: PastRecord, by_id: Mapping[str, PastRecord], style: PromptStyle) -> str:
    """What the live history says the turn asked: a steer that re-prompts tells the chain's
    first prompt and each redirection; a steer that is a plain new request, its own text."""
    if style.steer_as_request:
        return record.prompt
    prompts = [record.prompt]
    seen = {record.turn}
    step = record
    while step.steered_from is not None and step.steered_from in by_id and step.steered_from not in seen:
        step = by_id[step.steered_from]
        seen.add(step.turn)
        prompts.append(step.prompt)
    prompts.reverse()
    return chain_text(prompts[0], prompts[1:])


def _ledger_text(record: PastRecord) -> str:
    try:
        ledger = Ledger.from_dicts(record.turn, record.ledger)
    except (KeyError, TypeError, ValueError):
        log.warning("turn %s: its stored ledger cannot be read; the next request carries none", record.turn)
        return ""
    if record.reverted:  # as the live ledger says it after the revert
        ledger.mark_reverted()
    return ledger.as_prompt()


async def reopened(store: PastSource, style: PromptStyle) -> Conversation | None:
    """The conversation a room that opens carries on (None: there is none to carry on, or it
    could not be read: the room opens without it, as before)."""
    try:
        past = await store.stored_past(turns=style.history_turns)
        since = None
        if past.restored is not None:
            checkpoint = await store.checkpoint_load(past.restored)
            if checkpoint is not None:  # pruned since: the turns after the restore alone
                since = Conversation(history=checkpoint.history, ledger=checkpoint.ledger)
    except Exception:
        log.exception("the conversation of the room's earlier turns could not be read: it starts empty")
        return None
    if not past.turns and past.last is None and since is None:
        return None
    return conversation_of(past, style, since)
