"""Writing runs and their metric values to the history database, idempotently.

A run is keyed by (monitor, batch_id) and each stored value by (monitor, batch_id, check, target, metric):
re-recording a batch updates those rows in place (the latest values win) instead of adding copies, so a
retried or replayed run never duplicates history. Everything a call writes goes in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, Table, case, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from driftline.checks.registry import declaration
from driftline.checks.result import CheckResult, json_safe
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import ResultRow, Run, utcnow
from driftline.tasks.history.storable import storable, storable_result

# Metric name of the single row stored for a result without metrics (skipped or error results).
NO_METRIC = ""
# Result rows per INSERT statement; the driver batches each chunk as one multi-row statement.
CHUNK_SIZE = 1000

RUNS: Table = Run.__table__  # type: ignore[assignment]
RESULTS: Table = ResultRow.__table__  # type: ignore[assignment]
RUN_KEY = ("monitor", "batch_id")
RESULT_KEY = ("monitor", "batch_id", "check", "target", "metric")


@dataclass(frozen=True)
class RunWrite:
    """What `record_run` wrote: the run's id and the number of metric rows inserted or updated."""

    run_id: int
    results: int


def start_run(
    engine: Engine,
    *,
    monitor: str,
    batch_id: str,
    batch_time: datetime,
    flow_run_id: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> int:
    """Mark the run of this batch as `running` (so a crash leaves a visible trace); returns its id.

    A batch whose run already completed keeps its status and results until a new `record_run`
    replaces them: a re-run that crashes must never demote a stored verdict.
    """
    values = {
        "monitor": monitor,
        "batch_id": batch_id,
        "batch_time": as_utc(batch_time),
        "started_at": utcnow(),
        "finished_at": None,
        "status": "running",
        "worst_severity": "none",
        "rows": None,
        "flow_run_id": flow_run_id,
        "details": storable(json_safe(dict(details or {}))),
    }
    with engine.begin() as conn:
        existing = conn.execute(
            select(RUNS.c.id, RUNS.c.status).where(RUNS.c.monitor == monitor, RUNS.c.batch_id == batch_id)
        ).first()
        if existing is not None and existing.status not in RESTARTABLE:
            return existing.id
        return _upsert_run(conn, values, updated=tuple(values))


# Statuses a new attempt may overwrite with `running`; the others (passed, failed, empty) are verdicts.
RESTARTABLE = frozenset({"running", "abandoned", "error"})


def finish_run(engine: Engine, run_id: int, *, status: str = "error", reason: str | None = None) -> None:
    """Close an attempt that did not reach `record_run`, keeping `reason`.

    A run still `running` takes `status`; a run that had already completed keeps its verdict and
    records the failed attempt in `details.last_attempt`.
    """
    reason = storable(reason)
    with engine.begin() as conn:
        row = conn.execute(select(RUNS.c.status, RUNS.c.details).where(RUNS.c.id == run_id)).first()
        if row is None:
            raise LookupError(f"no run with id {run_id} in the history database")
        attempt = {"status": status, "reason": reason, "at": utcnow().isoformat()}
        if row.status not in RESTARTABLE:
            conn.execute(
                update(RUNS)
                .where(RUNS.c.id == run_id)
                .values(details={**row.details, "last_attempt": attempt})
            )
            return
        details = {**row.details, "reason": reason} if reason is not None else row.details
        conn.execute(
            update(RUNS)
            .where(RUNS.c.id == run_id)
            .values(status=status, finished_at=utcnow(), details=details)
        )


# How often a running run proves it is alive, and how long without a sign makes it abandoned.
HEARTBEAT_S = 30.0
STALE_AFTER = timedelta(minutes=5)


def heartbeat(engine: Engine, run_id: int) -> None:
    """Note that the run is still going."""
    with engine.begin() as conn:
        conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(heartbeat_at=utcnow()))


def stale_condition(now: datetime, stale_after: timedelta = STALE_AFTER) -> Any:
    """SQL condition of a `running` row with no sign of life (heartbeat, else start) within `stale_after`."""
    last_sign = func.coalesce(RUNS.c.heartbeat_at, RUNS.c.started_at)
    return (RUNS.c.status == "running") & (last_sign < now - stale_after)


def mark_abandoned(engine: Engine, monitor: str, stale_after: timedelta = STALE_AFTER) -> int:
    """Close the monitor's `running` rows whose process stopped giving signs of life; returns how many."""
    now = utcnow()
    reason = f"abandoned: no heartbeat for {stale_after} (the process was killed or lost)"
    with engine.begin() as conn:
        stale = conn.execute(
            select(RUNS.c.id, RUNS.c.details).where(
                RUNS.c.monitor == monitor, stale_condition(now, stale_after)
            )
        ).all()
        for row in stale:
            conn.execute(
                update(RUNS)
                .where(RUNS.c.id == row.id)
                .values(status="abandoned", finished_at=now, details={**row.details, "reason": reason})
            )
    return len(stale)


