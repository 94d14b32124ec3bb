"""The course's AI policy at the Pilot's door (``live.policy`` says what it allows).

``PolicyGate`` keeps the policy as last read from storage, fresh for a moment (a teacher may
change it, the quota is spent while the room is open), and counts the tokens of the turns
that ended since: a prompt or steer it refuses is told to the asking connection
(``ai_disabled``, ``ai_quota``, ``budget_exhausted``), a turn that passes the quota or the
course's money budget while it streams is stopped by the Pilot (``over_quota``,
``over_budget``), and everyone in a course's room is told the policy as it stands
(``policy``) after each turn and on a refusal.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Protocol

from .events import ErrorCode, Event, Policy
from .events import ErrorEvent as SessionError
from .policy import AiPolicy, Refusal
from .turns import Command

log = logging.getLogger(__name__)

POLICY_FRESH_S = 2.0  # a course's AI policy read for a prompt serves the commands of the next seconds


class PolicySource(Protocol):
    """Where the policy is stored (``RoomStore.ai_policy``)."""

    async def ai_policy(self) -> AiPolicy: ...


_ERROR_CODES = {
    Refusal.DISABLED: ErrorCode.AI_DISABLED, Refusal.QUOTA: ErrorCode.AI_QUOTA,
    Refusal.BUDGET: ErrorCode.BUDGET_EXHAUSTED,
}


class PolicyGate:
    def __init__(self, *, source: PolicySource, announce: Callable[[Event], None]) -> None:
        self._source = source
        self._announce = announce
        self.policy = AiPolicy.OPEN
        self._read_at = float("-inf")
        self._reading: asyncio.Future[AiPolicy] | None = None  # the read in flight (``read``)
        # Tokens and cost of ended turns whose record is not written yet.
        self._unrecorded: dict[str, tuple[int, Decimal]] = {}
        self._spent = 0  # tokens of ended turns the last read may not count
        self._spent_usd = Decimal(0)  # and their cost
        self._shown = False  # a course's policy was announced (outside courses nothing is)
        self._refresh: asyncio.Task[AiPolicy] | None = None  # read while a turn streams

    async def read(self) -> AiPolicy:
        """The policy as stored, read again when the last read is more than a moment old. One
        read at a time: those who ask meanwhile (the pages of a reconnect storm, each joining)
        share it."""
        now = time.monotonic()
        if now - self._read_at < POLICY_FRESH_S:
            return self.policy
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._fetch())
        return await asyncio.shield(self._reading)  # one asker going away does not end it for all

    async def _fetch(self) -> AiPolicy:
        try:
            policy = await self._source.ai_policy()
        except Exception:
            log.exception("could not read the AI policy; the last one read stays")
            return self.policy
        self.policy, self._read_at = policy, time.monotonic()
        # Tokens of turns whose record was written are in what was read; the others are not.
        self._spent = sum(tokens for tokens, _ in self._unrecorded.values())
        self._spent_usd = sum((cost for _, cost in self._unrecorded.values()), Decimal(0))
        return policy

    def refresh(self) -> None:
        """While a turn streams, read the policy again in the background once it is stale: a
        steer then finds it fresh (no read on its way), and a quota lowered mid-turn counts."""
        stale = time.monotonic() - self._read_at >= POLICY_FRESH_S
        if stale and (self._refresh is None or self._refresh.done()):
            self._refresh = asyncio.create_task(self.read())

    def refused(self, command: Command, policy: AiPolicy) -> bool:
        """Refuse ``command`` (told to the asking connection) when the policy forbids a turn."""
        refusal = policy.refusal(self._spent, self._spent_usd)
        if refusal is None:
            return False
        code, message = refusal
        if command.reply is not None:
            command.reply(SessionError(_ERROR_CODES[code], message, ref=command.turn or None))
        self._show()
        return True

    def over_quota(self, streamed: int) -> bool:
        """Whether a turn that has streamed ``streamed`` tokens so far passes the quota."""
        return self.policy.over_quota(self._spent + streamed)

    def tokens_left(self, streamed: int) -> int | None:
        """Tokens a turn that has streamed ``streamed`` may still stream before it passes the
        quota (None: no quota)."""
        return self.policy.tokens_left(self._spent + streamed)

    def quota_message(self) -> str:
        return self.policy.quota_message()

    def over_budget(self, cost: Decimal) -> bool:
        """Whether a turn that has cost ``cost`` so far passes the course's money budget."""
        return self.policy.over_budget(self._spent_usd + cost)

    def budget_message(self, cost: Decimal) -> str:
        return self.policy.budget_message(self._spent_usd + cost)

    def spend(self, turn: str, tokens: int, cost: Decimal = Decimal(0)) -> None:
        """``turn`` ended having used ``tokens`` output tokens costing ``cost``, until its
        record says so."""
        self._unrecorded[turn] = (tokens, cost)
        self._spent += tokens
        self._spent_usd += cost
        self._show()

    def recorded(self, turn: str) -> None:
        self._unrecorded.pop(turn, None)  # the stored tokens used count it from the next read

    def _show(self) -> None:
        """Tell everyone the policy (``policy``) if the room is in a course, or was."""
        if self.policy != AiPolicy.OPEN or self._shown:
            self._shown = True
            self._announce(self.event())

    def event(self) -> Policy:
        """The policy as it stands for the student (``policy``: on join, after each turn)."""
        policy, spent = self.policy, self._spent
        return Policy(
            mode=policy.mode.value, max_effort=policy.max_effort, token_quota=policy.token_quota,
            tokens_left=policy.tokens_left(spent), label=policy.label(spent, self._spent_usd),
            edit_steer=policy.edit_steer,
        )

    async def current(self) -> Policy | None:
        """For a joining page: ``event`` after reading the policy if the last read is stale;
        None for a workspace outside a course (nothing to show)."""
        policy = await self.read()
        return self.event() if policy != AiPolicy.OPEN or self._shown else None

    def close(self) -> None:
        for reading in (self._refresh, self._reading):
            if reading is not None:
                reading.cancel()
