"""Reading a turn's answer as the model streams it (``AnswerReader.read``), up to what ends it.

Each delta is published and applied to the files through the watchdog (``WatchGate.apply``);
the repetition guard and the course's quota may end the turn while the model still writes.
The upstream stream's last event says how the answer ended. What ends it comes back as an
``Ending`` for the Pilot, which ends the turn (``Pilot._finish``) — the one way a turn ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_ide.upstream import Completed, ErrorEvent, Failed, Incomplete, TextDelta

from .events import FinishReason, TurnDelta, TurnEvent, TurnStatus
from .model_link import upstream_failure
from .policy_gate import PolicyGate
from .turns import TurnRun
from .watch_gate import WatchGate


@dataclass(frozen=True, slots=True)
class Ending:
    """How a turn's answer ended. ``upstream_running``: the model may still be writing it (its
    generation is stopped upstream); ``drop_link``: the connection failed for good (the next
    turn opens a new one)."""

    status: TurnStatus
    reason: FinishReason
    error: str = ""
    upstream_running: bool = False
    drop_link: bool = False


NO_ANSWER = Ending(TurnStatus.FAILED, FinishReason.NO_ANSWER, "the model connection ended without an answer")


class AnswerReader:
    """``publish``: the room's turn events; ``policy``: the course's AI policy and its quota;
    ``watchdog``: applies each delta to the files through the security watchdog."""

    def __init__(self, *, publish: Callable[[TurnEvent], None], policy: PolicyGate, watchdog: WatchGate) -> None:
        self._publish = publish
        self._policy = policy
        self._watchdog = watchdog

    async def read(self, run: TurnRun) -> Ending | None:
        """Read ``run``'s answer until something ends it; None when the turn ended otherwise
        meanwhile (stopped, steered) or the watchdog halted it (the Pilot's loop corrects it).
        A stream that ends without a last event is ``NO_ANSWER`` (nothing, if the turn ended
        already: ``Pilot._finish`` ends a turn once)."""
        assert run.stream is not None
        async for event in run.stream:
            if not run.live:
                return None
            if isinstance(event, TextDelta):
                halted, ending = self._delta(run, event.text)
                if halted:
                    return None  # nothing more of this answer is applied
                if ending is not None:
                    return ending
                continue
            return self._last(run, event)
        return NO_ANSWER

    def _delta(self, run: TurnRun, delta: str) -> tuple[bool, Ending | None]:
        """Publish and apply a delta (with those waiting behind it, up to the quota): whether
        the watchdog halted the turn, and what else ends it (a loop, the quota)."""
        text = run.take_delta(delta, self._policy.tokens_left(run.streamed_tokens + 1))
        self._publish(TurnDelta(turn=run.id, text=text))
        if self._watchdog.apply(run, text):
            return True, None
        if run.repetition.feed(text):
            return False, Ending(
                TurnStatus.CANCELLED, FinishReason.REPETITION, "the model was repeating itself; it was stopped",
                upstream_running=True,
            )
        self._policy.refresh()
        self._watchdog.refresh_rules()
        if self._policy.over_quota(run.streamed_tokens):
            return False, Ending(
                TurnStatus.CANCELLED, FinishReason.QUOTA, self._policy.quota_message(), upstream_running=True,
            )
        return False, None

    @staticmethod
    def _last(run: TurnRun, event: Completed | Incomplete | Failed | ErrorEvent) -> Ending:
        """The ending of an answer whose stream ended with ``event``."""
        if isinstance(event, Completed):
            if event.usage is not None:
                run.output_tokens = event.usage.output_tokens
            return Ending(TurnStatus.COMPLETED, FinishReason.ANSWERED)
        if isinstance(event, Incomplete):
            return Ending(TurnStatus.COMPLETED, FinishReason.INCOMPLETE, f"the answer was cut short: {event.reason}")
        reason, error = upstream_failure(event)
        return Ending(
            TurnStatus.FAILED, reason, error, drop_link=isinstance(event, ErrorEvent) and not event.retryable,
        )
