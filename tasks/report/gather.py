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
from sqlalchemy import Engine, Table, select

from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.result import SEVERITIES, severity_rank
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import Run
from driftline.tasks.history.query import HISTORY_COLUMNS, latest_results, read_history
from driftline.tasks.history.store import NO_METRIC
from driftline.tasks.ranking import ranked

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
    batches: list[str] = field(default_factory=list)

    def failing(self) -> list[dict[str, Any]]:
        """`ok` results at or above `min_severity`, in rank order (`tasks.ranking`)."""
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
        if self.batch_id not in self.batches:
            return None, None
        i = self.batches.index(self.batch_id)
        before = self.batches[i - 1] if i > 0 else None
        after = self.batches[i + 1] if i + 1 < len(self.batches) else None
        return before, after


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


def _run_rows(engine: Engine, monitor: str) -> list[dict[str, Any]]:
    """(batch_id, batch_time, status, worst_severity, rows, details) of every stored run, oldest first."""
    columns = ("batch_id", "batch_time", "status", "worst_severity", "rows", "details", "flow_run_id")
    query = (
        select(*(RUNS.c[name] for name in columns))
        .where(RUNS.c.monitor == monitor)
        .order_by(RUNS.c.batch_time, RUNS.c.id)
    )
    with engine.connect() as conn:
        runs = [dict(row) for row in conn.execute(query).mappings()]
    for run in runs:
        run["batch_time"] = as_utc(run["batch_time"]) if run["batch_time"] is not None else None
    return runs


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
    history, batches, reference_rows = current.iloc[0:0], [], summary.get("reference_rows")
    if engine is not None:
        history = stored_history(engine, summary["monitor"], summary["batch_id"], batch_time, runs - 1)
        stored_runs = _run_rows(engine, summary["monitor"])
        batches = [r["batch_id"] for r in stored_runs]
        if reference_rows is None:
            reference_rows = next(
                (
                    (r["details"] or {}).get("reference_rows")
                    for r in stored_runs
                    if r["batch_id"] == summary["batch_id"]
                ),
                None,
            )
    if summary["batch_id"] not in batches:
        batches = [*batches, summary["batch_id"]]
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
        batches=batches,
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
    stored_runs = _run_rows(engine, monitor)
    if not stored_runs:
        raise ReportDataError(f"no stored run for monitor {monitor!r}")
    if batch_id is None:
        run = stored_runs[-1]
    else:
        run = next((r for r in stored_runs if r["batch_id"] == batch_id), None)
        if run is None:
            known = ", ".join(r["batch_id"] for r in stored_runs[-5:])
            raise ReportDataError(
                f"no stored run for monitor {monitor!r}, batch {batch_id!r} (latest: {known})"
            )
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
        batches=[r["batch_id"] for r in stored_runs],
    )


def _no_placeholder(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Metrics without the placeholder row a metric-less result is stored under."""
    return {k: v for k, v in metrics.items() if k != NO_METRIC}
