"""A course's rules for the AI (issue 14): off, explain-only or on, an effort cap, a token quota.

Pure data and checks (no Django): the room reads an ``AiPolicy`` from its store for every
prompt and steer (``RoomStore.ai_policy``), and the Pilot enforces it:

* ``off``: no turn starts; the command is answered with ``error`` ``ai_disabled``;
* ``explain``: the turn runs, but nothing the model writes is applied to the files: its edit
  blocks (and a small model's code fences) are shown in the transcript as text;
* ``on``: turns run as usual.

``edit_steer`` False (the course's ``ai_edit_steer``): a student's edit of the lines the model is
writing is ordinary typing, never a steer (``live.edit_steer``).

In every mode a request above ``max_effort`` is lowered to it, and a student who has used
``token_quota`` output tokens gets no more turns (``ai_quota``), nor one whose turns cost
``budget_usd`` (``budget_exhausted``, docs/models.md "Spend"); a turn that passes the quota or
the budget while it streams is stopped. A workspace outside any course has ``AiPolicy.OPEN``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import ClassVar

from spark_ide.upstream.profiles import EFFORTS, Effort

from .usage import usd


class AiMode(StrEnum):
    OFF = "off"
    EXPLAIN = "explain"
    ON = "on"

    @classmethod
    def known(cls, value: object) -> bool:
        """Whether ``value`` names a mode (a form's input is checked with this)."""
        return value in cls._value2member_map_

    @property
    def word(self) -> str:
        """The mode as people read it: ``explain-only`` (a form's choice, the label's start)."""
        return _MODE_WORDS[self]


_MODE_WORDS = {AiMode.OFF: "off", AiMode.EXPLAIN: "explain-only", AiMode.ON: "on"}
# What a mode means, where its word alone does not say it (the course notice says it).
_MODE_MEANINGS = {AiMode.EXPLAIN: "it answers but does not edit files"}


class AiRuns(StrEnum):
    """Whether the model may run code (the course's ``ai_runs``): the run tool and test rounds."""

    ALLOWED = "allowed"  # the run tool runs files and tests; the IDE runs the tests after a round
    TESTS = "tests"  # the run tool runs the tests only; the IDE runs the tests after a round
    NEVER = "never"  # no run tool, no test rounds: nothing runs on the model's behalf

    @classmethod
    def known(cls, value: object) -> bool:
        return value in cls._value2member_map_

    @property
    def word(self) -> str:
        """How the policy line says it (``runs: tests only``)."""
        return _RUNS_WORDS[self]


_RUNS_WORDS = {AiRuns.ALLOWED: "code and tests", AiRuns.TESTS: "tests only", AiRuns.NEVER: "never"}


class Refusal(StrEnum):
    """Why a prompt may not start (the ``code`` of its ``error``: ``live.events.ErrorCode``)."""

    DISABLED = "ai_disabled"
    QUOTA = "ai_quota"
    BUDGET = "budget_exhausted"


class BadPolicy(ValueError):
    """A stored policy that does not make sense (an unknown mode or effort, a negative quota)."""


@dataclass(frozen=True, slots=True)
class AiPolicy:
    mode: AiMode = AiMode.ON
    max_effort: Effort | None = None  # None: any effort
    token_quota: int | None = None  # output tokens a student may use in the course; None: no limit
    tokens_used: int = 0
    runs: AiRuns = AiRuns.ALLOWED  # what the model may run (the run tool, test rounds)
    budget_usd: Decimal | None = None  # what a student's turns may cost in the course; None: no limit
    cost_used: Decimal = Decimal(0)
    edit_steer: bool = True  # a person's edit of the lines the model writes steers it (live.edit_steer)

    OPEN: ClassVar[AiPolicy]  # outside a course: everything allowed (set below)

    def __post_init__(self) -> None:
        if not isinstance(self.mode, AiMode):
            raise BadPolicy(f"unknown AI mode {self.mode!r}")
        if self.max_effort is not None and self.max_effort not in EFFORTS:
            raise BadPolicy(f"unknown effort {self.max_effort!r}; one of {list(EFFORTS)}")
        if self.token_quota is not None and self.token_quota < 0:
            raise BadPolicy(f"a token quota cannot be negative ({self.token_quota})")
        if self.tokens_used < 0:
            raise BadPolicy(f"tokens used cannot be negative ({self.tokens_used})")
        if self.budget_usd is not None and not self.budget_usd >= 0:
            raise BadPolicy(f"a budget cannot be negative ({self.budget_usd})")
        if not isinstance(self.runs, AiRuns):
            raise BadPolicy(f"unknown ai_runs {self.runs!r}; one of {[r.value for r in AiRuns]}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, object] | None) -> AiPolicy:
        """The policy from the classroom's ``ai_policy_for`` (None: not in a course)."""
        if data is None:
            return cls.OPEN
        mode = data.get("mode", AiMode.ON.value)
        try:
            ai_mode = AiMode(str(mode))
        except ValueError:
            raise BadPolicy(f"unknown AI mode {mode!r}; one of {[m.value for m in AiMode]}") from None
        effort = data.get("max_effort")
        if effort is not None and _effort(effort) is None:
            raise BadPolicy(f"unknown effort {effort!r}; one of {list(EFFORTS)}")
        quota, used = data.get("token_quota"), data.get("tokens_used", 0)
        if quota is not None and (not isinstance(quota, int) or isinstance(quota, bool)):
            raise BadPolicy(f"the token quota must be a whole number, not {quota!r}")
        if not isinstance(used, int) or isinstance(used, bool):
            raise BadPolicy(f"tokens used must be a whole number, not {used!r}")
        runs = data.get("ai_runs", AiRuns.ALLOWED.value)
        if not AiRuns.known(runs):
            raise BadPolicy(f"unknown ai_runs {runs!r}; one of {[r.value for r in AiRuns]}")
        edit_steer = data.get("ai_edit_steer", True)
        if not isinstance(edit_steer, bool):
            raise BadPolicy(f"ai_edit_steer must be true or false, not {edit_steer!r}")
        return cls(
            mode=ai_mode, max_effort=_effort(effort), token_quota=quota, tokens_used=used, runs=AiRuns(str(runs)),
            budget_usd=_money(data.get("budget_usd"), "the budget", none=True),
            cost_used=_money(data.get("cost_used", 0), "the cost used") or Decimal(0),
            edit_steer=edit_steer,
        )

    # -- the checks ---------------------------------------------------------------------------

    def tokens_left(self, spent: int = 0) -> int | None:
        """Tokens the student may still use (``spent``: counted here but not yet in
        ``tokens_used``); None: no quota."""
        if self.token_quota is None:
            return None
        return max(self.token_quota - self.tokens_used - spent, 0)

    def over_quota(self, spent: int = 0) -> bool:
        left = self.tokens_left(spent)
        return left is not None and left <= 0

    def money_left(self, spent: Decimal = Decimal(0)) -> Decimal | None:
        """What the student's turns may still cost in the course (``spent``: counted here but
        not yet in ``cost_used``); None: no budget."""
        if self.budget_usd is None:
            return None
        return max(self.budget_usd - self.cost_used - spent, Decimal(0))

    def over_budget(self, spent: Decimal = Decimal(0)) -> bool:
        left = self.money_left(spent)
        return left is not None and left <= 0

    def refusal(self, spent: int = 0, spent_usd: Decimal = Decimal(0)) -> tuple[Refusal, str] | None:
        """Why a prompt or steer may not start now, with the message for the student; None: it may."""
        if self.mode is AiMode.OFF:
            return Refusal.DISABLED, "the AI is turned off for this course"
        if self.over_quota(spent):
            return Refusal.QUOTA, self.quota_message()
        if self.over_budget(spent_usd):
            return Refusal.BUDGET, self.budget_message(spent_usd)
        return None

    def quota_message(self) -> str:
        return f"you have used your {self.token_quota or 0:,} AI tokens for this course"

    def budget_message(self, spent: Decimal = Decimal(0)) -> str:
        """The course's budget is spent: how much of how much (it does not reset)."""
        return (f"you have spent {usd(self.cost_used + spent)} of your {usd(self.budget_usd or Decimal(0))} "
                "AI budget for this course")

    def effort(self, requested: Effort) -> Effort:
        """The effort a request runs with: ``requested``, lowered to the cap if above it."""
        if self.max_effort is None or EFFORTS.index(requested) <= EFFORTS.index(self.max_effort):
            return requested
        return self.max_effort

    @property
    def model_runs(self) -> bool:
        """Whether anything runs on the model's behalf: its run tool, the IDE's test rounds
        (neither in explain-only mode, nor with ``ai_runs`` never)."""
        return self.edits_apply and self.runs is not AiRuns.NEVER

    @property
    def tests_only(self) -> bool:
        """Whether the model's runs are held to ``pytest`` commands."""
        return self.runs is AiRuns.TESTS

    @property
    def edits_apply(self) -> bool:
        """Whether the model's edit blocks change the files (not in explain-only mode)."""
        return self.mode is AiMode.ON

    def label(self, spent: int = 0, spent_usd: Decimal = Decimal(0)) -> str:
        """One line for the student: ``AI: explain-only · 12,400 tokens left · $0.42 left``
        (just ``AI: off`` when off: an effort cap or tokens left mean nothing then)."""
        left, money = self.tokens_left(spent), self.money_left(spent_usd)
        return " · ".join(self._terms(
            None if left is None else f"{left:,} tokens left", None if money is None else f"{usd(money)} left",
        ))

    def rules(self) -> str:
        """The rules in one sentence, as a student's page says them before any turn: ``AI:
        explain-only (it answers but does not edit files), effort up to low, 20,000 tokens for
        the course.`` (the tokens given, not those left: ``label`` counts those down)."""
        quota = None if self.token_quota is None else f"{self.token_quota:,} tokens for the course"
        budget = None if self.budget_usd is None else f"{usd(self.budget_usd)} of AI use for the course"
        return ", ".join(self._terms(quota, budget, explained=True)) + "."

    def _terms(self, tokens: str | None, money: str | None = None, *, explained: bool = False) -> list[str]:
        meaning = _MODE_MEANINGS.get(self.mode) if explained else None
        terms = [f"AI: {self.mode.word}" + (f" ({meaning})" if meaning else "")]
        if self.mode is AiMode.OFF:
            return terms
        if self.max_effort is not None:
            terms.append(f"effort up to {self.max_effort}")
        if self.runs is not AiRuns.ALLOWED:
            terms.append(f"runs: {self.runs.word}")
        if not self.edit_steer:
            terms.append("no steering by editing")
        terms.extend(term for term in (tokens, money) if term is not None)
        return terms


AiPolicy.OPEN = AiPolicy()


def _money(value: object, what: str, *, none: bool = False) -> Decimal | None:
    """A sum of money as stored (a Decimal, or its text); None when ``none`` allows it."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise BadPolicy(f"{what} must be an amount of money, not {value!r}")
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise BadPolicy(f"{what} must be an amount of money, not {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise BadPolicy(f"{what} must be an amount of money, not {value!r}")
    return amount


def _effort(value: object) -> Effort | None:
    for effort in EFFORTS:
        if value == effort:
            return effort
    return None
