"""A workspace's history as a replay: the document's checkpoints and updates and the room's
turn events, each with its time, in the compact form the replay page reads
(docs/replay.md)."""

from __future__ import annotations

import base64
import bisect
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from spark_ide.live.events import FinishReason, TurnDelta, edit_steered_label
from spark_ide.pairing.models import RoomEvent
from spark_ide.workspaces.models import DocumentUpdate

from .history import ms
from .models import Checkpoint, HistoryUpdate

# Raw deltas are left out: the transcript is drawn from the prose and block statuses (as on a
# reloaded page), and the document updates carry the code as it was written.
LEFT_OUT = (TurnDelta.type,)
REVIEW_VERBS = {"undone": "undid", "kept": "kept"}  # edit.reviewed's decision, as the mark says it
STEERED_OR_STOPPED = {FinishReason.STEERED.value: "steer", FinishReason.STOPPED.value: "stop"}


@dataclass(frozen=True)
class Update:
    id: int
    at: int
    data: bytes
    fresh: bool = False  # a whole new document (a replacement): nothing before it applies after it


def _b64(data: bytes | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def document_history(workspace_id: uuid.UUID) -> tuple[list[Checkpoint], list[Update]]:
    """The checkpoints and every update after the first, oldest first: those compaction moved
    into the history and those still in the live log (a replacement's, ``fresh``, included)."""
    with transaction.atomic():
        # The live log first: a compaction between the two reads moves rows from the log into
        # the history, so read in this order they are seen twice (once kept), never missed.
        live = DocumentUpdate.objects.filter(workspace_id=workspace_id).order_by("id")
        pending = [
            Update(pk, ms(created), bytes(data), fresh)
            for pk, created, data, fresh in live.values_list("id", "created_at", "data", "fresh")
        ]
        checkpoints = list(Checkpoint.objects.filter(workspace_id=workspace_id).order_by("through"))
        if not checkpoints:
            return [], []
        moved = HistoryUpdate.objects.filter(workspace_id=workspace_id, id__gt=checkpoints[0].through).order_by("id")
        kept = [
            Update(pk, at, bytes(data), fresh) for pk, at, data, fresh in moved.values_list("id", "at", "data", "fresh")
        ]
    last = kept[-1].id if kept else checkpoints[0].through
    return checkpoints, kept + [update for update in pending if update.id > last]


def replay_data(workspace_id: uuid.UUID) -> dict[str, Any]:
    """The replay of a workspace's room. Times are ms from ``start`` (ms since the Unix epoch)
    and never go back: ``checkpoints`` [{``t``, ``n``: how many of ``updates`` it holds,
    ``state``: base64 Yjs update}], ``updates`` [[``t``, base64 Yjs update]], or [``t``,
    base64 Yjs update, 1] for a fresh one (the room replaced its document: it is the whole new
    document, and a replay starts over from it, as from a checkpoint holding it), ``events``
    [the turn event as sent, plus ``seq``, ``t`` and, for a merged run, ``d`` (its
    duration)], ``marks`` [{``t``, ``kind`` (steer, stop, turn), ``turn``, ``text``}] and
    ``end``. Empty lists when the workspace was never opened live."""
    checkpoints, updates = document_history(workspace_id)
    if not checkpoints:
        return {"start": None, "end": 0, "checkpoints": [], "updates": [], "events": [], "marks": []}
    rows = RoomEvent.objects.filter(workspace_id=workspace_id, at__isnull=False).exclude(kind__in=LEFT_OUT)
    events = [
        (seq, at, at if until is None else until, data)
        for seq, at, until, data in rows.order_by("seq").values_list("seq", "at", "until", "data")
        if at is not None
    ]
    start = min([checkpoints[0].at, *(at for _, at, _, _ in events[:1])])
    update_clock, event_clock = Clock(start), Clock(start)
    update_times = [update_clock.time(update.at) for update in updates]
    ids = [update.id for update in updates]
    out_events: list[dict[str, Any]] = []
    for seq, at, until, data in events:
        entry = {**data, "seq": seq, "t": event_clock.time(at)}
        if until > at:
            entry["d"] = until - at
        out_events.append(entry)
    return {
        "start": start,
        "end": max([0, *update_times[-1:], *(e["t"] + e.get("d", 0) for e in out_events)]),
        "checkpoints": [
            {"t": max(0, c.at - start), "n": bisect.bisect_right(ids, c.through), "state": _b64(c.state)}
            for c in checkpoints
        ],
        "updates": [
            [t, _b64(update.data), 1] if update.fresh else [t, _b64(update.data)]
            for t, update in zip(update_times, updates, strict=True)
        ],
        "events": out_events,
        "marks": marks(out_events),
    }


class Clock:
    """Times relative to ``start`` that never go back (a clock step on the server)."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.last = 0

    def time(self, at: int) -> int:
        self.last = max(self.last, at - self.start)
        return self.last


def marks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points a replay's scrubber marks: each turn's start, where a person steered (the
    steered turn's end, labelled with the steering text; ``edit_steer`` for a steer by editing,
    labelled with what was edited) or stopped the model, kept or undid one of its hunks
    (``review``), or restored a checkpoint (``restore``)."""
    out: list[dict[str, Any]] = []
    steers: dict[str, dict[str, Any]] = {}  # steered turn -> its mark
    edited: dict[str, str] = {}  # turn steered by editing -> what was edited (``turn.edit_steered``)

    def mark(t: int, kind: str, turn: str, text: str = "") -> dict[str, Any]:
        out.append({"t": t, "kind": kind, "turn": turn, "text": text})
        return out[-1]

    for event in events:
        kind, turn, prompt = event["type"], event["turn"], event.get("prompt", "")
        if kind == "turn.edit_steered":
            edited[turn] = edit_steered_label(event.get("path", ""), event.get("lines") or [0], event.get("by", ""))
        elif kind == "turn.finished" and event.get("reason") in STEERED_OR_STOPPED:
            made = mark(event["t"], STEERED_OR_STOPPED[event["reason"]], turn)
            if made["kind"] == "steer":
                steers[turn] = made
                if turn in edited:
                    made["kind"], made["text"] = "edit_steer", edited[turn]
        elif kind == "turn.started" and event.get("steered_from"):
            earlier = steers.get(event["steered_from"])
            if earlier is not None:
                if earlier["kind"] == "steer":
                    earlier["text"] = prompt
            else:  # the steered turn's end was not stored
                mark(event["t"], "steer", event["steered_from"], prompt)
        elif kind == "turn.started":
            mark(event["t"], "turn", turn, prompt)
        elif kind == "edit.reviewed":
            hunk = f"{event.get('path', '')} · block {int(event.get('block', 0)) + 1}"
            verb = REVIEW_VERBS.get(str(event.get("decision")), str(event.get("decision")))
            mark(event["t"], "review", turn, f"{event.get('by', '')} {verb} {hunk}")
        elif kind == "checkpoint.restored":
            parts = [name for name, wanted in (("code", event.get("code")), ("conversation", event.get("conversation")))
                     if wanted]
            mark(event["t"], "restore", turn, f"{event.get('by', '')} restored the {' and the '.join(parts)}")
    return out
