"""The one retry loop: a call tried again after fixed delays while it fails transiently, shared by a
run's I/O steps (`tasks.run.steps.RetryPolicy`) and object-storage reads (`tasks.sources.storage`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def retried(
    call: Callable[[], T],
    delays: Sequence[float],
    transient: Callable[[BaseException], bool],
    on_retry: Callable[[BaseException, float, int], None] | None = None,
) -> T:
    """`call()`, tried again after each of `delays` while it raises an error `transient` accepts
    (`on_retry(error, delay, attempt)` told before each wait); the last attempt's error propagates."""
    for attempt, delay in enumerate(delays, start=1):
        try:
            return call()
        except Exception as exc:
            if not transient(exc):
                raise
            if on_retry is not None:
                on_retry(exc, delay, attempt)
        time.sleep(delay)
    return call()
