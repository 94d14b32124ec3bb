"""Every session event, typed, in one place (docs/protocol.md §2 lists them).

A room gives each *turn event* the next ``seq`` and keeps it in its event log (replay on
reconnect, the transcript after a reload). *Ephemeral* events (``hello``, ``pong``,
``presence``, ``error``, ``resync``) carry the room's current ``seq`` without taking a new
one and are never replayed.

The lists a client or the database must agree on are defined here once: roles, turn
statuses, the reasons a turn ended, the error codes, the socket's close codes, the effort
levels, and ``EVENTS``. The browser gets them from ``static/src/protocol.js``, generated from
these (``live.protocol_export``), never typed again.
"""

from __future__ import annotations

import colorsys
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, ClassVar

from spark_ide.editing.status import EditState
from spark_ide.upstream.profiles import EFFORTS, Effort

__all__ = [
    "DEFAULT_EFFORT",
    "DRIVER_ROLES",
    "EFFORTS",
    "EVENTS",
    "CheckpointCreated",
    "CheckpointRestored",
    "CloseCode",
    "ContextPreview",
    "DocumentReplaced",
    "EditReviewed",
    "EditStatus",
    "EditSteerState",
    "Effort",
    "ErrorCode",
    "ErrorEvent",
    "Event",
    "FinishReason",
    "GuardDiagnostics",
    "GuardFinding",
    "Hello",
    "LineSpan",
    "Participant",
    "Policy",
    "Pong",
    "Presence",
    "QueueItem",
    "QueueState",
    "Resync",
    "Role",
    "SymbolList",
    "TurnContext",
    "TurnDelta",
    "TurnEditSteered",
    "TurnEvent",
    "TurnFinished",
    "TurnProse",
    "TurnQueued",
    "TurnRestored",
    "TurnReverted",
    "TurnRound",
    "TurnStarted",
    "TurnStatus",
    "TurnSteered",
    "encode",
    "turn_event_from",
]

DEFAULT_EFFORT: Effort = "medium"


class Role(StrEnum):
    OWNER = "owner"
    COLLABORATOR = "collaborator"
    VIEWER = "viewer"


DRIVER_ROLES = frozenset({Role.OWNER, Role.COLLABORATOR})
"""Who may prompt, steer, stop, revert, run and edit the document."""