def record_run(
    engine: Engine,
    *,
    monitor: str,
    batch_id: str,
    batch_time: datetime,
    results: Iterable[Mapping[str, Any] | CheckResult],
    status: str,
    worst_severity: str,
    rows: int | None,
    flow_run_id: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> RunWrite:
    """Write the run and one row per metric of every result (docs/design.md) in one transaction.

    A result without metrics is stored as one row with metric `""` and a NULL value, keeping its status
    and reason. A re-recorded check replaces all its earlier rows of the batch (targets and metrics it
    no longer reports are deleted), while results of checks absent from `results` are kept. NaN and
    infinite values are stored as NULL; naive times are taken as UTC. Any failure rolls the whole write
    back, so a batch is either fully recorded or not at all.
    """
    batch_time = as_utc(batch_time)
    now = utcnow()
    run = {
        "monitor": monitor,
        "batch_id": batch_id,
        "batch_time": batch_time,
        "started_at": now,
        "finished_at": now,
        "status": status,
        "worst_severity": worst_severity,
        "rows": rows,
        "flow_run_id": flow_run_id,
        "details": storable(json_safe(dict(details or {}))),
    }
    with engine.begin() as conn:
        run_id = _upsert_run(conn, run, updated=tuple(k for k in run if k != "started_at"), keep_start=True)
        shared = {"run_id": run_id, "monitor": monitor, "batch_id": batch_id, "batch_time": batch_time}
        metric_rows = _unique_rows(shared, results)
        _delete_stale(conn, monitor, batch_id, metric_rows)
        written = _upsert_results(conn, metric_rows)
    return RunWrite(run_id=run_id, results=written)


def _insert(conn: Connection, table: Table) -> Any:
    """The dialect's INSERT, which supports ON CONFLICT DO UPDATE (SQLite and PostgreSQL only)."""
    dialects = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
    if conn.dialect.name not in dialects:
        raise NotImplementedError(f"the history store needs SQLite or PostgreSQL, not {conn.dialect.name}")
    return dialects[conn.dialect.name](table)


def _upsert_run(
    conn: Connection, values: dict[str, Any], updated: tuple[str, ...], keep_start: bool = False
) -> int:
    """Insert or update the run row of (monitor, batch_id) and return its id.

    With `keep_start`, a run already marked `running` (by `start_run`) keeps its start time.
    """
    stmt = _insert(conn, RUNS).values(values)
    changes: dict[str, Any] = {name: stmt.excluded[name] for name in updated if name not in RUN_KEY}
    if keep_start:
        changes["started_at"] = case(
            (RUNS.c.status == "running", RUNS.c.started_at), else_=stmt.excluded.started_at
        )
    stmt = stmt.on_conflict_do_update(index_elements=list(RUN_KEY), set_=changes).returning(RUNS.c.id)
    return conn.execute(stmt).scalar_one()


def _upsert_results(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert or update metric rows in chunks; returns how many rows were written."""
    if not rows:
        return 0
    stmt = _insert(conn, RESULTS)
    changes = {name: stmt.excluded[name] for name in rows[0] if name not in RESULT_KEY}
    stmt = stmt.on_conflict_do_update(index_elements=list(RESULT_KEY), set_=changes).returning(RESULTS.c.id)
    written = 0
    for start in range(0, len(rows), CHUNK_SIZE):
        written += len(conn.execute(stmt, rows[start : start + CHUNK_SIZE]).all())
    return written


def _delete_stale(conn: Connection, monitor: str, batch_id: str, rows: list[dict[str, Any]]) -> None:
    """Delete the stored metrics of the re-recorded checks that the new results no longer have.

    A check's results for a batch replace its earlier ones as a whole: an `error` row left from a failed
    attempt (often under another target, such as `*`), a target that disappeared or a metric the check
    stopped reporting must not linger next to the new values. Checks absent from `rows` are untouched.
    """
    keys = {(row["check"], row["target"], row["metric"]) for row in rows}
    checks = list({key[0] for key in keys})
    if not checks:
        return
    stored = conn.execute(
        select(RESULTS.c.id, RESULTS.c.check, RESULTS.c.target, RESULTS.c.metric).where(
            RESULTS.c.monitor == monitor, RESULTS.c.batch_id == batch_id, RESULTS.c.check.in_(checks)
        )
    )
    stale = [row.id for row in stored if tuple(row[1:]) not in keys]
    for start in range(0, len(stale), CHUNK_SIZE):
        conn.execute(delete(RESULTS).where(RESULTS.c.id.in_(stale[start : start + CHUNK_SIZE])))


def _unique_rows(
    shared: Mapping[str, Any], results: Iterable[Mapping[str, Any] | CheckResult]
) -> list[dict[str, Any]]:
    """All metric rows of `results` made storable (`tasks.history.storable`), one per (check, target,
    metric); a later duplicate wins.

    Deduplicating here keeps a single multi-row upsert from touching the same key twice (an error on
    PostgreSQL).
    """
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for result in results:
        plain = result.to_dict() if isinstance(result, CheckResult) else result
        for row in _metric_rows(storable_result(plain)):
            rows[(row["check"], row["target"], row["metric"])] = {**shared, **row}
    return list(rows.values())


def _metric_rows(result: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The stored rows of one result: one per metric, or one `NO_METRIC` row when it has none. The
    result's `details` go on its first row only (the others hold `{}`): stored once per result, not
    once per metric."""
    check, target = result["check"], result["target"]
    common = {
        "check": check,
        "target": target,
        "status": result.get("status", "ok"),
        "severity": result.get("severity", "none"),
        "rows": result.get("rows"),
        "failing_rows": result.get("failing_rows"),
        "model_impact": _number(result.get("model_impact"), check, target, "model_impact"),
        "reason": result.get("reason"),
        "details": json_safe({**(result.get("details") or {}), **_evidence(result)}),
    }
    metrics = result.get("metrics") or {}
    thresholds = result.get("thresholds") or {}
    if not metrics:
        yield {**common, "metric": NO_METRIC, "value": None, "thresholds": None}
    for position, (metric, value) in enumerate(metrics.items()):
        yield {
            **common,
            "metric": metric,
            "value": _number(value, check, target, metric),
            "thresholds": json_safe(thresholds.get(metric)),
            **({"details": {}} if position else {}),
        }


def _evidence(result: Mapping[str, Any]) -> dict[str, Any]:
    """The noise models a result was graded on, kept with its details (`checks.evidence`)."""
    return {"evidence": result["evidence"]} if result.get("evidence") else {}


def _number(value: Any, check: str, target: str, name: str) -> float | None:
    """`value` as a finite float, or None for missing, NaN and infinite values."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"result {check}/{target}: {name} = {value!r} is not a number") from None
    return number if math.isfinite(number) else None


def runs_without_labels(
    engine: Engine, monitor: str, *, exclude: str, limit: int
) -> list[tuple[str, datetime]]:
    """(batch id, batch time) of the monitor's completed runs (passed or failed) whose labels were
    never joined, newest first, among its `limit` newest completed runs other than `exclude`."""
    query = (
        select(RUNS.c.batch_id, RUNS.c.batch_time, RUNS.c.details)
        .where(RUNS.c.monitor == monitor, RUNS.c.batch_id != exclude, RUNS.c.status.in_(("passed", "failed")))
        .order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [(row.batch_id, as_utc(row.batch_time)) for row in rows if "labels" not in (row.details or {})]


def record_late_results(
    engine: Engine,
    *,
    monitor: str,
    batch_id: str,
    results: Iterable[Mapping[str, Any] | CheckResult],
    fail_on: str,
    labels: Mapping[str, Any],
) -> tuple[str, str]:
    """Store the label checks of a batch whose labels landed late, in one transaction: their results
    replace the stored ones, estimates of the batch are marked superseded, and the run's worst severity
    and status (against `fail_on`) are recomputed over all its results. Returns (status, worst)."""
    from driftline.checks.result import worst_severity
    from driftline.tasks.config.spec import severity_at_least

    with engine.begin() as conn:
        run = conn.execute(
            select(RUNS.c.id, RUNS.c.batch_time, RUNS.c.details).where(
                RUNS.c.monitor == monitor, RUNS.c.batch_id == batch_id
            )
        ).one()
        shared = {"run_id": run.id, "monitor": monitor, "batch_id": batch_id, "batch_time": run.batch_time}
        rows = _unique_rows(shared, results)
        _delete_stale(conn, monitor, batch_id, rows)
        _upsert_results(conn, rows)
        _mark_superseded(conn, monitor, batch_id)
        severities = conn.execute(
            select(RESULTS.c.severity).where(
                RESULTS.c.monitor == monitor, RESULTS.c.batch_id == batch_id, RESULTS.c.status == "ok"
            )
        )
        worst = worst_severity(row.severity for row in severities)
        status = "failed" if severity_at_least(worst, fail_on) else "passed"
        joined = {**dict(labels), "joined_at": utcnow().isoformat()}
        details = json_safe({**(run.details or {}), "labels": joined})
        conn.execute(
            update(RUNS)
            .where(RUNS.c.id == run.id)
            .values(status=status, worst_severity=worst, details=details)
        )
    return status, worst


def _mark_superseded(conn: Connection, monitor: str, batch_id: str) -> None:
    """Note on the batch's estimate rows (their check declares what it `estimates`) that labels now
    measure what they estimated; the rows are kept beside the realised ones."""
    rows = conn.execute(
        select(RESULTS.c.id, RESULTS.c.check, RESULTS.c.details).where(
            RESULTS.c.monitor == monitor, RESULTS.c.batch_id == batch_id
        )
    ).all()
    for row in (r for r in rows if declaration(r.check).estimates is not None):
        details = {**(row.details or {}), "superseded_by": "labels"}
        conn.execute(update(RESULTS).where(RESULTS.c.id == row.id).values(details=details))
