"""The Airflow engine of the monitor core: logs to the task log, secrets from Airflow Connections, the
run report as a file beside the figures.

Steps and checks run as under the plain engine (in the task's process, each check in its own worker
process): an Airflow task is the unit of scheduling and retry, so the core's steps stay inside it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.retraining.actions import RetrainRequest, trigger_plain
from driftline.tasks.run.driver import Driver
from driftline.tasks.run.pipeline import report_dir
from driftline_airflow.connections import get_connection, slack_secret
from driftline_airflow.report import write_report

log = logging.getLogger("driftline.airflow")
BACKFILL_SKIP = "not started in a backfill run (the operator's backfill_alerts is off)"


class AirflowDriver(Driver):
    """Runs the monitor core inside one Airflow task instance."""

    name = "airflow"

    def __init__(
        self,
        spec: MonitorSpec,
        ti_id: str | None = None,
        ti_url: str | None = None,
        *,
        start_retraining: bool = True,
    ) -> None:
        self.spec = spec
        self.start_retraining = start_retraining
        self._ti_id = ti_id
        self._ti_url = ti_url
        self.retrain_request: RetrainRequest | None = None
        self.report_path: Path | None = None

    @property
    def logger(self) -> Any:
        return log

    @property
    def run_id(self) -> str | None:
        """The task instance id (a UUID), stored with the run."""
        return self._ti_id

    @property
    def run_url(self) -> str | None:
        return self._ti_url

    def secret(self, block: str) -> str | None:
        """The secret of the Airflow Connection named `block` (the spec's `token_block`)."""
        conn = get_connection(block)
        if conn is None:
            self.logger.error("Airflow connection %r is not defined; the alert stays queued", block)
            return None
        return slack_secret(conn)

    def retrain(self, spec: MonitorSpec, request: RetrainRequest, state_dir: Path) -> dict[str, Any]:
        """The spec's command or webhook (not started in a backfill run without `backfill_alerts`); the
        retraining DAG itself is triggered by the DAG (see `retrain_conf` in the monitor's XCom)."""
        retrain = spec.retrain
        assert retrain is not None
        self.retrain_request = request
        if self.start_retraining:
            outcome = trigger_plain(retrain, request, state_dir)
        else:
            actions = ["command"] * bool(retrain.command) + ["webhook"] * bool(
                retrain.webhook_url or retrain.webhook_url_env
            )
            outcome = {name: {"skipped": BACKFILL_SKIP} for name in actions}
        if retrain.deployment or retrain.emits:
            outcome["airflow"] = {"due": "the DAG's failure branch triggers the retraining DAG"}
        return outcome

    def publish(self, summary: dict[str, Any], figures: list[Path]) -> None:
        """Write the run report (JSON and Markdown) where the figures are."""
        folder = report_dir(self.spec, summary["batch_id"])
        self.report_path = write_report(summary, figures, folder)