class TurnStatus(StrEnum):
    """A turn's state: ``running`` while the model writes, then how it ended."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    STEERED = "steered"
    FAILED = "failed"


class FinishReason(StrEnum):
    """Why a turn ended the way it did (``turn.finished`` ``reason``)."""

    ANSWERED = "answered"  # completed: the model finished its answer and something changed
    NO_CHANGES = "no_changes"  # completed, but no edit block was applied
    INCOMPLETE = "incomplete"  # the provider cut the answer short (length, content filter)
    STOPPED = "stopped"  # a person pressed stop
    STEERED = "steered"  # a person redirected the model; the next turn carries on
    REVERTED = "reverted"  # a person reverted the turn while it ran
    REPETITION = "repetition"  # the model looped on the same text
    MODEL_UNAVAILABLE = "model_unavailable"  # no connection to the model could be had
    MODEL_ERROR = "model_error"  # the provider answered with an error
    NO_ANSWER = "no_answer"  # the model connection ended without an answer
    INTERNAL_ERROR = "internal_error"  # a bug of ours; logged
    STORAGE_FAILED = "storage_failed"  # the document could not be saved; the model was stopped
    OWNER_LOST = "owner_lost"  # the process running the turn went away
    SHUTDOWN = "shutdown"  # the room closed while the turn ran
    GUARD_HALT = "guard_halt"  # the security watchdog stopped the turn
    # AI policy (live.policy): the turn passed the student's token quota and was stopped;
    # an explain-only turn wrote edit blocks, shown as text and not applied.
    QUOTA = "quota"
    EXPLAIN_ONLY = "explain_only"
    # Spend (docs/models.md, "Spend"): the turn passed the person's daily budget or the
    # course's money budget while it streamed and was stopped.
    BUDGET_EXHAUSTED = "budget_exhausted"
    # Upstream faults (docs/upstream.md): the connection to the model dropped mid-answer, or the
    # provider closed it at its lifetime limit (60 minutes on OpenAI) mid-answer; nothing came
    # within SPARK_UPSTREAM_FIRST_BYTE_S of the request, or within SPARK_UPSTREAM_STALL_S of
    # the last event; the model's connection sent something that is not a valid event.
    CONNECTION_LOST = "connection_lost"
    CONNECTION_EXPIRED = "connection_expired"
    FIRST_BYTE_TIMEOUT = "first_byte_timeout"
    STALLED = "stalled"
    MODEL_PROTOCOL_ERROR = "model_protocol_error"
    # The rounds of a turn (docs/protocol.md §4 "Rounds"): the model still made tool calls in
    # its last response allowed (SPARK_MAX_ROUNDS), the turn ended there, its calls unanswered;
    # the IDE ran the tests after the model's last change (SPARK_AUTO_TEST) and they passed, or
    # they still failed when the turn had no round left to fix them.
    ROUND_LIMIT = "round_limit"
    TESTS_PASSED = "tests_passed"
    TESTS_FAILED = "tests_failed"
    # Keys (docs/models.md, "Keys"): the provider refused the key the room used (401/403; the
    # error names it: the owner's stored key by its last 4, or the server's); the room's owner
    # uses only their own keys and has none for the provider, so no request was sent.
    PROVIDER_KEY_REJECTED = "provider_key_rejected"
    PROVIDER_KEY_MISSING = "provider_key_missing"


class ErrorCode(StrEnum):
    """The ``code`` of an ``error`` event: what was wrong with a client message, or what failed."""

    MALFORMED_JSON = "malformed_json"
    BAD_MESSAGE = "bad_message"
    UNKNOWN_TYPE = "unknown_type"
    MISSING_FIELD = "missing_field"
    BAD_FIELD = "bad_field"
    TOO_LONG = "too_long"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    FORBIDDEN = "forbidden"
    MALFORMED_BINARY = "malformed_binary"
    NOT_AVAILABLE = "not_available"
    REVERT_UNAVAILABLE = "revert_unavailable"
    # ``restore``: not a turn reverted since the last turn started, or its lines were edited since.
    RESTORE_UNAVAILABLE = "restore_unavailable"
    BAD_PATH = "bad_path"
    TOO_MANY_FILES = "too_many_files"
    PATH_CONFLICT = "path_conflict"
    STORAGE_FAILED = "storage_failed"
    # A page's frames of a document replaced twice since it loaded it: they cannot be merged.
    DOCUMENT_REPLACED = "document_replaced"
    RUN_BUSY = "run_busy"
    NO_SUCH_RUN = "no_such_run"
    # The watchdog found high-severity flaws in the files: the run waits for ``confirm``.
    RUN_NEEDS_CONFIRMATION = "run_needs_confirmation"
    # Hunk review (``hunk.keep``/``hunk.undo``): no such applied block of a turn of this room
    # waiting for review (unknown, too old, not applied, already reviewed, the turn reverted);
    # or the lines it wrote, or those beside them, were changed since (nobody is overwritten).
    HUNK_UNAVAILABLE = "hunk_unavailable"
    HUNK_CONFLICT = "hunk_conflict"
    # AI policy (live.policy.Refusal): no turn starts.
    AI_DISABLED = "ai_disabled"
    AI_QUOTA = "ai_quota"
    # Spend: the person's daily budget, or the course's money budget, is spent: no turn starts.
    BUDGET_EXHAUSTED = "budget_exhausted"
    # ``checkpoint.restore``: no checkpoint of this workspace has that id; a turn is running.
    NO_SUCH_CHECKPOINT = "no_such_checkpoint"
    CHECKPOINT_BUSY = "checkpoint_busy"
    # The room's prompt queue (``live.prompt_queue``): no such prompt waits in it (started,
    # deleted, made up); a prompt beyond its limit (50).
    NOT_QUEUED = "not_queued"
    QUEUE_FULL = "queue_full"


class CloseCode(IntEnum):
    """The codes the server closes a session socket with, and what the client does then."""

    TRY_AGAIN = 1013  # the room cannot be opened right now (Redis or the database is down): retry with backoff
    MOVED = 4012  # the room moved to another process: reconnect (Daphne sends no 1012)
    BAD_TOKEN = 4401  # an Authorization header with a token nobody holds
    REFUSED = 4403  # no access (any more): reconnecting is refused too
    TOO_MANY_SOCKETS = 4429  # the user holds SPARK_MAX_SOCKETS_PER_USER sockets already: retry later


@dataclass(frozen=True, slots=True)
class Participant:
    """One person in the room (``presence``): their name, role, colour, and how many sockets
    (browser tabs, scripts) they have open."""

    user: str
    role: Role
    user_id: int | None
    colour: str  # "#rrggbb", the same in every browser: their dot, caret and selections
    connections: int = 1

    # Hues a golden angle apart for consecutive user ids: the first people of a workspace
    # (who have near ids) get colours far apart on the wheel, and any two ids differ.
    GOLDEN_ANGLE: ClassVar[float] = 137.50776405003785
    LIGHTNESS: ClassVar[float] = 0.45
    SATURATION: ClassVar[float] = 0.7
    # A caret's name label is white on the colour: yellows and greens are darkened until
    # their luminance gives that text a contrast of at least 4.5:1 (WCAG).
    MAX_LUMINANCE: ClassVar[float] = 0.18

    @classmethod
    def of(cls, user_id: int | None, user: str, role: Role, connections: int = 1) -> Participant:
        return cls(user=user, role=role, user_id=user_id, colour=cls.colour_for(user_id, user), connections=connections)

    @classmethod
    def colour_for(cls, user_id: int | None, user: str) -> str:
        """The person's colour, decided here only: from the user id (a hash of the name for
        someone without one), so every process and browser agrees without asking."""
        seed = user_id if user_id is not None else zlib.crc32(user.encode())
        hue = (seed * cls.GOLDEN_ANGLE) % 360 / 360
        lightness = cls.LIGHTNESS
        channels = colorsys.hls_to_rgb(hue, lightness, cls.SATURATION)
        while cls.luminance(channels) > cls.MAX_LUMINANCE:
            lightness -= 0.01
            channels = colorsys.hls_to_rgb(hue, lightness, cls.SATURATION)
        return "#" + "".join(f"{round(channel * 255):02x}" for channel in channels)

    @staticmethod
    def luminance(channels: tuple[float, float, float]) -> float:
        """Relative luminance (WCAG 2) of an sRGB colour with channels in 0..1."""
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


class Event:
    """A session event; ``payload()`` is its JSON object without ``seq``."""

    type: ClassVar[str]
    ephemeral: ClassVar[bool] = False
    # Document updates waiting behind it are never merged with those after it (an outbox's
    # ``Backlog``): ``document.replaced``, which parts one document from the next.
    parts_documents: ClassVar[bool] = False

    def payload(self) -> dict[str, Any]:
        fields = asdict(self)  # type: ignore[call-overload]  # every subclass is a dataclass
        return {"type": self.type, **fields}


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # made once: json.dumps with
# these arguments would build an encoder per call


_STRING = json.encoder.encode_basestring  # a JSON string, as ``_ENCODER`` writes one (ensure_ascii off)


class _LastText:
    """``_STRING`` of a turn's text, the last one kept: a step of prose publishes a
    ``turn.delta`` and a ``turn.prose`` of the same text, and the room's batch merges them into
    runs of the same text again, encoded one after the other (at capacity, escaping the text
    was a fifth of the room's delivery). Equal texts cost one comparison, which stops at the
    first difference."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = ("", _STRING(""))  # (text, its JSON string): one value, so any thread reads a pair

    def __call__(self, text: str) -> str:
        last = self._last
        if text == last[0]:
            return last[1]
        encoded = _STRING(text)
        self._last = (text, encoded)
        return encoded


_TEXT = _LastText()


def encode(event: Event, seq: int) -> str:
    """The event as the text frame every client receives (encoded once per room)."""
    if isinstance(event, TurnText):  # as many as the model's deltas: written directly
        return event.encoded(seq)
    payload = event.payload()
    payload["seq"] = seq
    return _ENCODER.encode(payload)


# -- ephemeral: answers to one connection, presence, code runs -----------------------------


@dataclass(frozen=True, slots=True)
class Hello(Event):
    type: ClassVar[str] = "hello"
    ephemeral: ClassVar[bool] = True
    session: str
    workspace: str
    role: Role
    user: str
    turn: str | None
    epoch: int
    generation: int = 0  # the document this socket is served (``DocumentReplaced``)


@dataclass(frozen=True, slots=True)
class Pong(Event):
    type: ClassVar[str] = "pong"
    ephemeral: ClassVar[bool] = True
    id: Any
    t: int


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    ephemeral: ClassVar[bool] = True
    code: ErrorCode
    message: str
    ref: Any = None

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "code": self.code.value, "message": self.message}
        if self.ref is not None:
            out["ref"] = self.ref
        return out


