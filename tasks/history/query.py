"""Reading the history back: metric time series, recent runs, and the stored results of one batch.

All times come back timezone-aware in UTC, whichever database stored them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Engine, Row, Select, Table, select

from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import ResultRow, Run, utcnow
from driftline.tasks.history.store import NO_METRIC, STALE_AFTER

RUNS: Table = Run.__table__  # type: ignore[assignment]
RESULTS: Table = ResultRow.__table__  # type: ignore[assignment]
HISTORY_COLUMNS = ("batch_id", "batch_time", "check", "target", "metric", "value", "severity", "status")
RUN_COLUMNS = (
    "heartbeat_at",
    "id",
    "monitor",
    "batch_id",
    "batch_time",
    "started_at",
    "finished_at",
    "status",
    "worst_severity",
    "rows",
    "flow_run_id",
    "details",
)
RESULT_FIELDS = ("status", "severity", "rows", "failing_rows", "model_impact", "details", "reason")


def read_history(
    engine: Engine,
    monitor: str,
    *,
    check: str | None = None,
    target: str | None = None,
    metric: str | None = None,
    since: datetime | None = None,
    last_runs: int | None = None,
) -> pd.DataFrame:
    """The stored metric values of `monitor`, oldest batch first, optionally filtered.

    Columns: batch_id, batch_time (UTC), check, target, metric, value (float, NaN where none was
    stored), severity, status. `since` keeps batches at or after that time (naive means UTC);
    `last_runs` keeps the monitor's newest N batches, so a read costs what it shows, not the history.
    """
    query = select(*(RESULTS.c[name] for name in HISTORY_COLUMNS)).where(RESULTS.c.monitor == monitor)
    if last_runs is not None:
        query = query.where(RESULTS.c.batch_id.in_(newest_batches(monitor, last_runs)))
    for name, wanted in (("check", check), ("target", target), ("metric", metric)):
        if wanted is not None:
            query = query.where(RESULTS.c[name] == wanted)
    if since is not None:
        query = query.where(RESULTS.c.batch_time >= as_utc(since))
    order = ("batch_time", "batch_id", "check", "target", "metric")
    query = query.order_by(*(RESULTS.c[name] for name in order))
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return _history_frame(rows)


def newest_batches(monitor: str, count: int) -> Select[tuple[str]]:
    """The ids of the monitor's newest `count` batches, as a subquery (served by ix_runs_monitor_time)."""
    if count < 1:
        raise ValueError(f"the number of runs must be at least 1, got {count}")
    return (
        select(RUNS.c.batch_id)
        .where(RUNS.c.monitor == monitor)
        .order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())
        .limit(count)
    )


def list_runs(engine: Engine, monitor: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The most recent runs (of one monitor, or all), newest batch first, as plain dicts."""
    query = select(*(RUNS.c[name] for name in RUN_COLUMNS))
    if monitor is not None:
        query = query.where(RUNS.c.monitor == monitor)
    query = query.order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc()).limit(limit)
    with engine.connect() as conn:
        runs = [_run_dict(row) for row in conn.execute(query).mappings()]
    stale_before = utcnow() - STALE_AFTER
    for run in runs:
        last_sign = run.pop("heartbeat_at") or run["started_at"]
        if run["status"] == "running" and last_sign < stale_before:
            run["status"] = "abandoned"
    return runs


def latest_results(engine: Engine, monitor: str, batch_id: str | None = None) -> list[dict[str, Any]]:
    """The stored results of one batch (the newest when `batch_id` is None), each in the result format
    of docs/design.md.

    Metric rows are folded back into one result per (check, target), in the order they were first
    stored; an empty list when nothing is stored.
    """
    with engine.connect() as conn:
        if batch_id is None:
            newest = select(RUNS.c.batch_id).where(RUNS.c.monitor == monitor)
            batch_id = conn.execute(
                newest.order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc()).limit(1)
            ).scalar_one_or_none()
            if batch_id is None:
                return []
        rows = conn.execute(
            select(RESULTS)
            .where(RESULTS.c.monitor == monitor, RESULTS.c.batch_id == batch_id)
            .order_by(RESULTS.c.id)
        ).mappings()
        return _fold_results(rows)


def _history_frame(rows: Sequence[Row[Any]]) -> pd.DataFrame:
    """A typed frame of history rows (also when there are none)."""
    frame = pd.DataFrame.from_records([tuple(row) for row in rows], columns=list(HISTORY_COLUMNS))
    text_columns = ["batch_id", "check", "target", "metric", "severity", "status"]
    frame[text_columns] = frame[text_columns].astype("str")
    frame["batch_time"] = pd.to_datetime(frame["batch_time"], utc=True)
    frame["value"] = pd.to_numeric(frame["value"]).astype("float64")
    return frame


def _run_dict(row: Any) -> dict[str, Any]:
    """One run row as a dict with UTC-aware times."""
    run = dict(row)
    for name in ("batch_time", "started_at", "finished_at", "heartbeat_at"):
        if run[name] is not None:
            run[name] = as_utc(run[name])
    return run


def _fold_results(rows: Any) -> list[dict[str, Any]]:
    """Group metric rows into result dicts keyed by (check, target); a result's `details` are stored
    on one of its rows (the others hold `{}`), so they are merged, and its evidence taken back out."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        result = results.get((row["check"], row["target"]))
        if result is None:
            result = {"check": row["check"], "target": row["target"], "metrics": {}, "thresholds": {}}
            result.update({name: row[name] for name in RESULT_FIELDS})
            results[(row["check"], row["target"])] = result
        else:
            result["details"] = {**(result["details"] or {}), **(row["details"] or {})}
        if row["metric"] != NO_METRIC:
            result["metrics"][row["metric"]] = row["value"]
            if row["thresholds"] is not None:
                result["thresholds"][row["metric"]] = row["thresholds"]
    for result in results.values():
        details = dict(result["details"] or {})
        result["evidence"] = details.pop("evidence", {})
        result["details"] = details
    return list(results.values())
