"""What a room needs from storage and settings, as small protocols the Django side implements.

The live engine never imports Django: ``spark_ide.pairing.adapter`` gives it a ``RoomStore``
(the workspace's document, its turn-event log and turn records, in the database) and
``LiveSettings`` (from Django settings and the environment).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from spark_ide.editing.limits import FileLimits
from spark_ide.guard import GuardMode
from spark_ide.upstream import ModelClient
from spark_ide.upstream.catalogue import ModelEntry

from .checkpoints import KEEP, Checkpoint, Saved
from .events import RunError, RunFinished, RunOutput, TurnEvent
from .meter import NO_METER, Meter
from .policy import AiPolicy
from .prompting import PromptStyle
from .reopen import StoredPast
from .run_report import RUN_OUTPUT_TO_MODEL
from .spend import Spent
from .steps import MOST_MS, Steps
from .usage import TurnUsage
from .watchdog import GuardSettings


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One entry of the room's turn-event log. Runs of deltas (or prose) of a turn may be
    stored merged: ``first_seq`` is the seq of the first event the entry stands for.

    ``at``: when it was published, in ms since the Unix epoch (for a merged run: its first
    part); ``until``: when its last part was (``at`` for a single event). None for entries
    stored before the log kept times."""

    seq: int
    first_seq: int
    event: TurnEvent
    at: int | None = None
    until: int | None = None


@dataclass(frozen=True, slots=True)
class RoomState:
    """What a room starts from."""

    document: bytes  # the document's state as one Yjs update
    epoch: int  # this opening's number: 1 the first time, one more each time after
    unfinished: tuple[str, ...] = ()  # turns recorded as running by an earlier owner
    generation: int = 0  # which document it is (``Room.replace_document``: one more each time)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A turn as started: who asked what, in which session."""

    turn: str
    session: str
    author_id: int | None
    prompt: str
    effort: str
    active_path: str
    steered_from: str | None
    model: str = ""  # the catalogue entry's name it runs on ("": not from a catalogue)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """A turn as it ended."""

    turn: str
    status: str
    reason: str
    output: str
    ledger: list[dict[str, Any]]
    diff: dict[str, str]
    metrics: Mapping[str, float | int | str | None]
    error: str = ""
    usage: TurnUsage = field(default_factory=TurnUsage)  # its tokens and cost (live.usage)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A code run as started: who ran what, in which session."""

    run: str
    session: str
    author_id: int | None
    path: str
    tests: bool
    command: str = ""  # as run.started has it: "pytest -x -q", "python main.py 3"
    by_model: bool = False  # run by the model (its run tool, or the IDE's test round)
    turn: str = ""  # the model's turn it ran for


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A code run as it ended, with what it printed (as far as the sandbox let it)."""

    run: str
    status: str
    exit_code: int | None
    duration_ms: int
    output: str
    message: str


RunMessage = RunOutput | RunFinished
"""A run's message from the runner: what it printed, then how it ended (the last one)."""


def run_refused(run: str, message: str) -> RunFinished:
    """The ``run.finished`` of a run that could not start (the sandbox is not there for it)."""
    return RunFinished.refused(run, RunError.SANDBOX_UNAVAILABLE, message)


class Runner(Protocol):
    """Runs code in the sandbox (``spark_ide.sandbox``) for a room; injected by the Django side."""

    async def start(
        self, run: str, files: Mapping[str, str], *, path: str, tests: bool, on_message: Callable[[RunMessage], None],
        args: Sequence[str] = (),
    ) -> None:
        """Start the run (``args``: the words after the file or after ``pytest``, as
        ``live.run_command.RunCommand`` has them); its messages come to ``on_message`` (on the
        room's loop), the last one ``run.finished``."""

    def send_input(self, run: str, text: str) -> None: ...

    def stop(self, run: str) -> None: ...


class NoRunner:
    """Where code runs are not set up: every run ends at once, refused."""

    async def start(
        self, run: str, files: Mapping[str, str], *, path: str, tests: bool, on_message: Callable[[RunMessage], None],
        args: Sequence[str] = (),
    ) -> None:
        on_message(run_refused(run, "code runs are not set up on this server"))

    def send_input(self, run: str, text: str) -> None:
        return None

    def stop(self, run: str) -> None:
        return None