@dataclass(frozen=True, slots=True)
class Policy(Event):
    """The course's AI rules as they stand for this student (live.policy): on join, after each
    turn and with a refusal. ``mode`` off / explain / on; ``tokens_left`` None: no quota;
    ``label`` the line the prompt area shows."""

    type: ClassVar[str] = "policy"
    ephemeral: ClassVar[bool] = True
    mode: str
    max_effort: Effort | None
    token_quota: int | None
    tokens_left: int | None
    label: str
    edit_steer: bool = True  # a student's edit of the lines the model writes steers it (live.edit_steer)


@dataclass(frozen=True, slots=True)
class ModelChosen(Event):
    """The model the room's next turns run on (the catalogue's entry, docs/models.md): on join,
    and to everyone when its owner switches it. ``name`` the entry's name, ``provider`` and
    ``model`` (the model id) what it reaches."""

    type: ClassVar[str] = "model"
    ephemeral: ClassVar[bool] = True
    name: str
    provider: str
    model: str


@dataclass(frozen=True, slots=True)
class Resync(Event):
    """What the client holds cannot be brought up to date event by event: it drops its
    transcript, re-syncs the document, and the recent turns follow as a replay."""

    type: ClassVar[str] = "resync"
    ephemeral: ClassVar[bool] = True
    reason: str


