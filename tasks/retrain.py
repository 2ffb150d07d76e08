"""Acting on a failing model: a Prefect event for automations and a run of the retraining deployment."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

FAILED_EVENT = "driftline.monitor.failed"


def monitor_resource(monitor: str) -> dict[str, str]:
    """The Prefect event resource that names a monitor."""
    return {"prefect.resource.id": f"driftline.monitor.{monitor}", "prefect.resource.name": monitor}


def trigger_retraining(
    *,
    monitor: str,
    batch_id: str,
    worst_severity: str,
    failing_checks: list[dict[str, Any]],
    deployment: str | None,
    parameters: dict[str, Any],
    emit: bool = True,
) -> dict[str, Any]:
    """Emit `driftline.monitor.failed` and start `deployment` without waiting for it.

    Returns what happened (event id, flow run id, or the error) so the run record keeps it; a failure
    to start the deployment is reported, never raised, so the monitor's results are still stored.
    """
    outcome: dict[str, Any] = {"event": None, "flow_run_id": None, "error": None}
    payload = {"batch_id": batch_id, "severity": worst_severity, "failing_checks": failing_checks}
    if emit:
        from prefect.events import emit_event

        event = emit_event(event=FAILED_EVENT, resource=monitor_resource(monitor), payload=payload)
        outcome["event"] = str(event.id) if event else None
    if deployment:
        from prefect.deployments import run_deployment

        run_parameters = {"monitor": monitor, "batch_id": batch_id, "severity": worst_severity, **parameters}
        try:
            flow_run = run_deployment(name=deployment, parameters=run_parameters, timeout=0)
            outcome["flow_run_id"] = str(flow_run.id)
        except Exception as exc:
            outcome["error"] = f"could not start deployment {deployment!r}: {type(exc).__name__}: {exc}"
            log.error(outcome["error"])
    return outcome
