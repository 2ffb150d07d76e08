"""The I/O steps of a monitor run (load the reference and the batch, evaluate a check, store the run)
and the retry policy they share under every engine."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.evidence import grade_results
from driftline.checks.result import CheckResult
from driftline.checks.runner import run_check
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.sources import Batch, DataSource, SourceError, open_source
from driftline.tasks.sources.read_limits import DEFAULT_LIMITS, ReadLimits
from driftline.tasks.tools.retry import retried

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """True for I/O that may recover (a database or file system away for a moment), not bad input nor
    a value the database refuses (`tasks.history.failures`)."""
    from sqlalchemy.exc import DBAPIError

    from driftline.tasks.history.db import StoreUnavailable
    from driftline.tasks.history.failures import is_outage

    if isinstance(exc, SourceError):
        return False
    return isinstance(exc, StoreUnavailable | DBAPIError | OSError) and is_outage(exc)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and after how long a step is retried when it fails transiently."""

    delays: tuple[float, ...] = (1.0, 4.0)

    @property
    def retries(self) -> int:
        return len(self.delays)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, retried after each delay while it raises a transient error."""
        return retried(functools.partial(fn, *args), self.delays, is_transient)


IO_RETRIES = RetryPolicy()


def require_reference(spec: MonitorSpec) -> None:
    """A reference that is not there is named before anything is loaded or recorded (the reference
    itself is read later, and only when a profile has to be fitted)."""
    open_source(spec, spec.reference, "reference").require()


def load_reference(source: DataSource, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
    """The reference snapshot (a query without window), read within `limits`."""
    return source.read(limits)


def load_batch(source: DataSource, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
    """One production batch (the newest when `batch_id` is None), read within `limits`."""
    return source.read_batch(batch_id, limits)


def evaluate_check(
    check: Check,
    batch: pd.DataFrame,
    columns: Columns,
    reference: pd.DataFrame,
    reference_hash: str,
    cache: ProfileCache,
) -> list[CheckResult]:
    """Fit (or reuse the cached profile) and evaluate one check; failures become `error` results."""

    def cached_fit(check: Check, reference: pd.DataFrame, columns: Columns) -> Any:
        return cache.get_or_fit(check, reference, columns, reference_hash)

    return run_check(check, batch, columns, reference=reference, fit=cached_fit)


def record_run_step(database_url: str, record: dict[str, Any]) -> dict[str, Any]:
    """Write the run and all its results in one idempotent transaction."""
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.store import record_run

    with connected_store(database_url) as engine:
        written = record_run(engine, **record)
    return {"run_id": written.run_id, "results": written.results}


def parse_record_times(record: dict[str, Any]) -> dict[str, Any]:
    """Undo the JSON encoding of `batch_time` in a spooled record."""
    value = record["batch_time"]
    return {**record, "batch_time": datetime.fromisoformat(value) if isinstance(value, str) else value}


def grade_run(results: list[CheckResult], confidence: float) -> list[CheckResult]:
    """Every result graded at the run's family-wise confidence: all the run's graded metrics, from
    every check, count as one family (`checks.evidence`)."""
    return grade_results(results, confidence)