@dataclass(frozen=True, slots=True)
class DocumentReplaced(Event):
    """The room replaced its document by a new one rebuilt from the same text (fresh item
    ids, without the deleted items a long-lived document keeps): ``state`` is all of it, as a
    base64 Yjs update. In the socket's stream every binary frame before this belongs to the
    old document and every one after it to the new one. The page adopts it and answers
    ``document.adopted``; what it sent of the old one meanwhile is merged as text."""

    type: ClassVar[str] = "document.replaced"
    ephemeral: ClassVar[bool] = True
    parts_documents: ClassVar[bool] = True
    generation: int
    state: str


@dataclass(frozen=True, slots=True)
class CheckpointCreated(Event):
    """A named checkpoint was taken (``checkpoint.create``): the history panel lists it."""

    type: ClassVar[str] = "checkpoint.created"
    ephemeral: ClassVar[bool] = True
    checkpoint: str
    name: str
    by: str


@dataclass(frozen=True, slots=True)
class WorkspaceSettings(Event):
    """``by`` changed the workspace's settings (the workspace API's PATCH): ``changed`` holds
    each field that changed with its new value as the API answers it (``auto_test``: true,
    false or null for the server's default). For every page of the room, on any process."""

    type: ClassVar[str] = "workspace.settings"
    ephemeral: ClassVar[bool] = True
    changed: Mapping[str, Any]
    by: str

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "changed": dict(self.changed), "by": self.by}


@dataclass(frozen=True, slots=True)
class RunStarted(Event):
    """A code run began (``path``: ``python path``; ``tests``: ``pytest``), for everyone.
    ``command``: the whole command (``pytest -x -q``); ``by``: who ran it, or for a run of
    the model (``model``) whose turn it is; ``turn``: the model's turn it ran for ("" for a
    person's run)."""

    type: ClassVar[str] = "run.started"
    ephemeral: ClassVar[bool] = True
    run: str
    path: str
    tests: bool
    by: str
    command: str = ""
    model: bool = False
    turn: str = ""


