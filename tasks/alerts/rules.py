"""Baseline rules (`alerts.rules`) evaluated over the stored history after a run is stored.

Each rule turns into one result per matching series (check `rule:<name>`, the series' target), in the
result format checks use, so incidents open, escalate and resolve for rules as they do for thresholds.
A series without a value in this batch, or with too little history, gives a `skipped` result, which
neither opens nor resolves anything.

Only the newest runs are read (as many as the rules' windows need, found through the runs index), so
the alert step costs the same after a year of hourly runs as after a week.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from driftline.tasks.alerts.config import AlertRule
from driftline.tasks.history.baseline import (
    band_limits,
    level_shifts,
    outside_band,
    recent_windows,
    rolling_band,
)
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import ResultRow, Run

RECENT_COLUMNS = ("batch_id", "batch_time", "check", "target", "metric", "value")
KEYS = ("check", "target", "metric")


def recent_batches(
    conn: Connection | Session, monitor: str, runs: int, until: datetime | None = None
) -> dict[str, datetime]:
    """The monitor's newest `runs` batches (at or before `until`): batch id to batch time (UTC)."""
    query = select(Run.batch_id, Run.batch_time).where(Run.monitor == monitor)
    if until is not None:
        query = query.where(Run.batch_time <= as_utc(until))
    query = query.order_by(Run.batch_time.desc(), Run.id.desc()).limit(runs)
    return {batch_id: as_utc(moment) for batch_id, moment in conn.execute(query)}