class RoomStore(Protocol):
    """Storage of one workspace's room. Every method may raise; the room retries or reports."""

    async def open(self) -> RoomState:
        """Load (or build from the files) the document; start a new epoch."""

    async def append_update(self, update: bytes) -> int:
        """Persist one document update; returns its id (compaction deletes up to an id)."""

    async def compact(self, state: bytes, *, through_id: int) -> None:
        """Replace the stored state by ``state``, which holds every update up to ``through_id``."""

    async def replace_document(self, state: bytes, *, generation: int, previous: bytes | None) -> None:
        """The document was replaced by ``state``, a new one (fresh ids) of ``generation``; keep
        ``previous``, the whole one it replaced, for pages that still hold it (None: none)."""

    async def previous_document(self, generation: int) -> bytes | None:
        """The whole document of ``generation`` if it is the one before the stored one, else None."""

    async def write_files(self, texts: Mapping[str, str], current: Callable[[], bool] = lambda: True) -> bool:
        """Bring the materialised file rows (listings, export) in line with the document's
        ``texts``. ``current()``, asked once the rows are written and before they are kept:
        are ``texts`` still as new as the rows? False: nothing is kept, and False is returned
        (a change over HTTP wrote its row meanwhile, which the older texts would undo)."""

    async def append_events(self, events: Sequence[StoredEvent]) -> None: ...

    async def events_after(self, seq: int, *, limit: int) -> list[StoredEvent]:
        """Stored events with ``seq`` greater than ``seq``, oldest first, at most ``limit``."""

    async def recent_events(self, *, turns: int, deltas_of: str | None) -> list[StoredEvent]:
        """The stored events of the last ``turns`` turns, oldest first (a new page's transcript);
        raw deltas only of the turn ``deltas_of`` (the running one)."""

    async def turn_started(self, record: TurnRecord) -> None: ...

    async def turn_finished(self, outcome: TurnOutcome) -> None: ...

    async def turn_reverted(self, turn: str) -> None: ...

    async def turn_restored(self, turn: str) -> None:
        """A revert of ``turn`` undone: it is no longer reverted."""

    async def stored_past(self, *, turns: int) -> StoredPast:
        """The turn records a reopened room's conversation is rebuilt from (``live.reopen``):
        the newest ``turns`` ended turns that are not steered, with their chains."""

    async def run_started(self, record: RunRecord) -> None: ...

    async def checkpoint_save(self, checkpoint: Checkpoint, *, keep: int) -> Saved:
        """Store ``checkpoint`` content-addressed (``live.checkpoints``), then keep only the
        newest ``keep`` checkpoints and the blobs they refer to."""

    async def checkpoint_load(self, checkpoint: str) -> Checkpoint | None:
        """This workspace's checkpoint of that id, whole; None when it has none (another
        workspace's id included)."""

    async def run_finished(self, outcome: RunOutcome) -> None: ...

    async def ai_policy(self) -> AiPolicy:
        """The AI rules of the workspace's course as they stand now (``AiPolicy.OPEN`` outside
        a course); read for every prompt and steer (live.policy)."""

    async def spent(self, session: str, user_id: int | None) -> Spent:
        """The recorded usage of ``session``'s turns, and the cost of the turns ``user_id``
        asked for today (live.spend); read for every prompt."""

    async def guard_mode(self) -> GuardMode:
        """The security watchdog's mode for this workspace (its course's, for a student's copy)."""

    async def auto_test(self) -> bool | None:
        """The workspace's own choice of test rounds (the page's switch): None when it made
        none, and the server's ``SPARK_AUTO_TEST`` decides (``LiveSettings.auto_test``)."""

    async def model_entry(self) -> ModelEntry | None:
        """The catalogue's entry the workspace's turns run on now (the owner's pick, within its
        course's models; docs/models.md); None: no catalogue here, ``LiveSettings.connect_model``."""

    async def close(self) -> None:
        """The room is closing: stop sending other threads' requests to it (its last writes
        still come through this store)."""


