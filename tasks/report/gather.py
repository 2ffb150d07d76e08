"""What one run report shows, gathered from a finished run or from the history store.

A `ReportData` holds the run's header facts, its results and the metric history of the last runs up to
this batch; the figures and the template take everything from it and never read raw data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Engine, Select, Table, and_, or_, select

from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.result import SEVERITIES, severity_rank
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import Run
from driftline.tasks.history.query import HISTORY_COLUMNS, latest_results, read_history
from driftline.tasks.history.store import NO_METRIC
from driftline.tasks.views.ranking import ranked

RUNS: Table = Run.__table__  # type: ignore[assignment]
DEFAULT_RUNS = 30


class ReportDataError(LookupError):
    """The history store holds nothing to report for the asked monitor or batch."""


@dataclass
class ReportData:
    """Everything the report shows: header facts, results, and the history of the last runs."""

    monitor: str
    batch_id: str
    batch_time: datetime | None
    status: str
    worst_severity: str
    rows: int | None
    results: list[dict[str, Any]]
    history: pd.DataFrame
    min_severity: str = "medium"
    links: dict[str, str] = field(default_factory=dict)
    reference_rows: int | None = None
    adjacent: tuple[str | None, str | None] = (None, None)

    def failing(self) -> list[dict[str, Any]]:
        """`ok` results at or above `min_severity`, in rank order (`tasks.views.ranking`)."""
        floor = severity_rank(self.min_severity)
        hits = [
            r for r in self.results if r["status"] == "ok" and severity_rank(r["severity"] or "none") >= floor
        ]
        return ranked(hits)

    def verdicts(self) -> list[dict[str, Any]]:
        """The results that judge the batch: all but the data summary's (described, never graded)."""
        return [r for r in self.results if r["check"] != DATA_SUMMARY]

    def severity_counts(self) -> dict[str, int]:
        """How many `ok` verdicts reached each severity, plus `skipped` and `error` counts."""
        counts = dict.fromkeys([*SEVERITIES, "skipped", "error"], 0)
        for r in self.verdicts():
            counts[r["severity"] if r["status"] == "ok" else r["status"]] += 1
        return counts

    def neighbours(self) -> tuple[str | None, str | None]:
        """The batches stored just before and just after this one (None at either end)."""
        return self.adjacent


def result_history_rows(
    results: Sequence[Mapping[str, Any]], batch_id: str, batch_time: datetime | None
) -> pd.DataFrame:
    """One history row per metric of `results` (the frame `read_history` returns), for a run whose
    results are not (or not yet) in the store."""
    records = [
        (batch_id, batch_time, r["check"], r["target"], name, value, r["severity"], r["status"])
        for r in results
        for name, value in (r.get("metrics") or {}).items()
    ]
    frame = pd.DataFrame.from_records(records, columns=list(HISTORY_COLUMNS))
    frame["batch_time"] = pd.to_datetime(frame["batch_time"], utc=True)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype("float64")
    return frame


def _newest_first(query: Select[Any]) -> Select[Any]:
    """`query` over runs, newest batch first (the order `ix_runs_monitor_time` serves)."""
    return query.order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())


def stored_run(engine: Engine, monitor: str, batch_id: str | None) -> dict[str, Any] | None:
    """The stored run of `batch_id` (the newest when None): one row, whatever the history's length."""
    columns = ("id", "batch_id", "batch_time", "status", "worst_severity", "rows", "details")
    query = select(*(RUNS.c[name] for name in columns)).where(RUNS.c.monitor == monitor)
    if batch_id is not None:
        query = query.where(RUNS.c.batch_id == batch_id)
    with engine.connect() as conn:
        row = conn.execute(_newest_first(query).limit(1)).mappings().first()
    if row is None:
        return None
    run = dict(row)
    run["batch_time"] = as_utc(run["batch_time"]) if run["batch_time"] is not None else None
    return run


def latest_batches(engine: Engine, monitor: str, count: int) -> list[str]:
    """The ids of the monitor's newest `count` stored batches, newest first."""
    query = _newest_first(select(RUNS.c.batch_id).where(RUNS.c.monitor == monitor)).limit(count)
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def adjacent_batches(
    engine: Engine, monitor: str, run: Mapping[str, Any] | None
) -> tuple[str | None, str | None]:
    """The batches stored just before and just after `run` in (batch time, id) order, one row each;
    for a run not stored yet, the newest stored batch and nothing after it."""
    if run is None:
        newest = latest_batches(engine, monitor, 1)
        return (newest[0] if newest else None), None
    time, key = as_utc(run["batch_time"]), run["id"]
    mine = RUNS.c.monitor == monitor
    earlier = or_(RUNS.c.batch_time < time, and_(RUNS.c.batch_time == time, RUNS.c.id < key))
    later = or_(RUNS.c.batch_time > time, and_(RUNS.c.batch_time == time, RUNS.c.id > key))
    with engine.connect() as conn:
        before = conn.execute(_newest_first(select(RUNS.c.batch_id).where(mine, earlier)).limit(1))
        after = conn.execute(
            select(RUNS.c.batch_id).where(mine, later).order_by(RUNS.c.batch_time, RUNS.c.id).limit(1)
        )
        return before.scalar_one_or_none(), after.scalar_one_or_none()


