"""How often a turn applies the model's text: the step window (``SPARK_STEP_MS``).

A room applies the model's text in steps (``live.answer``): the first delta of a response at
once, then at most one step per window, each taking every delta that arrived meanwhile. The
work paid per step (its events and their JSON, the edit engine's document transaction, the
outbox's write to every socket, the watchdog's and the quota's checks) is what limits how many
rooms one process serves, so the window widens with the load it is there for: with one answer
streaming in the process there is no window (a step per delta, the least latency), and each
further answer streaming at once adds ``PER_ANSWER_MS`` up to ``SPARK_STEP_MS`` (4 ms: at
1,000 tokens/s about four tokens a step from five rooms on).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

MOST_MS = 4  # the widest window, unless SPARK_STEP_MS says otherwise
PER_ANSWER_MS = 1.0  # the window each answer streaming beside the first adds


class Steps:
    """One per process, shared by its rooms: how many answers stream, and the window that
    gives. ``most_ms``: the widest window (0: a step per delta, whatever the load);
    ``per_answer_ms``: what each answer beside the first adds."""

    def __init__(self, most_ms: float, per_answer_ms: float = PER_ANSWER_MS) -> None:
        self.most_s = most_ms / 1000
        self.per_answer_s = per_answer_ms / 1000
        self.streaming = 0

    @contextmanager
    def answer(self) -> Iterator[None]:
        """While a response of a turn streams into its room."""
        self.streaming += 1
        try:
            yield
        finally:
            self.streaming -= 1

    def window_s(self) -> float:
        """The step window now, in seconds."""
        others = self.streaming - 1
        if others <= 0:
            return 0.0
        return min(self.most_s, others * self.per_answer_s)
