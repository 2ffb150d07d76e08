"""Reading history: series filters and order, run listings, the stored results of a batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
import pytest
from sqlalchemy import Engine

from driftline.checks.result import CheckResult
from driftline.tasks.history.query import HISTORY_COLUMNS, latest_results, list_runs, read_history
from driftline.tasks.history.store import record_run

DAY0 = datetime(2024, 5, 1, tzinfo=UTC)


def result(check: str, target: str, **metrics: float) -> dict:
    return CheckResult(check=check, target=target, metrics=metrics).to_dict()


@pytest.fixture
def history(store: Engine) -> Engine:
    """Three daily batches of monitor `m` (recorded newest first) and one batch of monitor `other`."""
    for day in (2, 0, 1):
        record_run(
            store,
            monitor="m",
            batch_id=f"day{day}",
            batch_time=DAY0 + timedelta(days=day),
            results=[
                result("drift.numeric", "age", psi=0.1 * (day + 1), ks_pvalue=0.5),
                result("drift.numeric", "income", psi=0.05),
                result("perf.overall", "model", auc=0.9 - 0.01 * day),
            ],
            status="passed",
            worst_severity="none",
            rows=100,
        )
    record_run(
        store,
        monitor="other",
        batch_id="x",
        batch_time=DAY0 + timedelta(days=5),
        results=[result("drift.numeric", "age", psi=9.0)],
        status="failed",
        worst_severity="high",
        rows=1,
    )
    return store


def test_history_has_the_documented_columns_and_types(history: Engine) -> None:
    frame = read_history(history, "m")
    assert tuple(frame.columns) == HISTORY_COLUMNS
    assert len(frame) == 3 * 4
    assert pd.api.types.is_float_dtype(frame["value"])
    assert isinstance(frame["batch_time"].dtype, pd.DatetimeTZDtype)
    assert str(frame["batch_time"].dt.tz) == "UTC"
    assert pd.api.types.is_string_dtype(frame["check"])


def test_history_is_ordered_by_time_whatever_the_write_order(history: Engine) -> None:
    frame = read_history(history, "m", check="drift.numeric", target="age", metric="psi")
    assert frame["batch_id"].tolist() == ["day0", "day1", "day2"]
    assert frame["value"].tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert frame["batch_time"].is_monotonic_increasing


@pytest.mark.parametrize(
    ("filters", "expected_rows"),
    [
        ({}, 12),
        ({"check": "drift.numeric"}, 9),
        ({"check": "drift.numeric", "target": "income"}, 3),
        ({"metric": "auc"}, 3),
        ({"target": "age", "metric": "ks_pvalue"}, 3),
        ({"check": "no.such.check"}, 0),
    ],
)
def test_history_filters(history: Engine, filters: dict, expected_rows: int) -> None:
    frame = read_history(history, "m", **filters)
    assert len(frame) == expected_rows
    for column, wanted in filters.items():
        assert (frame[column] == wanted).all()


def test_history_since_keeps_batches_at_or_after_the_time(history: Engine) -> None:
    frame = read_history(history, "m", metric="auc", since=DAY0 + timedelta(days=1))
    assert frame["batch_id"].tolist() == ["day1", "day2"]
    assert frame["value"].tolist() == pytest.approx([0.89, 0.88])


def test_history_since_accepts_other_time_zones_and_naive_utc(history: Engine) -> None:
    eastern = datetime(2024, 5, 1, 20, 0, tzinfo=timezone(timedelta(hours=-4)))
    assert read_history(history, "m", metric="auc", since=eastern)["batch_id"].tolist() == ["day1", "day2"]
    naive = datetime(2024, 5, 2, 0, 0, 1)
    assert read_history(history, "m", metric="auc", since=naive)["batch_id"].tolist() == ["day2"]


def test_history_of_an_unknown_monitor_is_an_empty_typed_frame(history: Engine) -> None:
    frame = read_history(history, "nobody")
    assert frame.empty
    assert tuple(frame.columns) == HISTORY_COLUMNS
    assert pd.api.types.is_float_dtype(frame["value"])
    assert isinstance(frame["batch_time"].dtype, pd.DatetimeTZDtype)


def test_history_keeps_missing_values_as_nan(store: Engine) -> None:
    skipped = CheckResult.skipped("drift.text", "review", "no text column").to_dict()
    record_run(
        store,
        monitor="m",
        batch_id="b",
        batch_time=DAY0,
        results=[skipped],
        status="passed",
        worst_severity="none",
        rows=0,
    )
    frame = read_history(store, "m")
    assert frame[["metric", "status"]].values.tolist() == [["", "skipped"]]
    assert frame["value"].isna().all()


def test_list_runs_is_newest_first_and_filters_by_monitor(history: Engine) -> None:
    assert [r["batch_id"] for r in list_runs(history)] == ["x", "day2", "day1", "day0"]
    assert [r["batch_id"] for r in list_runs(history, "m", limit=2)] == ["day2", "day1"]
    assert list_runs(history, "nobody") == []


def test_latest_results_default_to_the_newest_batch(history: Engine) -> None:
    newest = latest_results(history, "m")
    assert [(r["check"], r["target"]) for r in newest] == [
        ("drift.numeric", "age"),
        ("drift.numeric", "income"),
        ("perf.overall", "model"),
    ]
    assert newest[0]["metrics"] == pytest.approx({"psi": 0.3, "ks_pvalue": 0.5})
    assert latest_results(history, "m", "day0")[2]["metrics"] == pytest.approx({"auc": 0.9})
    assert latest_results(history, "m", "no-such-batch") == []
    assert latest_results(history, "nobody") == []


def test_last_runs_keeps_the_newest_batches_of_the_monitor_only(history: Engine) -> None:
    whole = read_history(history, "m")
    newest_two = whole[whole["batch_time"] >= DAY0 + timedelta(days=1)].reset_index(drop=True)
    pd.testing.assert_frame_equal(read_history(history, "m", last_runs=2), newest_two)
    assert read_history(history, "m", metric="auc", last_runs=1)["batch_id"].tolist() == ["day2"]
    assert len(read_history(history, "m", last_runs=50)) == len(whole)
    with pytest.raises(ValueError, match="at least 1"):
        read_history(history, "m", last_runs=0)


def test_last_runs_is_served_by_indexes_not_a_scan_of_every_result(tmp_path) -> None:
    """On SQLite the bounded read looks the newest batches up by index and their rows by key."""
    from sqlalchemy import text

    from driftline.tasks.history.db import open_store
    from driftline.tasks.history.query import RESULTS, newest_batches

    engine = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    newest = newest_batches("m", 5)
    query = RESULTS.select().where(RESULTS.c.monitor == "m", RESULTS.c.batch_id.in_(newest))
    compiled = query.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as conn:
        plan = " | ".join(row[-1] for row in conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
    assert "SCAN results" not in plan and "SCAN runs" not in plan, plan
    assert "SEARCH results USING INDEX" in plan and "(monitor=? AND batch_id=?)" in plan, plan
    assert "SEARCH runs USING INDEX ix_runs_monitor_time" in plan, plan