def read_recent(
    conn: Connection | Session,
    monitor: str,
    runs: int,
    *,
    until: datetime | None = None,
    checks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The metric values of the monitor's newest `runs` batches (`RECENT_COLUMNS`), optionally only
    of some checks and metrics; the read goes through the (monitor, batch_id, ...) key index, and
    batch times come from the runs, not from every row."""
    if isinstance(conn, Session):
        conn = conn.connection()
    batches = recent_batches(conn, monitor, runs, until)
    if not batches:
        return pd.DataFrame(columns=list(RECENT_COLUMNS))
    names = [name for name in RECENT_COLUMNS if name != "batch_time"]
    query = select(*(getattr(ResultRow, name) for name in names)).where(
        ResultRow.monitor == monitor, ResultRow.batch_id.in_(list(batches))
    )
    if checks is not None:
        query = query.where(ResultRow.check.in_(sorted(set(checks))))
    if metrics is not None:
        query = query.where(ResultRow.metric.in_(sorted(set(metrics))))
    rows = conn.execute(query).all()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    frame = pd.DataFrame(dict(zip(names, columns, strict=True)))
    times = pd.Series(pd.to_datetime(list(batches.values()), utc=True), index=list(batches))
    frame["batch_time"] = frame["batch_id"].map(times)
    frame["value"] = pd.to_numeric(frame["value"]).astype("float64")
    return frame[list(RECENT_COLUMNS)]


def _finite(value: Any) -> float | None:
    """A JSON-safe number: NaN and infinities become None (PostgreSQL's JSONB refuses them)."""
    number = float(value)
    return number if math.isfinite(number) else None


def _result(
    rule: AlertRule, details: dict[str, Any], target: str, severity: str, **extra: Any
) -> dict[str, Any]:
    return {
        "check": rule.key,
        "target": target,
        "status": "ok",
        "severity": severity,
        "metrics": {},
        "thresholds": {},
        "rows": None,
        "failing_rows": None,
        "model_impact": None,
        "details": details,
        "reason": None,
        **extra,
    }


def rule_results(rule: AlertRule, history: pd.DataFrame, batch_id: str) -> list[dict[str, Any]]:
    """One result per series the rule watches: `rule.severity` when it fires, else `none`.

    `history` holds at least the rule's newest `runs_needed` runs (more is fine; only the newest are
    used). Metrics: the newest value under the rule's metric name, the band's `baseline`, `lower`,
    `upper` and `z`, and `shift` (the change-point strength) with `change_point`.
    """
    mask = (history["check"] == rule.check) & (history["metric"] == rule.metric)
    if rule.target is not None:
        mask &= history["target"] == rule.target
    frame = history[mask].dropna(subset=["value"])
    if frame.empty:
        return []
    banded = rolling_band(frame, window=rule.window, method=rule.method, min_periods=rule.min_runs)
    series = banded.groupby(list(KEYS), sort=False)
    code = series.ngroup().to_numpy()
    back = series.cumcount(ascending=False).to_numpy()
    outside = outside_band(banded["baseline_z"].to_numpy(), rule.above_baseline, rule.below_baseline)
    in_tail = back < rule.for_runs
    count = len(series)
    tail_runs = np.bincount(code[in_tail], minlength=count)
    tail_outside = np.bincount(code[in_tail & outside], minlength=count)
    banded_side = rule.above_baseline is not None or rule.below_baseline is not None
    fired = banded_side & (tail_runs == rule.for_runs) & (tail_outside == rule.for_runs)
    latest = banded[back == 0]
    center = latest["baseline_center"].to_numpy()
    lower, upper = band_limits(
        center, latest["baseline_scale"].to_numpy(), rule.above_baseline, rule.below_baseline
    )
    strength = np.full(count, np.nan)
    shift_fired = np.zeros(count, dtype=bool)
    if rule.change_point:
        keys, matrix = recent_windows(frame, rule.window + 1, keys=KEYS)
        after, found = level_shifts(matrix)
        position = {target: i for i, target in enumerate(keys["target"])}
        order = np.array([position[t] for t in latest["target"]], dtype=int)
        strength, after = found[order], after[order]
        shift_fired = (after > 0) & (after <= max(rule.for_runs, 2)) & (strength > rule.penalty)
    details = {"rule": rule.model_dump(exclude_none=True)}
    columns = zip(
        latest["target"].tolist(),
        latest["batch_id"].tolist(),
        latest["value"].tolist(),
        center.tolist(),
        np.broadcast_to(lower, center.shape).tolist(),
        np.broadcast_to(upper, center.shape).tolist(),
        latest["baseline_z"].tolist(),
        latest["baseline_runs"].tolist(),
        strength.tolist(),
        (fired[code[back == 0]] | shift_fired).tolist(),
        strict=True,
    )
    results = []
    for target, last_batch, value, mid, low, high, z, runs, shift, alarm in columns:
        if last_batch != batch_id:
            reason = f"no {rule.metric} value of {rule.check} for {target} in batch {batch_id}"
            results.append(_result(rule, details, target, "none", status="skipped", reason=reason))
            continue
        metrics = {
            rule.metric: _finite(value),
            "baseline": _finite(mid),
            "lower": _finite(low),
            "upper": _finite(high),
            "z": _finite(z),
        }
        if rule.change_point:
            metrics["shift"] = _finite(shift)
        elif math.isnan(mid):
            reason = f"{runs} earlier value(s) of {rule.metric}; the rule needs {rule.min_runs}"
            results.append(
                _result(rule, details, target, "none", status="skipped", reason=reason, metrics=metrics)
            )
            continue
        severity = rule.severity if alarm else "none"
        results.append(_result(rule, details, target, severity, metrics=metrics))
    return results


def evaluate_rules(
    session: Session,
    *,
    monitor: str,
    batch_id: str,
    rules: Sequence[AlertRule],
    batch_time: datetime | None = None,
) -> list[dict[str, Any]]:
    """The results of every rule for one stored batch (none when there are no rules or the batch was
    not stored); reads only the newest runs the rules need, up to this batch."""
    if not rules:
        return []
    if batch_time is None:
        stored = session.execute(
            select(Run.batch_time).where(Run.monitor == monitor, Run.batch_id == batch_id)
        ).scalar_one_or_none()
        if stored is None:
            return []
        batch_time = stored
    history = read_recent(
        session,
        monitor,
        max(rule.runs_needed for rule in rules) + 1,
        until=batch_time,
        checks=[rule.check for rule in rules],
        metrics=[rule.metric for rule in rules],
    )
    if history.empty:
        return []
    return [result for rule in rules for result in rule_results(rule, history, batch_id)]
