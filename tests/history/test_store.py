"""Writing runs: idempotent re-records, metric rows, NULL for non-finite values, all-or-nothing writes."""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from driftline.checks.result import CheckResult
from driftline.tasks.history.query import latest_results, list_runs, read_history
from driftline.tasks.history.store import (
    STALE_AFTER,
    finish_run,
    heartbeat,
    mark_abandoned,
    record_run,
    start_run,
)

BATCH_TIME = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def drift(target: str, psi: Any, ks: Any = 0.5, severity: str = "none") -> dict[str, Any]:
    """A drift result in the result format of docs/design.md with two metrics."""
    return {
        "check": "drift.numeric",
        "target": target,
        "status": "ok",
        "severity": severity,
        "metrics": {"psi": psi, "ks_pvalue": ks},
        "thresholds": {"psi": [0.1, 0.2, 0.3]},
        "rows": 500,
        "failing_rows": None,
        "model_impact": 0.03,
        "details": {"bins": 10},
        "reason": None,
        "evidence": {},
    }


def record(engine: Engine, results: list, batch_id: str = "b1", **overrides: Any):
    kwargs = {
        "monitor": "m",
        "batch_id": batch_id,
        "batch_time": BATCH_TIME,
        "results": results,
        "status": "passed",
        "worst_severity": "none",
        "rows": 500,
    }
    return record_run(engine, **{**kwargs, **overrides})


def count(engine: Engine, table: str, where: str = "1 = 1") -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table} WHERE {where}")).scalar_one()


def stored_values(engine: Engine) -> dict[tuple[str, str, str], float | None]:
    with engine.connect() as conn:
        rows = conn.execute(text('SELECT "check", target, metric, value FROM results')).all()
    return {(c, t, m): v for c, t, m, v in rows}


def test_results_round_trip_in_the_result_format(store: Engine) -> None:
    checked = CheckResult(
        check="abnormal.range",
        target="age",
        severity="high",
        metrics={"share": 0.25},
        thresholds={"share": [0.01, 0.05, 0.1]},
        rows=40,
        failing_rows=10,
        model_impact=-0.125,
        details={"low": 0.0, "high": 99.0, "columns": ["age"]},
        reason="share 0.25, lower bound 0.12 at 99% ≥ high threshold 0.1",
        evidence={
            "share": {"estimate": 0.25, "noise": "normal", "scale": 0.05, "df": 1.0, "higher_is_worse": True}
        },
    )
    skipped = CheckResult.skipped("fairness.parity", "model", "no protected column", rows=40)
    results = [drift("age", 0.21, severity="medium"), checked, skipped.to_dict()]
    written = record(store, results)
    assert written.results == 2 + 1 + 1
    assert latest_results(store, "m", "b1") == [results[0], checked.to_dict(), skipped.to_dict()]


def test_result_without_metrics_is_one_row_with_empty_metric_and_null_value(store: Engine) -> None:
    failed = CheckResult.error("drift.text", "review", "column 'review' is missing").to_dict()
    record(store, [failed])
    with store.connect() as conn:
        row = conn.execute(text("SELECT metric, value, status, severity, reason FROM results")).one()
    assert tuple(row) == ("", None, "error", "none", "column 'review' is missing")


def test_re_recording_a_batch_keeps_one_copy_with_the_latest_values(store: Engine) -> None:
    first = record(store, [drift("age", 0.1), drift("income", 0.2)], status="passed")
    second = record(
        store, [drift("age", 0.4, ks=0.01, severity="high"), drift("income", 0.2)], status="failed"
    )
    assert second.run_id == first.run_id
    assert first.results == second.results == 4
    assert count(store, "runs") == 1
    assert count(store, "results") == 4
    values = stored_values(store)
    assert values[("drift.numeric", "age", "psi")] == pytest.approx(0.4)
    assert values[("drift.numeric", "age", "ks_pvalue")] == pytest.approx(0.01)
    assert list_runs(store)[0]["status"] == "failed"
    assert count(store, "results", "target = 'age' AND severity = 'high'") == 2