def stored_history(
    engine: Engine, monitor: str, batch_id: str, batch_time: datetime | None, runs: int
) -> pd.DataFrame:
    """The metric history of the last `runs` stored batches up to `batch_time` (this batch excluded)."""
    if batch_time is None:
        return result_history_rows([], batch_id, None)
    query = (
        select(RUNS.c.batch_time)
        .where(
            RUNS.c.monitor == monitor,
            RUNS.c.batch_time <= as_utc(batch_time),
            RUNS.c.batch_id != batch_id,
        )
        .order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())
        .limit(runs)
    )
    with engine.connect() as conn:
        times = [as_utc(t) for t in conn.execute(query).scalars()]
    if not times:
        return result_history_rows([], batch_id, None)
    history = read_history(engine, monitor, since=min(times))
    keep = (history["batch_time"] <= pd.Timestamp(as_utc(batch_time))) & (history["batch_id"] != batch_id)
    return history[keep].reset_index(drop=True)


def with_current(history: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """The stored history with this run's own values appended (they win over any stored copy)."""
    frames = [f for f in (history, current) if not f.empty]
    if not frames:
        return current
    combined = pd.concat(frames, ignore_index=True)
    return combined.sort_values(["batch_time", "batch_id"], kind="stable", ignore_index=True)


def from_summary(
    summary: Mapping[str, Any],
    *,
    engine: Engine | None = None,
    runs: int = DEFAULT_RUNS,
    min_severity: str = "medium",
    links: Mapping[str, str] | None = None,
) -> ReportData:
    """Report data of a run that just finished (a `RunSummary.to_dict()`, with `reference_rows` when
    it is not stored yet), with the stored history when `engine` is given (a store that cannot be read
    leaves the trends to this run alone)."""
    batch_time = pd.Timestamp(summary["batch_time"]).to_pydatetime() if summary.get("batch_time") else None
    batch_time = as_utc(batch_time) if batch_time is not None else None
    current = result_history_rows(summary["results"], summary["batch_id"], batch_time)
    adjacent: tuple[str | None, str | None]
    history, adjacent, reference_rows = current.iloc[0:0], (None, None), summary.get("reference_rows")
    if engine is not None:
        history = stored_history(engine, summary["monitor"], summary["batch_id"], batch_time, runs - 1)
        run = stored_run(engine, summary["monitor"], summary["batch_id"])
        adjacent = adjacent_batches(engine, summary["monitor"], run)
        if reference_rows is None and run is not None:
            reference_rows = (run["details"] or {}).get("reference_rows")
    return ReportData(
        monitor=summary["monitor"],
        batch_id=summary["batch_id"],
        batch_time=batch_time,
        status=summary["status"],
        worst_severity=summary["worst_severity"],
        rows=summary.get("rows"),
        results=list(summary["results"]),
        history=with_current(history, current),
        min_severity=min_severity,
        links=dict(links or {}),
        reference_rows=reference_rows,
        adjacent=adjacent,
    )


def from_store(
    engine: Engine,
    monitor: str,
    batch_id: str | None = None,
    *,
    runs: int = DEFAULT_RUNS,
    min_severity: str = "medium",
    links: Mapping[str, str] | None = None,
) -> ReportData:
    """Report data of a stored batch (the newest when `batch_id` is None), read back from the history."""
    run = stored_run(engine, monitor, batch_id)
    if run is None:
        known = ", ".join(reversed(latest_batches(engine, monitor, 5)))
        if not known:
            raise ReportDataError(f"no stored run for monitor {monitor!r}")
        raise ReportDataError(f"no stored run for monitor {monitor!r}, batch {batch_id!r} (latest: {known})")
    results = [
        {**r, "metrics": _no_placeholder(r["metrics"])}
        for r in latest_results(engine, monitor, run["batch_id"])
    ]
    current = result_history_rows(results, run["batch_id"], run["batch_time"])
    history = stored_history(engine, monitor, run["batch_id"], run["batch_time"], runs - 1)
    return ReportData(
        monitor=monitor,
        batch_id=run["batch_id"],
        batch_time=run["batch_time"],
        status=run["status"],
        worst_severity=run["worst_severity"] or "none",
        rows=run["rows"],
        results=results,
        history=with_current(history, current),
        min_severity=min_severity,
        links=dict(links or {}),
        reference_rows=(run["details"] or {}).get("reference_rows"),
        adjacent=adjacent_batches(engine, monitor, run),
    )


def _no_placeholder(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Metrics without the placeholder row a metric-less result is stored under."""
    return {k: v for k, v in metrics.items() if k != NO_METRIC}
