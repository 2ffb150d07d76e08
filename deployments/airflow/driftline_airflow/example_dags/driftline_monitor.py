"""Monitor the census employment classifier once per half-year data interval; when the model fails,
trigger the retraining DAG with the monitor, the batch and the failing checks as its conf.

A data interval monitors the batch named after the month it starts: [2018-06-01, 2018-12-01) is batch
`2018-06`, the way the demo writes its batches. (Airflow names the run after the interval's end,
`backfill__2018-12-01T00:00:00+00:00`; the retraining run it triggers is `driftline__2018-06`.)
A backfill runs one interval at a time, oldest first, when given `--max-active-runs 1` (a backfill
has its own limit, 10 by default, and ignores the DAG's `max_active_runs`):

    airflow backfill create --dag-id driftline_acs_monitor --from-date 2016-06-01 --to-date 2018-12-01 \\
        --max-active-runs 1

Triggered by hand (the UI's Trigger button, `airflow dags trigger`), a run monitors the batch its conf
names (`{"batch_id": "2017-06"}`), else the newest batch; with a logical date, the batch of that date.

Both DAGs are unpaused on creation: a backfill of a paused DAG, or a retraining run triggered on a
paused DAG, stays queued without a word. The history store keeps one copy per batch however often an
interval runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, Param, TriggerRule, task
from airflow.sdk.exceptions import AirflowSkipException

from driftline_airflow.operators import DriftlineMonitorOperator

MONITOR_DAG_ID = "driftline_acs_monitor"
RETRAIN_DAG_ID = "driftline_acs_retrain"

with DAG(
    dag_id=MONITOR_DAG_ID,
    description="driftline: drift, performance and fairness of the ACS employment model per interval",
    # One interval per half year, [June 1, December 1) and [December 1, June 1): the demo's batches.
    schedule=CronDataIntervalTimetable("0 0 1 6,12 *", timezone="UTC"),
    start_date=datetime(2016, 6, 1, tzinfo=UTC),
    end_date=datetime(2019, 6, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # intervals in order: incidents open, escalate and resolve batch after batch
    # No scheduled run is due (catchup is off and the demo's intervals are past): unpaused, the DAG
    # only runs what a backfill or a user asks for, without a separate `airflow dags unpause`.
    is_paused_upon_creation=False,
    # The trigger form's field: the batch a run started by hand monitors (empty: the newest batch).
    params={"batch_id": Param(None, type=["null", "string"], description="batch id, e.g. 2017-06")},
    tags=["driftline", "example"],
) as dag:

    @task
    def monitor_spec() -> str:
        """The spec to run: $DRIFTLINE_SPEC_PATH, else the demo's (its data written on first use)."""
        from driftline_airflow.example_dags.demo_data import ensure_demo_spec

        return str(ensure_demo_spec())

    monitor = DriftlineMonitorOperator(
        task_id="monitor",
        spec_path=monitor_spec(),
        batch_format="%Y-%m",  # the demo's batches are months: the interval [2018-06-01, ...) is 2018-06
    )

    # The DAG run fails with the monitor (this leaf is then upstream_failed); an empty batch skips both.
    batch_passed = EmptyOperator(task_id="batch_passed")

    @task(trigger_rule=TriggerRule.ONE_FAILED)
    def retraining_conf(ti: Any = None) -> dict[str, Any]:
        """The retraining DAG's conf when the monitor's run asked for retraining (its `retrain_conf`:
        the spec's `retrain` threshold reached on the newest batch), not when it crashed."""
        summary = ti.xcom_pull(task_ids="monitor")
        if not summary or not summary.get("retrain_conf"):
            retraining = (summary or {}).get("retraining")
            raise AirflowSkipException(f"the monitor asked for no retraining ({retraining or 'none due'})")
        return {
            "monitor": summary["monitor"],
            "batch_id": summary["batch_id"],
            "severity": summary["worst_severity"],
            "failing_checks": summary["failing_checks"],
            "report_path": summary["report_path"],
        }

    conf = retraining_conf()
    trigger = TriggerDagRunOperator(
        task_id="trigger_retraining",
        trigger_dag_id=RETRAIN_DAG_ID,
        # One retraining run per monitor and batch, however often the interval is re-run.
        trigger_run_id="driftline__{{ ti.xcom_pull(task_ids='monitor')['batch_id'] }}",
        skip_when_already_exists=True,
        conf=conf,
        wait_for_completion=False,
    )
    monitor >> [batch_passed, conf]


with DAG(
    dag_id=RETRAIN_DAG_ID,
    description="Retrain the ACS employment model (started by driftline_acs_monitor with the failure)",
    schedule=None,
    start_date=datetime(2016, 6, 1, tzinfo=UTC),
    catchup=False,
    is_paused_upon_creation=False,  # paused, a triggered retraining run would wait unnoticed
    tags=["driftline", "example"],
) as retrain_dag:

    @task
    def retrain(dag_run: Any = None) -> dict[str, Any]:
        """Stands for the team's training job: reads which monitor, batch and checks failed."""
        conf = dict(dag_run.conf or {})
        checks = ", ".join(f"{c['check']}[{c['target']}]" for c in conf.get("failing_checks", []))
        print(f"retraining after {conf.get('monitor')} batch {conf.get('batch_id')} failed: {checks}")
        return conf

    retrain()