ModelConnector = Callable[[str], Awaitable[ModelClient]]
"""Opens a warm model client; its argument is the instructions to warm the connection with."""
EntryConnector = Callable[[ModelEntry, str], Awaitable[ModelClient]]
"""Opens a warm client for a catalogue entry (``RoomStore.model_entry``), warmed with the instructions."""


@dataclass(frozen=True)
class LiveSettings:
    connect_model: ModelConnector
    prompt_style: PromptStyle = field(default_factory=PromptStyle)  # how turns are put to the model
    limits: FileLimits = field(default_factory=FileLimits)
    replay_limit: int = 5000  # events a reconnecting client may be sent; past it: resync
    replay_bytes: int = 1_000_000  # about what a room's memory log of events keeps (live.replay)
    transcript_turns: int = 20  # turns a new page's transcript shows at most
    transcript_bytes: int = 512_000  # and at most this much of their text (whole turns)
    idle_close_s: float = 30.0  # a room with nobody in it and no turn closes after this
    persist_retries: tuple[float, ...] = (0.05, 0.2, 0.8)  # waits between tries of a failed write
    compact_every: int = 500  # document updates between compactions
    # Every this many turns the room looks whether its document is over ``replace_ratio``
    # times its text plus ``replace_slack_bytes``; if so it replaces it (``Room.replace_document``).
    replace_check_turns: int = 10
    replace_ratio: int = 4
    replace_slack_bytes: int = 64 * 1024
    materialize_after_s: float = 0.2  # file rows follow the document this long after a change
    # Turn events are stored at most this often: they were sent already, and the memory log
    # replays the last of them (``replay_bytes``). Each write holds the GIL in the database thread
    # (rows, JSON, the ORM) while the event loop waits for it, so with many rooms fewer,
    # larger writes (runs of deltas merged) keep the loop free (the rooms benchmark).
    log_batch_s: float = 0.5
    meter: Meter = NO_METER  # what the room tells the operator's metrics (spark_ide.ops.metrics)
    runner: Runner = field(default_factory=NoRunner)  # code runs in the sandbox (spark_ide.pairing.runs)
    guard: GuardSettings = field(default_factory=GuardSettings)  # the security watchdog (live.watchdog)
    # Test rounds (SPARK_AUTO_TEST): after a round that changed files the IDE runs the tests
    # of a workspace that has some, and a failure starts the next round (a workspace's own
    # switch wins: ``RoomStore.auto_test``); the model is told at most this much of a run's
    # output (SPARK_RUN_OUTPUT_TO_MODEL); a model's run waits at most this long for a
    # person's run to end.
    auto_test: bool = True
    run_output_to_model: int = RUN_OUTPUT_TO_MODEL
    model_run_wait_s: float = 30.0
    checkpoints_keep: int = KEEP  # SPARK_CHECKPOINTS_KEEP: checkpoints kept per workspace (live.checkpoints)
    # The model catalogue (docs/models.md, ``live.room_models``): how a room reaches the entry
    # its store names, and how turns on that entry are put to the model (its context budget,
    # output ceiling, dialect). None: rooms run on ``connect_model`` and ``prompt_style``.
    connect_entry: EntryConnector | None = None
    style_for: Callable[[ModelEntry], PromptStyle] | None = None
    # A stamp of what the room's model connection is opened with (the owner's stored keys),
    # read before each turn: when it changed, the turn opens a new connection (``ModelLink``).
    model_stamp: Callable[[], Awaitable[str]] | None = None
    # SPARK_DAILY_BUDGET_USD: what the turns a person asks for may cost a day (live.spend; None: no limit).
    daily_budget_usd: Decimal | None = None
    # The catalogue's entry of the model the rooms' links reach (its prices count the turns'
    # cost); None: not from the catalogue, the prices unknown. The catalogue sets each
    # room's link's own (``ModelLink.entry``).
    model_entry: ModelEntry | None = None
    # SPARK_EDIT_STEER_IDLE_MS: a steering edit is committed this long after the last change
    # in its lines (live.edit_steer); 0 turns steering by editing off for the server.
    edit_steer_idle_ms: int = 600
    # How often a turn applies the model's text (live.steps): one per process, shared by its
    # rooms; its widest window is SPARK_STEP_MS.
    steps: Steps = field(default_factory=lambda: Steps(MOST_MS))
