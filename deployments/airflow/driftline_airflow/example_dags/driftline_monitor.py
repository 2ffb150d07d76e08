"""The census employment classifier, monitored per batch, with retraining on the verdict.

Three DAGs joined by two assets (`driftline_airflow.assets`), no hand-wired triggers:

- `driftline_acs_score` stands for the scoring job: it writes a batch (the demo's ship with driftline)
  and emits an event on the monitor's batch asset, `{"batch_id": "2018-06"}` in its extra.
- `driftline_acs_monitor` runs on that asset (the event's batch) and once per half-year data interval
  (`AssetOrTimeSchedule`): the interval [2018-06-01, 2018-12-01) is batch `2018-06`. After every run it
  emits an event on the verdict asset: verdict, worst severity, failing checks, batch, report, and the
  retraining request. Its runs fail with the monitor on a failing batch.
- `driftline_acs_retrain` runs on the verdict asset and retrains for a verdict that asked for it (the
  spec's `retrain` threshold, reached on a failing batch); for a passing batch it is skipped, saying why.

A backfill runs one interval at a time, oldest first, and reprocesses a date a manual run took
(`--reprocess-behavior completed`; without it, the backfill skips such a date):

    airflow backfill create --dag-id driftline_acs_monitor --from-date 2016-06-01 --to-date 2018-12-01 \\
        --max-active-runs 1 --reprocess-behavior completed

Triggered by hand (the UI's Trigger button, `airflow dags trigger`), a run monitors the batch its conf
names (`{"batch_id": "2017-06"}`), else the newest batch; with a logical date, the batch of that date.

The DAGs are unpaused on creation: a backfill of a paused DAG, or an asset-triggered run of one, stays
queued without a word. The history store keeps one copy per batch however often a batch runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, AssetOrTimeSchedule, CronDataIntervalTimetable, Param, TriggerRule, task
from airflow.sdk.exceptions import AirflowSkipException

from driftline_airflow.assets import batch_asset, verdict_asset
from driftline_airflow.notifications import DriftlineNotifier
from driftline_airflow.operators import DriftlineMonitorOperator

MONITOR_DAG_ID = "driftline_acs_monitor"
RETRAIN_DAG_ID = "driftline_acs_retrain"
SCORE_DAG_ID = "driftline_acs_score"
MONITOR = "acs-employment"  # the demo spec's name, which names its assets
BATCHES, VERDICTS = batch_asset(MONITOR), verdict_asset(MONITOR)
START = datetime(2016, 6, 1, tzinfo=UTC)
TAGS = ["driftline", "example"]


with DAG(
    dag_id=SCORE_DAG_ID,
    description="Stands for the scoring job: writes a batch and announces it on the monitor's batch asset",
    schedule=None,
    start_date=START,
    catchup=False,
    is_paused_upon_creation=False,
    params={"batch_id": Param("2018-12", type="string", description="the batch scored, e.g. 2018-06")},
    tags=TAGS,
):

    @task(outlets=[BATCHES])
    def score(params: Any = None, outlet_events: Any = None) -> str:
        """Write the batch (here: the demo's data, built once) and name it in the asset event."""
        from driftline_airflow.example_dags.demo_data import ensure_demo_spec

        ensure_demo_spec()
        batch = str(params["batch_id"])
        outlet_events[BATCHES].extra = {"batch_id": batch}
        return batch

    score()


with DAG(
    dag_id=MONITOR_DAG_ID,
    description="driftline: drift, performance and fairness of the ACS employment model per batch",
    # Each batch the scoring DAG announces, and one interval per half year ([June 1, December 1) and
    # [December 1, June 1): the demo's batches) for backfills.
    schedule=AssetOrTimeSchedule(
        timetable=CronDataIntervalTimetable("0 0 1 6,12 *", timezone="UTC"), assets=BATCHES
    ),
    start_date=START,
    end_date=datetime(2019, 6, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # batches in order: incidents open, escalate and resolve batch after batch
    # No scheduled run is due (catchup is off and the demo's intervals are past): unpaused, the DAG
    # only runs what a batch event, a backfill or a user asks for.
    is_paused_upon_creation=False,
    # The trigger form's field: the batch a run started by hand monitors (empty: the newest batch).
    params={"batch_id": Param(None, type=["null", "string"], description="batch id, e.g. 2017-06")},
    tags=TAGS,
):

    @task
    def monitor_spec() -> str:
        """The spec to run: $DRIFTLINE_SPEC_PATH, else the demo's (its data written on first use)."""
        from driftline_airflow.example_dags.demo_data import ensure_demo_spec

        return str(ensure_demo_spec())

    monitor = DriftlineMonitorOperator(
        task_id="monitor",
        spec_path=monitor_spec(),
        batch_format="%Y-%m",  # the demo's batches are months: the interval [2018-06-01, ...) is 2018-06
        # the verdict to the driftline connection's Slack destination, else to the task log
        on_failure_callback=DriftlineNotifier(),
    )

    # The DAG run fails with the monitor (this leaf is then upstream_failed); an empty batch skips it.
    batch_passed = EmptyOperator(task_id="batch_passed")

    @task(outlets=[VERDICTS], trigger_rule=TriggerRule.ALL_DONE)
    def publish_verdict(ti: Any = None, outlet_events: Any = None) -> dict[str, Any]:
        """Emit the run's verdict on the verdict asset, whether the monitor passed, failed or skipped;
        nothing when it crashed before pushing its summary."""
        from driftline_airflow.assets import verdict_extra

        summary = ti.xcom_pull(task_ids="monitor")
        if not summary:
            raise AirflowSkipException("the monitor pushed no summary (it did not finish): no verdict")
        extra = verdict_extra(summary)
        outlet_events[VERDICTS].extra = extra
        return extra

    monitor >> [batch_passed, publish_verdict()]


with DAG(
    dag_id=RETRAIN_DAG_ID,
    description="Retrain the ACS employment model when a driftline verdict asks for it",
    schedule=VERDICTS,
    start_date=START,
    catchup=False,
    is_paused_upon_creation=False,  # paused, a verdict's retraining run would wait unnoticed
    tags=TAGS,
):

    @task
    def retrain(**context: Any) -> list[dict[str, Any]]:
        """Stands for the team's training job: retrains for the verdicts that asked for it, and is
        skipped (saying why) when none did."""
        from driftline_airflow.assets import retraining_due, verdicts

        due, why_not = retraining_due(verdicts(context))
        for reason in why_not:
            print(reason)
        if not due:
            raise AirflowSkipException("; ".join(why_not) or "no driftline verdict triggered this run")
        for verdict in due:
            checks = ", ".join(f"{c['check']}[{c['target']}]" for c in verdict["failing_checks"])
            print(f"retraining after {verdict['monitor']} batch {verdict['batch_id']} failed: {checks}")
        return due

    retrain()