@dataclass(frozen=True, slots=True)
class RunOutput(Event):
    type: ClassVar[str] = "run.output"
    ephemeral: ClassVar[bool] = True
    run: str
    stream: str  # "stdout" | "stderr" | "stdin" (a line someone typed, echoed to everyone)
    text: str


class RunError(StrEnum):
    """Why a run could not start (``run.finished``'s ``error``)."""

    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    BAD_RUN = "bad_run"  # no such file to run, a path or file the sandbox refuses
    SANDBOX_BUSY = "sandbox_busy"  # no free uid for it


@dataclass(frozen=True, slots=True)
class RunFinished(Event):
    """How a run ended: ``status`` ok / failed / timeout / killed / output_truncated; no exit
    code when the sandbox ended it; ``error`` (a ``RunError``) when it could not start.

    The same message goes from the sandbox's task to the room (``run_message_from``) as the
    room sends to every page."""

    type: ClassVar[str] = "run.finished"
    ephemeral: ClassVar[bool] = True
    run: str
    exit_code: int | None
    duration_ms: int
    status: str
    truncated: bool
    message: str
    sandboxed: bool
    error: str = ""

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type, "run": self.run, "exit_code": self.exit_code, "duration_ms": self.duration_ms,
            "status": self.status, "truncated": self.truncated, "message": self.message, "sandboxed": self.sandboxed,
        }
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def refused(cls, run: str, error: RunError, message: str) -> RunFinished:
        """The end of a run that could not start."""
        return cls(
            run=run, exit_code=None, duration_ms=0, status="failed", truncated=False, message=message,
            sandboxed=False, error=error.value,
        )


def run_message_from(data: Mapping[str, Any]) -> RunOutput | RunFinished:
    """A run's message (``run.output`` or ``run.finished``, as its ``payload()``) back from the
    runner's channel; ``ValueError`` for anything else."""
    kind = data.get("type")
    try:
        if kind == RunOutput.type:
            return RunOutput(run=str(data["run"]), stream=str(data["stream"]), text=str(data["text"]))
        if kind == RunFinished.type:
            exit_code = data["exit_code"]
            return RunFinished(
                run=str(data["run"]), exit_code=None if exit_code is None else int(exit_code),
                duration_ms=int(data["duration_ms"]), status=str(data["status"]), truncated=bool(data["truncated"]),
                message=str(data["message"]), sandboxed=bool(data["sandboxed"]), error=str(data.get("error", "")),
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a {kind} message without its fields: {exc!r}") from None
    raise ValueError(f"not a run's message: {kind!r}")


@dataclass(frozen=True, slots=True)
class GuardDiagnostics(Event):
    """The watchdog's findings in one file as it is now (the editor's lint gutter): the whole
    set, replacing the one sent before; an empty set clears them. Sent when they change and
    to a joining page."""

    type: ClassVar[str] = "guard.diagnostics"
    ephemeral: ClassVar[bool] = True
    path: str
    findings: tuple[Mapping[str, object], ...]

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "path": self.path, "findings": [dict(f) for f in self.findings]}


@dataclass(frozen=True, slots=True)
class LineSpan:
    """Lines ``from_line`` to ``to_line`` (1-based, inclusive) of the file at ``path``."""

    path: str
    from_line: int
    to_line: int

    def label(self) -> str:
        """As people read it: ``a.py:12\u201314`` (an en dash; ``a.py:12`` for one line)."""
        lines = str(self.from_line) if self.from_line == self.to_line else f"{self.from_line}\u2013{self.to_line}"
        return f"{self.path}:{lines}"


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One prompt waiting in the room's queue: the turn id it will start with, its text, who
    queued it, its place (1 runs next); ``range``: the lines it is about as it was sent (a
    cursor's line is widened when it starts), or None."""

    turn: str
    prompt: str
    author: str
    position: int
    range: LineSpan | None = None


@dataclass(frozen=True, slots=True)
class QueueState(Event):
    """The room's prompt queue as it stands, in the order the prompts will run: after every
    change, and to a page joining while prompts wait (``live.prompt_queue``)."""

    type: ClassVar[str] = "queue"
    ephemeral: ClassVar[bool] = True
    items: tuple[QueueItem, ...]


@dataclass(frozen=True, slots=True)
class ContextPreview(Event):
    """The answer to ``context.preview``, to the page that asked: what the next request would
    carry (``context``: as ``turn.context``'s, ``live.context.context_payload``); ``text``:
    the prompt it was asked for, so the page knows which of its questions this answers."""

    type: ClassVar[str] = "context"
    ephemeral: ClassVar[bool] = True
    text: str
    context: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SymbolList(Event):
    """The answer to ``symbols``, to the page that asked: the top-level definitions of a
    Python file (``name``, ``kind``, ``first``, ``last`` line); none for a file that is not
    valid Python or does not exist (``exists`` false)."""

    type: ClassVar[str] = "symbols"
    ephemeral: ClassVar[bool] = True
    path: str
    exists: bool
    symbols: tuple[Mapping[str, Any], ...]

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "path": self.path, "exists": self.exists, "symbols": [dict(s) for s in self.symbols]}