def test_re_recorded_result_replaces_its_old_rows_but_other_checks_stay(store: Engine) -> None:
    error = CheckResult.error("drift.numeric", "age", "timed out").to_dict()
    other = {**drift("x", 0.1), "check": "drift.other"}
    record(store, [error, other])
    record(store, [drift("age", 0.3)])
    assert stored_values(store).keys() == {
        ("drift.numeric", "age", "psi"),
        ("drift.numeric", "age", "ks_pvalue"),
        ("drift.other", "x", "psi"),
        ("drift.other", "x", "ks_pvalue"),
    }
    assert count(store, "results", "status = 'error'") == 0


def test_re_recorded_check_drops_targets_it_no_longer_reports(store: Engine) -> None:
    record(store, [CheckResult.error("drift.numeric", "*", "reference missing").to_dict()])
    record(store, [drift("AGEP", 0.3)])
    history = read_history(store, "m")
    assert sorted(zip(history["target"], history["metric"], strict=True)) == [
        ("AGEP", "ks_pvalue"),
        ("AGEP", "psi"),
    ]
    assert count(store, "results", "status = 'error'") == 0


def test_re_recorded_check_replaces_all_its_targets_in_that_batch_only(store: Engine) -> None:
    other = {**drift("x", 0.1), "check": "drift.other"}
    record(store, [drift("age", 0.1), drift("income", 0.2), other])
    record(store, [drift("age", 0.6)], batch_id="b2")
    record(store, [drift("income", 0.4)])
    with store.connect() as conn:
        rows = conn.execute(text('SELECT batch_id, "check", target, metric, value FROM results')).all()
    assert {(b, c, t, m): v for b, c, t, m, v in rows} == {
        ("b1", "drift.numeric", "income", "psi"): pytest.approx(0.4),
        ("b1", "drift.numeric", "income", "ks_pvalue"): pytest.approx(0.5),
        ("b1", "drift.other", "x", "psi"): pytest.approx(0.1),
        ("b1", "drift.other", "x", "ks_pvalue"): pytest.approx(0.5),
        ("b2", "drift.numeric", "age", "psi"): pytest.approx(0.6),
        ("b2", "drift.numeric", "age", "ks_pvalue"): pytest.approx(0.5),
    }


def test_re_recording_with_no_results_keeps_stored_checks(store: Engine) -> None:
    record(store, [drift("age", 0.1)])
    record(store, [])
    assert stored_values(store).keys() == {
        ("drift.numeric", "age", "psi"),
        ("drift.numeric", "age", "ks_pvalue"),
    }


def test_duplicate_keys_in_one_call_keep_the_last(store: Engine) -> None:
    written = record(store, [drift("age", 0.1), drift("age", 0.7)])
    assert written.results == 2
    assert stored_values(store)[("drift.numeric", "age", "psi")] == pytest.approx(0.7)


def test_many_results_in_one_run(store: Engine) -> None:
    results = [drift(f"feature_{i}", i / 10_000) for i in range(10_000)]
    written = record(store, results)
    assert written.results == 20_000
    assert count(store, "results") == 20_000
    assert count(store, "results", "metric = 'psi' AND value > 0.5") == 4_999  # i = 5001 .. 9999
    again = record(store, results)
    assert again.results == 20_000
    assert count(store, "results") == 20_000


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan"), np.float32("inf")])
def test_non_finite_values_are_stored_as_null(store: Engine, bad: Any) -> None:
    result = {**drift("age", bad, ks=np.float64(0.25)), "model_impact": bad}
    record(store, [result])
    assert count(store, "results", "metric = 'psi' AND value IS NULL AND model_impact IS NULL") == 1
    assert stored_values(store)[("drift.numeric", "age", "ks_pvalue")] == 0.25


