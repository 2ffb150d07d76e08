"""The example DAG end to end with `dag.test()`: one monitor run per data interval over the demo's six
batches (the intervals Airflow's backfill plans for the DAG, oldest first), the XCom summary, the
history rows, the failed task on a drifted batch, the verdict asset event and its retraining request,
idempotence, and the same stored results as the core run the way `driftline run` runs it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text

START, END = datetime(2016, 6, 1, tzinfo=UTC), datetime(2018, 12, 1, tzinfo=UTC)
BATCHES = ["2016-06", "2016-12", "2017-06", "2017-12", "2018-06", "2018-12"]
MONITOR = "acs-employment"


def load_dags() -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag()
    assert not bag.import_errors, bag.import_errors
    return bag.dags


def planned_intervals(dag: Any) -> list[tuple[datetime, datetime]]:
    """The data intervals a backfill from START to END creates, from the DAG's own timetable."""
    from airflow.serialization.serialized_objects import DagSerialization

    serialized = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    infos = serialized.iter_dagrun_infos_between(START, END)
    return [(i.data_interval.start, i.data_interval.end) for i in infos]


def states(run: Any) -> dict[str, str]:
    return {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()}


def xcom(run: Any, task_id: str) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.settings import Session

    with Session() as session:
        row = session.scalars(
            XComModel.get_many(run_id=run.run_id, key="return_value", task_ids=task_id, dag_ids=run.dag_id)
        ).first()
        return XComModel.deserialize_value(row) if row is not None else None


@pytest.fixture(scope="module")
def backfill(airflow_db: Path) -> dict[str, Any]:
    """Every planned interval run once through dag.test(), oldest first."""
    dags = load_dags()
    dag = dags["driftline_acs_monitor"]
    intervals = planned_intervals(dag)
    runs = {}
    for start, _ in intervals:
        # A backfill's run carries its interval's start as logical date, which names the batch.
        run = dag.test(logical_date=start)
        batch = start.strftime("%Y-%m")
        runs[batch] = {"states": states(run), "summary": xcom(run, "monitor"), "run": run}
        assert runs[batch]["summary"]["batch_id"] == batch
    return {"dag": dag, "intervals": intervals, "runs": runs}


