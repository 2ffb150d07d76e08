"""Baseline bands over a year of hourly history on PostgreSQL: what the alert rules pay per run.

Run: `.venv/bin/python -m benchmarks.bench_baseline [--runs 8760] [--url postgresql+psycopg://...]`.
Creates a throw-away database, migrates it, loads one monitor's history with COPY (8,760 hourly runs ×
500 metric rows = 4.38M result rows: drift.numeric psi/ks_pvalue on 150 columns, drift.categorical
psi/chi2_pvalue on 100), then times, warm (median of 5):

- driftline: the newest 31 batch ids from `runs` (index ix_runs_monitor_time), their 15,500 metric rows
  through the results key index (uq_results_key: monitor, batch_id, ...), and the bands of all 500
  series (`baseline.rolling_band`, window 30) plus a level-shift test on each;
- the alert step's own `evaluate_rules` with four rules covering every series (std and mad bands,
  change points);
- the same 31-run window selected by time instead (`batch_time >= cutoff`), which can only use
  ix_results_series (monitor, check, target, metric, batch_time) and walks every index entry;
- the naive way: `pandas.read_sql` of the monitor's whole history, then a pandas groupby rolling mean
  and standard deviation of the previous 30 values (once: it takes seconds).

The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session

from benchmarks.measure import table
from driftline.tasks.alerts.config import AlertRule
from driftline.tasks.alerts.rules import evaluate_rules, read_recent
from driftline.tasks.history.baseline import level_shifts, recent_windows, rolling_band
from driftline.tasks.history.db import open_store

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MONITOR = "acs-hourly"
WINDOW = 30
SERIES = [("drift.numeric", f"num_{i:03d}", m) for i in range(150) for m in ("psi", "ks_pvalue")] + [
    ("drift.categorical", f"cat_{i:03d}", m) for i in range(100) for m in ("psi", "chi2_pvalue")
]
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def load_history(engine: Engine, runs: int, seed: int = 0) -> int:
    """COPY `runs` hourly runs of the monitor and their metric rows; returns the result rows loaded."""
    rng = np.random.default_rng(seed)
    times = [T0 + timedelta(hours=i) for i in range(runs)]
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        with cursor.copy(
            "COPY runs (id, monitor, batch_id, batch_time, started_at, finished_at, status, worst_severity, "
            "rows, details) FROM STDIN"
        ) as copy:
            for i, moment in enumerate(times):
                copy.write_row(
                    (i + 1, MONITOR, f"b{i:05d}", moment, moment, moment, "ok", "none", 5000, "{}")
                )
        cursor.execute("SELECT setval('runs_id_seq', %s)", (runs,))
        values = np.abs(rng.normal(0.05, 0.02, size=(runs, len(SERIES))))
        columns = (
            'run_id, monitor, batch_id, batch_time, "check", target, metric, value, status, severity, details'
        )
        block = 500
        for start in range(0, runs, block):
            buffer = io.StringIO()
            for i in range(start, min(start + block, runs)):
                stamp = times[i].isoformat()
                prefix = f"{i + 1}\t{MONITOR}\tb{i:05d}\t{stamp}\t"
                buffer.writelines(
                    f"{prefix}{check}\t{target}\t{metric}\t{values[i, j]:.6f}\tok\tnone\t{{}}\n"
                    for j, (check, target, metric) in enumerate(SERIES)
                )
            with cursor.copy(f"COPY results ({columns}) FROM STDIN") as copy:
                copy.write(buffer.getvalue())
        raw.commit()
        cursor.execute("ANALYZE runs")
        cursor.execute("ANALYZE results")
        raw.commit()
    finally:
        raw.close()
    return runs * len(SERIES)


def bands_of_recent(engine: Engine) -> tuple[int, int]:
    """driftline's way: read the newest window + 1 runs, band every series, test for level shifts."""
    with engine.connect() as conn:
        history = read_recent(conn, MONITOR, WINDOW + 1)
    banded = rolling_band(history, window=WINDOW, method="std", min_periods=5)
    latest = banded.groupby(["check", "target", "metric"], sort=False).tail(1)
    _, matrix = recent_windows(history, WINDOW + 1)
    level_shifts(matrix)
    return len(history), len(latest)


RULES = [
    AlertRule(check="drift.numeric", metric="psi", above_baseline=3, for_runs=2, change_point=True),
    AlertRule(check="drift.numeric", metric="ks_pvalue", below_baseline=3, method="std"),
    AlertRule(check="drift.categorical", metric="psi", above_baseline=3, change_point=True),
    AlertRule(check="drift.categorical", metric="chi2_pvalue", below_baseline=3, method="std"),
]