def test_numpy_values_in_details_and_thresholds_are_stored_as_plain_json(store: Engine) -> None:
    result = {
        **drift("age", 0.2),
        "details": {"counts": np.array([1, 2]), "share": np.float64("nan")},
        "thresholds": {"psi": np.array([0.1, 0.2, 0.3])},
    }
    record(store, [result])
    (stored,) = latest_results(store, "m")
    assert stored["details"] == {"counts": [1, 2], "share": None}
    assert stored["thresholds"] == {"psi": [0.1, 0.2, 0.3]}


def bad_value(results: list) -> None:
    results[2_500]["metrics"]["psi"] = "not a number"


def missing_check(results: list) -> None:
    results[2_500]["check"] = None  # rejected by the database (NOT NULL) after earlier chunks went in


@pytest.mark.parametrize(
    ("corrupt", "error"), [(bad_value, ValueError), (missing_check, IntegrityError)], ids=["value", "check"]
)
def test_a_failure_mid_write_leaves_nothing_half_written(store: Engine, corrupt, error) -> None:
    results = [drift(f"f{i}", 0.1) for i in range(3_000)]
    corrupt(results)
    with pytest.raises(error):
        record(store, results)
    assert count(store, "runs") == 0
    assert count(store, "results") == 0


def test_a_failed_re_record_keeps_the_earlier_copy(store: Engine) -> None:
    record(store, [drift(f"f{i}", 0.1) for i in range(1_500)], status="passed")
    results = [drift(f"f{i}", 0.9) for i in range(3_000)]
    missing_check(results)
    with pytest.raises(IntegrityError):
        record(store, results, status="failed")
    assert count(store, "results") == 3_000
    assert count(store, "results", "metric = 'psi' AND value = 0.1") == 1_500
    assert list_runs(store)[0]["status"] == "passed"


def test_bad_value_error_names_the_result(store: Engine) -> None:
    with pytest.raises(ValueError, match=r"drift.numeric/age: psi = 'n/a' is not a number"):
        record(store, [drift("age", "n/a")])


def test_times_are_stored_in_utc_and_read_back_aware(store: Engine) -> None:
    local = datetime(2024, 5, 1, 14, 30, 15, 250_000, tzinfo=timezone(timedelta(hours=2)))
    record(store, [drift("age", 0.1)], batch_time=local)
    expected = datetime(2024, 5, 1, 12, 30, 15, 250_000, tzinfo=UTC)
    history = read_history(store, "m")
    assert history["batch_time"].dt.tz is not None
    assert (history["batch_time"] == expected).all()
    assert history["batch_time"].iloc[0].utcoffset() == timedelta(0)
    run = list_runs(store)[0]
    assert run["batch_time"] == expected
    assert run["batch_time"].utcoffset() == timedelta(0)
    assert run["started_at"].tzinfo is not None and run["finished_at"].tzinfo is not None
    assert abs(run["finished_at"] - datetime.now(UTC)) < timedelta(minutes=5)


def test_naive_batch_time_is_taken_as_utc(store: Engine) -> None:
    record(store, [drift("age", 0.1)], batch_time=datetime(2024, 5, 1, 12, 0))
    assert list_runs(store)[0]["batch_time"] == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_run_row_keeps_counts_and_details(store: Engine) -> None:
    record(
        store,
        [drift("age", 0.5, severity="high")],
        status="failed",
        worst_severity="high",
        rows=1234,
        flow_run_id="abc-123",
        details={"reference_rows": np.int64(10)},
    )
    run = list_runs(store, "m")[0]
    assert {
        k: run[k] for k in ("monitor", "batch_id", "status", "worst_severity", "rows", "flow_run_id")
    } == {
        "monitor": "m",
        "batch_id": "b1",
        "status": "failed",
        "worst_severity": "high",
        "rows": 1234,
        "flow_run_id": "abc-123",
    }
    assert run["details"] == {"reference_rows": 10}


