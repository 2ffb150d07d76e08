"""`DriftlineMonitorOperator`: one monitor run over one batch, in-process, through the driftline core.

The task stores the same run, results, incidents and outbox rows as `driftline run` (the same core
function, `driftline.tasks.run.pipeline.run_monitor`) and maps the outcome the way the CLI maps it to exit
codes: a check at `fail_on` fails the task (exit 1), an empty batch skips it, a bad spec or unreadable
data fails it without retries (exit 2), anything unexpected raises and is retried (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from driftline_airflow.batches import chosen_batch, run_type, stray_run_note, unmonitored_note
from driftline_airflow.connections import (
    DB_CONN_ID,
    SLACK_CONN_ID,
    first_holding,
    resolve_store_url,
    with_slack_connection,
)
from driftline_airflow.hooks.driftline import CONN_TYPE, DEFAULT_CONN_ID, slack_secret_of, store_url_of
from driftline_airflow.links import REPORT_URL_KEY, DriftlineReportLink, run_report_url
from driftline_airflow.xcom import failing_checks, severity_counts, strict_json, verdict

XCOM_RETURN_KEY = "return_value"
# The core's severity scale (`driftline.checks.result.SEVERITIES`, a test keeps them equal), named here
# so that checking `fail_on` while a DAG file is parsed does not import the core and its pandas.
SEVERITIES = ("none", "low", "medium", "high")


def _driftline_conn(conn: Any) -> bool:
    return (conn.conn_type or "").lower() == CONN_TYPE


def task_instance_ids(context: Any) -> tuple[str | None, str | None]:
    """The task instance's id (stored with the run) and its log URL (linked from alerts), if known."""
    ti = context.get("ti")
    ti_id = getattr(ti, "id", None)
    try:
        url = getattr(ti, "log_url", None)
    except Exception:  # the URL needs the API's base URL in the config; an alert works without it
        url = None
    return (str(ti_id) if ti_id else None), url


