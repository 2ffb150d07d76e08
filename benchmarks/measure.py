"""Timing and memory measurement shared by the benchmarks."""

from __future__ import annotations

import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def measure(fn: Callable[[], T]) -> tuple[T, float, float]:
    """Result, wall seconds and traced peak memory (MB) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, seconds, peak


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """A fixed-width text table: first column left-aligned, numbers to 3 significant digits."""

    def cell(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    cells = [header, *[tuple(cell(v) for v in row) for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    )