def verdict_events(run: Any) -> list[dict[str, Any]]:
    """The extras of the verdict asset events a monitor DAG run emitted."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.settings import Session

    from driftline_airflow.example_dags.driftline_monitor import VERDICTS

    query = (
        select(AssetEvent.extra)
        .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
        .where(AssetModel.uri == VERDICTS.uri, AssetEvent.source_run_id == run.run_id)
        .order_by(AssetEvent.timestamp)
    )
    with Session() as session:
        return [dict(extra) for extra in session.scalars(query)]


def stored_runs(url: str) -> list[dict[str, Any]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT batch_id, status, flow_run_id FROM runs ORDER BY id")).mappings()
        return [dict(r) for r in rows]


def metric_rows(url: str, batch_id: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    query = text(
        'SELECT r."check", r.target, r.metric, r.value, r.severity, r.failing_rows FROM results r '
        "JOIN runs ON r.run_id = runs.id WHERE runs.batch_id = :b ORDER BY 1, 2, 3"
    )
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query, {"b": batch_id})]


def test_backfill_plans_one_interval_per_batch_in_order(backfill: dict[str, Any]) -> None:
    starts = [start.strftime("%Y-%m") for start, _ in backfill["intervals"]]
    assert starts == BATCHES


def test_one_stored_run_per_interval_in_order(backfill: dict[str, Any], history_url: str) -> None:
    runs = stored_runs(history_url)
    assert [r["batch_id"] for r in runs] == BATCHES
    # the task instance id of each Airflow run is stored with the driftline run
    assert all(r["flow_run_id"] for r in runs)
    assert {r["flow_run_id"] for r in runs} == {
        str(b["run"].get_task_instance("monitor").id) for b in backfill["runs"].values()
    }


def test_passing_batch_succeeds_and_pushes_its_summary(backfill: dict[str, Any]) -> None:
    first = backfill["runs"]["2016-06"]
    assert first["states"] == {
        "monitor_spec": "success",
        "monitor": "success",
        "batch_passed": "success",
        "publish_verdict": "success",
    }
    summary = first["summary"]
    assert summary["monitor"] == MONITOR and summary["batch_id"] == "2016-06"
    assert summary["status"] == "passed" and summary["failing_checks"] == []
    assert summary["engine"] == "airflow" and summary["rows"] == 6000
    assert summary["stored"].startswith("stored run")
    (verdict,) = verdict_events(first["run"])
    assert verdict["verdict"] == "passed" and verdict["batch_id"] == "2016-06" and verdict["retrain"] is None


def test_drifted_batch_fails_the_task_and_asks_for_retraining(backfill: dict[str, Any]) -> None:
    drifted = backfill["runs"]["2018-06"]
    assert drifted["states"]["monitor"] == "failed"
    assert drifted["states"]["batch_passed"] == "upstream_failed"
    assert drifted["states"]["publish_verdict"] == "success"
    assert (
        str(drifted["run"].state.value if hasattr(drifted["run"].state, "value") else drifted["run"].state)
        == "failed"
    )

    summary = drifted["summary"]
    assert summary["status"] == "failed" and summary["worst_severity"] == "high"
    failing = {(c["check"], c["target"]) for c in summary["failing_checks"]}
    assert ("drift.numeric", "AGEP") in failing
    assert all(c["severity"] == "high" for c in summary["failing_checks"])
    report = Path(summary["report_path"])
    assert report.name == "report.md" and "drift.numeric" in report.read_text()
    assert json.loads((report.parent / "summary.json").read_text())["status"] == "failed"

    (verdict,) = verdict_events(drifted["run"])
    assert (
        verdict["monitor"] == MONITOR and verdict["batch_id"] == "2018-06" and verdict["verdict"] == "failed"
    )
    assert verdict["worst_severity"] == "high" and verdict["report_path"] == summary["report_path"]
    assert verdict["failing_checks"] == summary["failing_checks"]
    assert verdict["retrain"]["batch_id"] == "2018-06" and verdict["retrain"]["severity"] == "high"


def test_only_failed_batches_ask_for_retraining(backfill: dict[str, Any]) -> None:
    from driftline_airflow.assets import retraining_due

    failed = [b for b, r in backfill["runs"].items() if r["summary"]["status"] == "failed"]
    assert failed and "2016-06" not in failed
    extras = [e for r in backfill["runs"].values() for e in verdict_events(r["run"])]
    assert [e["batch_id"] for e in extras] == BATCHES  # one verdict per run
    due, _ = retraining_due(extras)
    assert {e["batch_id"] for e in due} <= set(failed) and due


def test_rerunning_an_interval_stores_one_copy(backfill: dict[str, Any], history_url: str) -> None:
    before = metric_rows(history_url, "2018-06")
    run = backfill["dag"].test(logical_date=datetime(2018, 6, 1, tzinfo=UTC))
    assert states(run)["monitor"] == "failed"
    assert [r["batch_id"] for r in stored_runs(history_url)].count("2018-06") == 1
    assert metric_rows(history_url, "2018-06") == before
    # the re-run's verdict asks for no retraining: the incident it failed on was retrained already
    (verdict,) = verdict_events(run)
    assert verdict["verdict"] == "failed" and verdict["retrain"] is None


def test_stored_results_equal_the_core_run(
    backfill: dict[str, Any], history_url: str, tmp_path: Path
) -> None:
    """The rows the operator stored equal those of the core run as `driftline run` runs it, over the
    same batches before it (evidence accumulates over a monitor's recent batches)."""
    from driftline.tasks.config.spec import load_spec
    from driftline.tasks.run.pipeline import run_monitor

    spec_path = Path(os.environ["DRIFTLINE_DEMO_DIR"]) / "monitor.yaml"
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    spec = load_spec(spec_path).model_copy(update={"store_url": url})
    for batch in BATCHES[: BATCHES.index("2018-06") + 1]:
        summary = run_monitor(spec, batch, alerts=False, retrain=False)
    assert summary.status == "failed"
    ours, theirs = metric_rows(history_url, "2018-06"), metric_rows(url, "2018-06")
    assert len(ours) > 50
    assert ours == theirs


def test_incidents_and_outbox_follow_the_batches(backfill: dict[str, Any], history_url: str) -> None:
    """Alerts went through the core: incidents opened on drift, console messages in the outbox."""
    engine = create_engine(history_url)
    with engine.connect() as conn:
        incidents = conn.execute(select(func.count()).select_from(text("incidents"))).scalar_one()
        outbox = conn.execute(select(func.count()).select_from(text("alert_outbox"))).scalar_one()
    assert incidents > 0 and outbox > 0


def monitored(run: Any) -> str:
    """The batch a DAG run's monitor task evaluated (from its XCom summary)."""
    return xcom(run, "monitor")["batch_id"]


def test_triggered_without_logical_date_monitors_the_conf_batch_or_the_newest(
    backfill: dict[str, Any],
) -> None:
    """The UI's Trigger button: no logical date, so no data interval to template a batch from."""
    dag = backfill["dag"]
    newest = dag.test(logical_date=None)
    assert newest.logical_date is None and newest.data_interval_start is None
    assert states(newest)["monitor_spec"] == "success"
    assert monitored(newest) == BATCHES[-1]
    chosen = dag.test(logical_date=None, run_conf={"batch_id": "2017-06"})
    assert monitored(chosen) == "2017-06" and states(chosen)["monitor"] == "success"


def test_triggered_with_a_logical_date_monitors_that_dates_batch(backfill: dict[str, Any]) -> None:
    """`airflow dags trigger --logical-date 2017-12-01`: the date names the batch, whatever interval
    Airflow infers for the run (from the trigger time)."""
    run = backfill["dag"].test(logical_date=datetime(2017, 12, 1, tzinfo=UTC))
    assert run.data_interval_start != datetime(2017, 12, 1, tzinfo=UTC)
    assert monitored(run) == "2017-12"