def alert_step_rules(engine: Engine, batch_id: str) -> tuple[int, int]:
    """The alert step's rule evaluation for the newest batch: four rules over all 500 series."""
    with Session(engine) as session:
        results = evaluate_rules(session, monitor=MONITOR, batch_id=batch_id, rules=RULES)
    return len(RULES), len(results)


def window_by_time(engine: Engine, runs: int) -> tuple[int, int]:
    """The same 31-run window selected by batch time: only ix_results_series can serve it."""
    cutoff = T0 + timedelta(hours=runs - WINDOW - 1)
    query = text(
        'SELECT batch_id, batch_time, "check", target, metric, value FROM results '
        "WHERE monitor = :m AND batch_time >= :t"
    )
    with engine.connect() as conn:
        history = pd.DataFrame(conn.execute(query, {"m": MONITOR, "t": cutoff}).all())
    return len(history), history.groupby(["check", "target", "metric"]).ngroups


def naive(engine: Engine) -> tuple[int, int]:
    """Everything into pandas, then a groupby rolling mean and standard deviation of earlier values."""
    query = text(
        'SELECT batch_id, batch_time, "check", target, metric, value FROM results WHERE monitor = :m '
        'ORDER BY "check", target, metric, batch_time'
    )
    with engine.connect() as conn:
        history = pd.read_sql(query, conn, params={"m": MONITOR})
    previous = history.groupby(["check", "target", "metric"])["value"].shift(1)
    rolled = previous.groupby([history["check"], history["target"], history["metric"]]).rolling(
        WINDOW, min_periods=5
    )
    mean, std = rolled.mean(), rolled.std()
    assert len(mean) == len(std) == len(history)
    return len(history), history.groupby(["check", "target", "metric"]).ngroups


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """The value of one call and the median wall time of `repeat` warm calls, in ms (after one warm-up)."""
    value = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return value, statistics.median(times)


def explain(engine: Engine, sql: str, params: dict[str, Any]) -> str:
    """The plan PostgreSQL picks, one line."""
    with engine.connect() as conn:
        plan = conn.execute(text("EXPLAIN " + sql), params).scalars().all()
    return " | ".join(line.strip() for line in plan if "cost=" in line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8760, help="hourly runs of history (default: a year)")
    parser.add_argument("--url", default=ADMIN_URL, help="PostgreSQL database to create the bench one from")
    parser.add_argument("--skip-naive", action="store_true", help="leave out the full read (slow)")
    args = parser.parse_args()
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    name = f"driftline_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = args.url.rsplit("/", 1)[0] + f"/{name}"
    try:
        engine = open_store(url)
        start = time.perf_counter()
        rows = load_history(engine, args.runs)
        print(
            f"loaded {args.runs:,} runs × {len(SERIES)} metric rows = {rows:,} result rows "
            f"in {time.perf_counter() - start:.1f} s"
        )
        newest = f"b{args.runs - 1:05d}"
        measured = []
        (read, series), ours = timed(lambda: bands_of_recent(engine), 5)
        measured.append(("driftline: newest 31 runs by batch id + bands + shifts", read, series, ours))
        (n_rules, n_results), rules_ms = timed(lambda: alert_step_rules(engine, newest), 5)
        measured.append((f"alert step: evaluate_rules ({n_rules} rules)", read, n_results, rules_ms))
        (read_t, series_t), by_time = timed(lambda: window_by_time(engine, args.runs), 3)
        measured.append(("same window by batch_time (ix_results_series only)", read_t, series_t, by_time))
        if not args.skip_naive:
            start = time.perf_counter()
            read_n, series_n = naive(engine)
            naive_ms = (time.perf_counter() - start) * 1000
            measured.append(
                ("naive: pandas read of everything + groupby rolling", read_n, series_n, naive_ms)
            )
        header = ("approach", "rows read", "series", "ms", "× driftline")
        print(table([(*row, row[3] / ours) for row in measured], header))
        print(f"target: under 300 ms for reading and banding every series; driftline: {ours:.0f} ms")
        recent = "SELECT batch_id FROM runs WHERE monitor = :m ORDER BY batch_time DESC, id DESC LIMIT 31"
        print("plan, newest runs:  ", explain(engine, recent, {"m": MONITOR}))
        window = "SELECT value FROM results WHERE monitor = :m AND batch_id IN ('b00001', 'b00002')"
        print("plan, their results:", explain(engine, window, {"m": MONITOR}))
        engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
