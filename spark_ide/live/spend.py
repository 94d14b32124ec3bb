"""A person's spend at the Pilot's door: the daily budget, and the session's running totals.

``SpendBook`` reads what the store counts as spent (``SpendSource.spent``: the session's turns,
and the cost of the turns the person asked for today) before a prompt starts, and adds the
turns of this room that ended since but whose record is not written yet. A prompt by someone
whose turns today cost ``SPARK_DAILY_BUDGET_USD`` or more is refused (``budget_exhausted``,
told to the asking connection: how much of what, when it resets); a turn that passes it while
it streams is stopped by the Pilot (``over_budget``), as the course's token quota stops one.
Whose spend counts: the person who prompted (or steered) the turn. Each ended turn's
``turn.finished`` carries its session's totals with it (``finished``). The course's own money
budget is the policy's (``live.policy``). Docs: docs/models.md, "Spend".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from .events import ErrorCode
from .events import ErrorEvent as SessionError
from .policy_gate import PolicyGate
from .turns import Command, TurnRun
from .usage import TurnUsage, usd

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Spent:
    """What counts as spent when a turn starts: ``session``, the session's turns; ``today_usd``,
    the cost of the turns the person asked for today; ``resets_at``, when their day ends (the
    daily budget starts again; None: not known)."""

    session: TurnUsage = field(default_factory=TurnUsage)
    today_usd: Decimal = Decimal(0)
    resets_at: datetime | None = None


class SpendSource(Protocol):
    """Where the spend is stored (``RoomStore.spent``)."""

    async def spent(self, session: str, user_id: int | None) -> Spent:
        """The recorded turns of ``session``, and what those ``user_id`` asked for cost today."""


@dataclass(frozen=True, slots=True)
class _Ended:
    session: str
    user_id: int | None
    usage: TurnUsage


class SpendBook:
    def __init__(self, *, source: SpendSource, daily_budget: Decimal | None) -> None:
        self._source = source
        self.daily_budget = daily_budget
        self._unrecorded: dict[str, _Ended] = {}  # ended turns whose record is not written yet
        # By session and person: as last read, with what ended since.
        self._known: dict[tuple[str, int | None], Spent] = {}
        self._session: str = ""  # whom the running chain's turns count for
        self._user: int | None = None
        self._reading: set[asyncio.Task[Spent]] = set()

    async def read(self, command: Command) -> Spent:
        """What counts as spent for a turn ``command`` starts (a failed read: the last known,
        and the turn is not held up by it). Without a daily budget only the session's totals
        matter, and this room counts them on from its first read: no read after that."""
        known = self._known.get((command.session, command.user_id))
        if known is not None and self.daily_budget is None:
            return known
        try:
            stored = await self._source.spent(command.session, command.user_id)
        except Exception:
            log.exception("could not read the spend; the last one known stays")
            return self._known.get((command.session, command.user_id), Spent())
        session, today = stored.session, stored.today_usd
        for ended in self._unrecorded.values():
            if ended.session == command.session:
                session = session.plus(ended.usage)
            if ended.user_id == command.user_id:
                today += ended.usage.cost
        spent = Spent(session, today, stored.resets_at)
        self._known[command.session, command.user_id] = spent
        return spent

    def refused(self, command: Command, spent: Spent) -> bool:
        """Refuse ``command`` (told to the asking connection) when its person's daily budget is spent."""
        if not self._over(spent.today_usd):
            return False
        if command.reply is not None:
            command.reply(SessionError(
                ErrorCode.BUDGET_EXHAUSTED, self._message(spent, Decimal(0)), ref=command.turn or None,
            ))
        return True

    def started(self, command: Command) -> None:
        """A turn ``command`` asked for starts: its spend counts for its person and session.
        A steer is not held up by a read: its person's last known spend counts (read in the
        background when there is none yet)."""
        self._session, self._user = command.session, command.user_id
        if (command.session, command.user_id) not in self._known and self.daily_budget is not None:
            task = asyncio.ensure_future(self.read(command))
            self._reading.add(task)
            task.add_done_callback(self._reading.discard)

    @property
    def watching(self) -> bool:
        """Whether a running turn's cost must be watched (a daily budget is set)."""
        return self.daily_budget is not None and self._user is not None

    def over_budget(self, cost: Decimal) -> bool:
        """Whether the running turn, having cost ``cost`` so far, passes its person's daily budget."""
        spent = self._known.get((self._session, self._user))
        return self._user is not None and spent is not None and self._over(spent.today_usd + cost)

    def budget_message(self, cost: Decimal) -> str:
        return self._message(self._known.get((self._session, self._user), Spent()), cost)

    def finished(self, turn: str, usage: TurnUsage) -> TurnUsage:
        """``turn`` ended having used ``usage``: counted until its record says so. Returns its
        session's totals with it."""
        self._unrecorded[turn] = _Ended(self._session, self._user, usage)
        key = (self._session, self._user)
        spent = self._known.get(key, Spent())
        spent = replace(spent, session=spent.session.plus(usage), today_usd=spent.today_usd + usage.cost)
        self._known[key] = spent
        return spent.session

    def recorded(self, turn: str) -> None:
        self._unrecorded.pop(turn, None)  # the store counts it from the next read

    def close(self) -> None:
        for task in self._reading:
            task.cancel()

    def _over(self, spent: Decimal) -> bool:
        return self.daily_budget is not None and spent >= self.daily_budget

    def _message(self, spent: Spent, cost: Decimal) -> str:
        budget = usd(self.daily_budget or Decimal(0))
        text = f"you have spent {usd(spent.today_usd + cost)} of your {budget} daily AI budget"
        if spent.resets_at is not None:
            text += f"; it starts again at {spent.resets_at:%H:%M} {spent.resets_at.tzname() or 'UTC'}"
        return text


class Budgets:
    """The money budgets over a running turn: its course's (``PolicyGate``) and its person's
    daily one (``SpendBook``); ``usage``: what a turn has used so far (``TurnBook.usage``)."""

    def __init__(self, policy: PolicyGate, spend: SpendBook, usage: Callable[[TurnRun], TurnUsage]) -> None:
        self._policy = policy
        self._spend = spend
        self._usage = usage

    def exhausted(self, run: TurnRun) -> str | None:
        """Why ``run`` must stop now, having passed a budget (None: it goes on). A model whose
        prices are unknown costs nothing here: its turns pass no budget."""
        course = self._policy.policy.budget_usd is not None
        if not course and not self._spend.watching:
            return None
        cost = self._usage(run).cost_usd
        if cost is None:
            return None
        if course and self._policy.over_budget(cost):
            return self._policy.budget_message(cost)
        if self._spend.over_budget(cost):
            return self._spend.budget_message(cost)
        return None