@dataclass(frozen=True, slots=True)
class EditSteerState(Event):
    """A steering edit of ``turn`` (``live.edit_steer``): ``state`` ``pending`` (people are
    editing lines the turn wrote or writes: ``path``, ``lines`` [first, last] 1-based as the
    file is now, ``by`` their names; it is committed after ``idle_ms`` without a change
    there), then ``committed``, ``cancelled`` (Esc: their edit stays an ordinary one) or
    ``dropped`` (the turn ended first, or nothing was left changed)."""

    type: ClassVar[str] = "edit_steer"
    ephemeral: ClassVar[bool] = True
    turn: str
    state: str
    path: str = ""
    lines: tuple[int, int] | None = None
    by: tuple[str, ...] = ()
    idle_ms: int = 0


@dataclass(frozen=True, slots=True)
class Presence(Event):
    """Who is in the room: one entry per person and role, however many tabs they have open;
    ``joined``: how many sockets have joined the room since it opened (a join and a leave told
    in one leave the counts as they were; this still grows)."""

    type: ClassVar[str] = "presence"
    ephemeral: ClassVar[bool] = True
    participants: tuple[Participant, ...]
    joined: int = 0


# -- turn events: numbered, logged, replayed ----------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnEvent(Event):
    """An event of one turn (or of the room's turn queue)."""

    turn: str


@dataclass(frozen=True, slots=True)
class TurnStarted(TurnEvent):
    """``range``: the lines the prompt is about (a prompt on a selection, Ctrl+K), as the
    server settled them (clamped to the file, or the block around the cursor); None: the
    whole workspace."""

    type: ClassVar[str] = "turn.started"
    prompt: str
    steered_from: str | None
    effort: Effort
    author: str
    range: LineSpan | None = None


@dataclass(frozen=True, slots=True)
class TurnContext(TurnEvent):
    """What ``turn``'s request carried of the workspace, just after its ``turn.started``:
    paths and line numbers, not the text (``live.context.context_payload``: the files shown
    whole, cut and left out, the symbols shown, the mentions skipped, the files excluded, the
    estimated tokens of the request and the model's context budget)."""

    type: ClassVar[str] = "turn.context"
    context: Mapping[str, Any]

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "context": dict(self.context)}


@dataclass(frozen=True, slots=True)
class TurnQueued(TurnEvent):
    """A prompt waits behind the running turn; ``turn`` is the id it will start with."""

    type: ClassVar[str] = "turn.queued"
    prompt: str
    position: int


@dataclass(frozen=True, slots=True)
class TurnText(TurnEvent):
    """A piece of a turn's text: as many as the model's deltas, so its payload is built
    directly (``dataclasses.asdict`` copies deeply)."""

    text: str

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "text": self.text}

    def encoded(self, seq: int) -> str:
        """``encode(self, seq)``: the same text as the encoder makes of ``payload()`` and the
        seq, without the dict and the encoder's dispatch (a third of a delta's frame)."""
        return f'{{"type":{_STRING(self.type)},"turn":{_STRING(self.turn)},"text":{_TEXT(self.text)},"seq":{seq:d}}}'