class DriftlineMonitorOperator(BaseOperator):
    """Run the driftline monitor of `spec_path` over batch `batch_id` and push its summary to XCom.

    :param spec_path: the monitor spec (YAML). Templated.
    :param batch_id: the batch to evaluate; default (None) decided when the task runs: the run's conf
        `batch_id`, else the run's date as `batch_format` (a scheduled or backfill run's data interval
        start, a manual run's logical date), else the newest batch (a run without a logical date,
        as the UI's Trigger button makes). Empty: the newest batch. The run's conf `batch_id` wins
        over this argument too. Templated.
    :param batch_format: how the run's date names its batch (`strftime`), default `%Y-%m-%d`.
    :param fail_on: the severity at which the task fails (`none` never fails); default the spec's
        `fail_on`. The stored run keeps the spec's verdict either way.
    :param alerts: process alerts (incidents, Slack or console) for this run.
    :param retrain: start the spec's retraining command or webhook when the run reaches it.
    :param backfill_alerts: in backfill runs, alerts are off and the spec's retraining command or
        webhook is not started (as under `driftline backfill`) unless this is set. The retraining
        decision is made either way: the XCom's `retraining` says what was started or skipped, and
        `retrain_conf` is what a DAG triggers its retraining DAG with.
    :param store_url: the history database (SQLAlchemy URL); default the spec's `store_url`, else
        $DRIFTLINE_DATABASE_URL, else the `db_conn_id` connection, else driftline.db beside the
        spec. Templated.
    :param driftline_conn_id: a `driftline` connection (`DriftlineHook`): its history store URL, Slack
        credential and report link template, used before `db_conn_id` and `slack_conn_id` for what it
        holds; ignored when not defined.
    :param db_conn_id: the Airflow connection of the history database.
    :param slack_conn_id: the Airflow connection holding the Slack bot token (password) or incoming
        webhook URL, used when the spec's environment variable is unset.
    """

    template_fields: Sequence[str] = ("spec_path", "batch_id", "store_url")
    ui_color = "#e8f4f8"
    operator_extra_links = (DriftlineReportLink(),)

    def __init__(
        self,
        *,
        spec_path: str,
        batch_id: str | None = None,
        batch_format: str = "%Y-%m-%d",
        fail_on: str | None = None,
        alerts: bool = True,
        retrain: bool = True,
        backfill_alerts: bool = False,
        store_url: str | None = None,
        driftline_conn_id: str | None = DEFAULT_CONN_ID,
        db_conn_id: str | None = DB_CONN_ID,
        slack_conn_id: str | None = SLACK_CONN_ID,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if fail_on is not None and fail_on not in SEVERITIES:
            raise ValueError(f"fail_on must be one of {', '.join(SEVERITIES)} or None, not {fail_on!r}")
        self.spec_path = spec_path
        self.batch_id = batch_id
        self.batch_format = batch_format
        self.fail_on = fail_on
        self.alerts = alerts
        self.retrain = retrain
        self.backfill_alerts = backfill_alerts
        self.store_url = store_url
        self.driftline_conn_id = driftline_conn_id
        self.db_conn_id = db_conn_id
        self.slack_conn_id = slack_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        """Run the monitor; return (push) the summary, or push it and fail or skip the task."""
        from driftline.tasks.config.spec import SpecError, severity_at_least
        from driftline.tasks.references.model import ModelError
        from driftline.tasks.run.pipeline import run_monitor
        from driftline.tasks.sources import SourceError
        from driftline.tasks.tools.safe_text import printable
        from driftline_airflow.driver import AirflowDriver

        try:
            spec = self.prepared_spec()
            batch_id, why = chosen_batch(context, self.batch_id, self.batch_format)
        except (SpecError, ValueError) as exc:
            raise AirflowFailException(str(exc)) from None
        self.log.info("batch %s: %s", printable(batch_id or "(newest)"), why)
        for note in (stray_run_note(context), unmonitored_note(context)):
            if note:
                self.log.warning("%s", printable(note))
        act = run_type(context) != "backfill" or self.backfill_alerts
        driver = AirflowDriver(spec, *task_instance_ids(context), start_retraining=act)
        try:
            summary = run_monitor(
                spec, batch_id, driver=driver, alerts=self.alerts and act, retrain=self.retrain
            )
        except (SourceError, SpecError, ModelError) as exc:
            raise AirflowFailException(str(exc)) from None

        fail_on = self.fail_on or spec.fail_on
        if self.fail_on is None:
            failed = summary.status == "failed"
        else:
            failed = severity_at_least(summary.worst_severity, self.fail_on)
        payload = self.xcom_summary(summary, fail_on, driver)
        self.push_report_url(context, payload, summary.report)
        if summary.status == "empty":
            context["ti"].xcom_push(key=XCOM_RETURN_KEY, value=payload)
            raise AirflowSkipException(f"batch {summary.batch_id} of {summary.monitor} is empty")
        if failed:
            context["ti"].xcom_push(key=XCOM_RETURN_KEY, value=payload)
            raise AirflowFailException(verdict(summary, fail_on))
        return payload

    def prepared_spec(self) -> Any:
        """The spec, with the history database and Slack credential from the operator or connections."""
        from driftline.tasks.config.spec import load_spec

        spec = load_spec(Path(self.spec_path))
        db_conn = first_holding(
            (self.driftline_conn_id, self.db_conn_id), lambda c: _driftline_conn(c) and store_url_of(c)
        )
        store_url = resolve_store_url(spec, self.store_url, db_conn)
        if store_url and store_url != spec.store_url:
            spec = spec.model_copy(update={"store_url": store_url})
        slack_conn = first_holding(
            (self.driftline_conn_id, self.slack_conn_id), lambda c: _driftline_conn(c) and slack_secret_of(c)
        )
        return with_slack_connection(spec, slack_conn)

    def push_report_url(self, context: Any, payload: dict[str, Any], html_report: str | None) -> None:
        """Push the URL of the run's report (HTML, else Markdown) for the task's extra link."""
        report = html_report or payload["report_path"]
        if not report:
            return
        url = run_report_url(self.driftline_conn_id, payload["monitor"], payload["batch_id"], Path(report))
        payload["report_url"] = url
        context["ti"].xcom_push(key=REPORT_URL_KEY, value=url)

    @staticmethod
    def xcom_summary(summary: Any, fail_on: str, driver: Any) -> dict[str, Any]:
        """The run in brief: verdict, worst severity, failing checks, where the report and history are,
        and the retraining conf when the spec's retraining threshold was reached."""
        request = driver.retrain_request
        retrain_conf = (
            {
                "monitor": request.monitor,
                "batch_id": request.batch_id,
                "severity": request.severity,
                "failing_checks": request.failing_checks,
                "spec_path": request.spec_path,
                "idempotency_key": request.key,
            }
            if request is not None
            else None
        )
        return strict_json(
            {
                "monitor": summary.monitor,
                "batch_id": summary.batch_id,
                "batch_time": summary.batch_time,
                "rows": summary.rows,
                "status": summary.status,
                "worst_severity": summary.worst_severity,
                "fail_on": fail_on,
                "failing_checks": failing_checks(summary, fail_on) if fail_on != "none" else [],
                "counts": severity_counts(summary.results),
                "report_path": str(driver.report_path) if driver.report_path else None,
                "figures": summary.figures,
                "stored": summary.stored,
                "alerts": summary.alerts,
                "retraining": summary.retraining,
                "retrain_conf": retrain_conf,
                "engine": summary.engine,
            }
        )