def test_started_run_is_visible_and_can_be_closed_as_error(store: Engine) -> None:
    run_id = start_run(store, monitor="m", batch_id="b1", batch_time=BATCH_TIME, flow_run_id="f1")
    (run,) = list_runs(store)
    assert (run["id"], run["status"], run["finished_at"]) == (run_id, "running", None)
    finish_run(store, run_id, status="error", reason="source unreachable")
    (run,) = list_runs(store)
    assert run["status"] == "error"
    assert run["details"] == {"reason": "source unreachable"}
    assert run["finished_at"] is not None


def test_record_after_start_updates_the_same_run_and_keeps_its_start(store: Engine) -> None:
    run_id = start_run(store, monitor="m", batch_id="b1", batch_time=BATCH_TIME)
    started = list_runs(store)[0]["started_at"]
    written = record(store, [drift("age", 0.1)])
    (run,) = list_runs(store)
    assert written.run_id == run_id
    assert run["started_at"] == started
    assert run["status"] == "passed"
    assert run["finished_at"] >= started


def test_finishing_an_unknown_run_raises(store: Engine) -> None:
    with pytest.raises(LookupError, match="no run with id 999"):
        finish_run(store, 999)


def test_concurrent_writers_from_a_thread_pool(store: Engine) -> None:
    def write(i: int) -> int:
        return record(store, [drift(f"f{j}", j / 100) for j in range(200)], batch_id=f"b{i}").results

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(write, range(8))) == [400] * 8
    assert count(store, "runs") == 8
    assert count(store, "results") == 8 * 400


def test_pandas_timestamp_batch_time_is_stored_in_utc(store: Engine) -> None:
    stamp = pd.Timestamp("2024-05-01 08:00", tz="America/New_York")  # UTC-4 in May
    record(store, [drift("age", 0.1)], batch_time=stamp)
    assert list_runs(store)[0]["batch_time"] == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_a_running_run_with_a_recent_heartbeat_is_alive_and_a_silent_one_is_abandoned(store: Engine) -> None:
    """Staleness counts from the last heartbeat (else the start), on SQLite and PostgreSQL alike."""
    alive = start_run(store, monitor="m", batch_id="alive", batch_time=BATCH_TIME)
    silent = start_run(store, monitor="m", batch_id="silent", batch_time=BATCH_TIME + timedelta(days=1))
    long_ago = datetime.now(UTC) - STALE_AFTER - timedelta(minutes=1)
    with store.begin() as conn:
        conn.execute(text("UPDATE runs SET started_at = :t"), {"t": long_ago})
    heartbeat(store, alive)

    statuses = {r["batch_id"]: r["status"] for r in list_runs(store, "m")}
    assert statuses == {"alive": "running", "silent": "abandoned"}
    assert mark_abandoned(store, "m") == 1
    assert mark_abandoned(store, "m") == 0
    [closed] = [r for r in list_runs(store, "m") if r["id"] == silent]
    assert closed["status"] == "abandoned" and "no heartbeat" in closed["details"]["reason"]


def test_details_are_stored_once_per_result_and_read_back_whole(store: Engine) -> None:
    """Three metrics, one copy of the details; re-ordered metrics on a re-record keep one copy."""
    result = {**drift("age", 0.25), "metrics": {"psi": 0.25, "ks_pvalue": 0.5, "ks_statistic": 0.1}}
    result["details"] = {"bins": 10, "edges": list(range(11))}
    record(store, [result])
    with store.connect() as conn:
        stored = [row[0] for row in conn.execute(text("SELECT details FROM results ORDER BY id"))]
    parsed = [row if isinstance(row, dict) else json.loads(row) for row in stored]
    assert sorted(map(len, parsed)) == [0, 0, 2]
    (read,) = latest_results(store, "m")
    assert read["details"] == result["details"] and set(read["metrics"]) == {
        "psi",
        "ks_pvalue",
        "ks_statistic",
    }

    reordered = {**result, "metrics": {"ks_statistic": 0.2, "psi": 0.3, "ks_pvalue": 0.4}}
    record(store, [reordered])
    (read,) = latest_results(store, "m")
    assert read["details"] == result["details"] and read["metrics"]["psi"] == 0.3