@dataclass(frozen=True, slots=True)
class TurnDelta(TurnText):
    """Raw model output: a turn's deltas concatenate to exactly what the model wrote."""

    type: ClassVar[str] = "turn.delta"


@dataclass(frozen=True, slots=True)
class TurnProse(TurnText):
    """The model's text outside edit blocks (the server parses; browsers only render)."""

    type: ClassVar[str] = "turn.prose"


@dataclass(frozen=True, slots=True)
class EditStatus(TurnEvent):
    """A block opened (its first status), progressed, or ended (a final state)."""

    type: ClassVar[str] = "edit.status"
    block: int
    path: str
    state: str
    detail: Mapping[str, object] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return EditState(self.state).is_final

    def payload(self) -> dict[str, Any]:
        return {
            "type": self.type, "turn": self.turn, "block": self.block, "path": self.path,
            "state": self.state, "detail": dict(self.detail),
        }


@dataclass(frozen=True, slots=True)
class TurnSteered(TurnEvent):
    type: ClassVar[str] = "turn.steered"
    steered_from: str
    steer_ms: float


@dataclass(frozen=True, slots=True)
class TurnEditSteered(TurnEvent):
    """``by`` steered ``turn`` by editing lines it wrote or was writing (``live.edit_steer``):
    ``path`` and ``lines`` [first, last] (1-based, their version), ``diff`` what the model had
    written against what they made of it (a unified diff of the region), ``why`` how it was
    committed (``idle``, ``key``: Ctrl+Enter, ``left``: the cursor left the region). Comes
    just before the turn's ``turn.finished`` (``steered``); the steer's ``turn.started`` and
    ``turn.steered`` follow as for any steer."""

    type: ClassVar[str] = "turn.edit_steered"
    path: str
    lines: tuple[int, int]
    by: str
    diff: str
    why: str

    def label(self) -> str:
        return edit_steered_label(self.path, self.lines, self.by)


def edit_steered_label(path: str, lines: Sequence[int], by: str) -> str:
    """How a steer by editing is named: ``steered by editing a.py:12\u201314 (Ana)`` (the steered
    turn's line, the steer's prompt, the replay's mark)."""
    first, last = lines[0], lines[-1]
    where = f"{first}" if first == last else f"{first}\u2013{last}"
    return f"steered by editing {path}:{where} ({by})"


@dataclass(frozen=True, slots=True)
class TurnRound(TurnEvent):
    """The model goes on in the same turn: ``round`` (2 or more) begins. Either its tool calls
    were answered (``calls``: those the round before made; ``failed``: those answered
    ``failed``: a hunk that found nothing, a tool that does not exist, a run that failed), or
    the IDE ran the tests after the round's changes and they failed (``verdict``, with
    ``calls`` 0): the next round is asked to fix them."""

    type: ClassVar[str] = "turn.round"
    round: int
    calls: int
    failed: int
    verdict: str = ""  # a test round's (the IDE ran the tests, they failed): "3 passed, 1 failed"


@dataclass(frozen=True, slots=True)
class TurnRan(TurnEvent):
    """A run of the model for ``turn`` ended (its run tool, or the IDE's test round): the line
    of its turn's transcript ("ran `pytest -q`: failed (exit 1)"). Kept in the event log, so a
    late page and the replay show it too; ``message`` only for a run that never started
    (``error``). The run itself is the run panel's (``run.*``, not kept)."""

    type: ClassVar[str] = "turn.ran"
    run: str
    command: str
    status: str
    exit_code: int | None
    error: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class TurnFinished(TurnEvent):
    type: ClassVar[str] = "turn.finished"
    status: TurnStatus
    reason: FinishReason
    metrics: Mapping[str, float | int | str | None]
    error: str = ""
    by: str = ""  # who stopped, steered or reverted it (their username); "" when nobody did
    # Its tokens and cost (``live.usage.TurnUsage.payload``), and its session's so far with it
    # (None: not counted, as for a turn an earlier owner of the room lost).
    usage: Mapping[str, int | bool | str | None] | None = None
    session_usage: Mapping[str, int | bool | str | None] | None = None

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type, "turn": self.turn, "status": self.status.value, "reason": self.reason.value,
            "metrics": dict(self.metrics),
        }
        if self.error:
            out["error"] = self.error
        if self.by:
            out["by"] = self.by
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.session_usage is not None:
            out["session_usage"] = dict(self.session_usage)
        return out


