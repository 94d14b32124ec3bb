"""Reconnect policy: retried close codes and the jittered backoff schedule."""

from __future__ import annotations

import random

import pytest

from spark_ide.upstream import RETRYABLE_CLOSE_CODES, RetryPolicy
from spark_ide.upstream.backoff import is_retryable_close


@pytest.mark.parametrize("code", [1001, 1005, 1006, 1011, 1012, 1013, 1015])
def test_it_retries_the_documented_close_codes(code: int) -> None:
    assert is_retryable_close(code)


@pytest.mark.parametrize("code", [1000, 1002, 1003, 1008, 1009, 4000])
def test_it_does_not_retry_other_close_codes(code: int) -> None:
    assert not is_retryable_close(code)


def test_it_treats_a_missing_close_frame_as_abnormal_closure() -> None:
    assert is_retryable_close(None)
    assert frozenset({1001, 1005, 1006, 1011, 1012, 1013, 1015}) == RETRYABLE_CLOSE_CODES


def test_it_backs_off_from_half_a_second_to_eight_within_five_tries() -> None:
    delays = list(RetryPolicy().delays(random.Random(7)))
    assert len(delays) == 4  # five tries: the first is immediate
    nominal = [0.5, 1.0, 2.0, 4.0]
    for delay, base in zip(delays, nominal, strict=True):
        assert base * 0.75 <= delay <= base * 1.25


def test_it_caps_the_delay_at_eight_seconds() -> None:
    delays = list(RetryPolicy(max_tries=10).delays(random.Random(1)))
    assert max(delays) <= 8.0 * 1.25
    assert min(delays[5:]) >= 8.0 * 0.75


def test_it_jitters_between_runs() -> None:
    first = list(RetryPolicy().delays(random.Random(1)))
    second = list(RetryPolicy().delays(random.Random(2)))
    assert first != second
