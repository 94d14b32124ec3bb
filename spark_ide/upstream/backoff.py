"""Reconnect policy: which close codes are retried and how long to wait between tries."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

# Close codes after which the openai SDK reconnects (UPSTREAM.md): going away, no status,
# abnormal closure, server error, service restart, try again later, TLS handshake.
RETRYABLE_CLOSE_CODES = frozenset({1001, 1005, 1006, 1011, 1012, 1013, 1015})


def is_retryable_close(code: int | None) -> bool:
    """``None`` means no close frame arrived at all, which is an abnormal closure (1006)."""
    return (1006 if code is None else code) in RETRYABLE_CLOSE_CODES


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Jittered exponential backoff: ``initial_s`` doubling up to ``max_s``, ``max_tries`` tries."""

    initial_s: float = 0.5
    max_s: float = 8.0
    max_tries: int = 5
    jitter: float = 0.25

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The waits before tries 2..max_tries (the first try is immediate)."""
        draw = (rng or random.Random()).uniform  # noqa: S311 - jitter, not cryptography
        base = self.initial_s
        for _ in range(self.max_tries - 1):
            yield min(self.max_s, base) * (1.0 + draw(-self.jitter, self.jitter))
            base *= 2.0