@dataclass(frozen=True, slots=True)
class HistoryChanged(Event):
    """The history panel has more to show: turn ``turn``'s record (its outcome, the files it
    changed, their diff) is stored. ``turn.finished`` goes out before the record is written,
    so a panel drawn on it may not have the turn's files yet. For every page of the room; not
    kept."""

    type: ClassVar[str] = "history.changed"
    ephemeral: ClassVar[bool] = True
    turn: str


@dataclass(frozen=True, slots=True)
class TurnReverted(TurnEvent):
    type: ClassVar[str] = "turn.reverted"


@dataclass(frozen=True, slots=True)
class TurnRestored(TurnEvent):
    """A revert undone: the turn's edits are back (``restore``)."""

    type: ClassVar[str] = "turn.restored"


@dataclass(frozen=True, slots=True)
class EditReviewed(TurnEvent):
    """A person kept or undid one applied block of ``turn`` (``hunk.keep``/``hunk.undo``):
    ``decision`` ``kept`` or ``undone``, ``by`` their username. An undone block's
    ``edit.status`` (``rolled_back``, reason ``undone``) comes just before."""

    type: ClassVar[str] = "edit.reviewed"
    block: int
    path: str
    decision: str
    by: str


@dataclass(frozen=True, slots=True)
class CheckpointRestored(TurnEvent):
    """``by`` restored ``checkpoint``: its files (``code``: everyone's document changed in one
    step), its conversation (the next request starts from there), or both. ``undo``: the
    checkpoint taken just before, whose restore undoes this one. ``turn``: the turn the
    checkpoint was taken before ("" for a named one). Kept in the event log (the replay's
    timeline marks it; a page that reconnects is told it) but not in a new page's transcript."""

    type: ClassVar[str] = "checkpoint.restored"
    checkpoint: str
    code: bool
    conversation: bool
    by: str
    undo: str


@dataclass(frozen=True, slots=True)
class GuardFinding(TurnEvent):
    """The watchdog found a flaw in what ``turn`` wrote: ``action`` ``halted`` (the stream was
    stopped and the model re-prompted: ``correction`` is that turn) or ``flagged``."""

    type: ClassVar[str] = "guard.finding"
    path: str
    line: int
    rule: str
    severity: str
    message: str
    action: str
    fix: str = ""
    tier: str = ""  # secret / statement / bandit / ruff
    correction: str | None = None


EVENTS: tuple[type[Event], ...] = (
    Hello, Pong, ErrorEvent, Policy, ModelChosen, Resync, DocumentReplaced, RunStarted, RunOutput, RunFinished,
    GuardDiagnostics, Presence, QueueState, EditSteerState, CheckpointCreated, CheckpointRestored, WorkspaceSettings,
    HistoryChanged,
    ContextPreview, SymbolList, TurnStarted, TurnContext, TurnQueued, TurnDelta, TurnProse, EditStatus, TurnEditSteered,
    TurnSteered, TurnRound, TurnRan, TurnFinished, TurnReverted, TurnRestored, EditReviewed, GuardFinding,
)
"""Every event type a client receives on the session socket (the browser's ``EVENT``)."""

_TURN_EVENTS: dict[str, type[TurnEvent]] = {cls.type: cls for cls in EVENTS if issubclass(cls, TurnEvent)}


def turn_event_from(data: Mapping[str, Any]) -> TurnEvent:
    """A stored turn event back from its payload (the room's event log)."""
    fields = {key: value for key, value in data.items() if key not in ("type", "seq")}
    cls = _TURN_EVENTS[str(data["type"])]
    if cls is TurnFinished:
        fields["status"] = TurnStatus(fields["status"])
        fields["reason"] = FinishReason(fields["reason"])
    if cls is TurnStarted and isinstance(fields.get("range"), Mapping):
        fields["range"] = LineSpan(**fields["range"])
    if cls is TurnEditSteered:
        fields["lines"] = tuple(fields["lines"])
    return cls(**fields)
