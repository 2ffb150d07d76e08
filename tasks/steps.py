"""The Prefect tasks of a monitor run: load the reference and the batch, run one check, store the run."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.sources import Batch, SourceError, load_file_batch, load_sql_batch, read_sql, read_table


def retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Retry I/O that may recover (a database or file system away for a moment), not bad input."""
    from sqlalchemy.exc import DBAPIError

    from driftline.tasks.history.db import StoreUnavailable

    try:
        state.result()
    except SourceError:
        return False
    except (StoreUnavailable, DBAPIError, OSError):
        return True
    except Exception:
        return False
    return False


# Frames are passed by reference between threads: never hash them for Prefect's cache, never persist them.
IO_RETRIES = {
    "retries": 2,
    "retry_delay_seconds": [1, 4],
    "retry_condition_fn": retry_transient,
    "cache_policy": NO_CACHE,
    "persist_result": False,
}


@task(name="load-reference", **IO_RETRIES)
def load_reference(path: str | None, sql: dict[str, Any] | None) -> pd.DataFrame:
    """The reference snapshot from a file or a SQL query (no window)."""
    if path is not None:
        return read_table(Path(path))
    assert sql is not None
    return read_sql(sql["url"], sql["query"])


@task(name="load-batch", **IO_RETRIES)
def load_batch(path_template: str | None, sql: dict[str, Any] | None, batch_id: str | None) -> Batch:
    """One production batch (the newest when `batch_id` is None)."""
    if path_template is not None:
        return load_file_batch(path_template, batch_id)
    assert sql is not None
    return load_sql_batch(sql["url"], sql["query"], batch_id, sql["window_days"])


@task(name="run-check", task_run_name="check-{check.name}", cache_policy=NO_CACHE, persist_result=False)
def evaluate_check(
    check: Check,
    batch: pd.DataFrame,
    columns: Columns,
    reference: pd.DataFrame,
    reference_hash: str,
    cache: ProfileCache,
) -> list[dict[str, Any]]:
    """Fit (or reuse the cached profile) and evaluate one check; failures become `error` results."""

    def cached_fit(check: Check, reference: pd.DataFrame, columns: Columns) -> Any:
        return cache.get_or_fit(check, reference, columns, reference_hash)

    results = run_check(check, batch, columns, reference=reference, fit=cached_fit)
    return [r.to_dict() for r in results]


@task(name="record-run", **IO_RETRIES)
def record_run_task(database_url: str, record: dict[str, Any]) -> dict[str, Any]:
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
