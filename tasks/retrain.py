"""Acting on a failing model: a Prefect event for automations and a run of the retraining deployment.

Both are idempotent per (monitor, batch, reference): re-running a batch does not start a second
retraining run (the deployment run carries an idempotency key) nor count as a second event (the event
id is derived from the same key).
"""

from __future__ import annotations

import logging
import uuid
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
    run_key: str,
    worst_severity: str,
    failing_checks: list[dict[str, Any]],
    deployment: str | None,
    parameters: dict[str, Any],
    emit: bool,
    spec_path: str | None = None,
) -> dict[str, Any]:
    """Emit `driftline.monitor.failed` (when `emit`) and start `deployment` without waiting for it.

    `run_key` identifies the batch evaluation (monitor, batch, reference); it makes both actions
    idempotent. Returns what happened (event id, flow run id, or the error) so the run record keeps
    it; a failure to start the deployment is reported, never raised, so the results are still stored.
    """
    outcome: dict[str, Any] = {"event": None, "flow_run_id": None, "error": None}
    key = f"driftline:{monitor}:{batch_id}:{run_key}"
    if emit:
        from prefect.events import emit_event

        payload = {
            "batch_id": batch_id,
            "severity": worst_severity,
            "failing_checks": failing_checks,
            "spec_path": spec_path,
        }
        event_id = uuid.uuid5(uuid.NAMESPACE_URL, key)
        emit_event(event=FAILED_EVENT, resource=monitor_resource(monitor), payload=payload, id=event_id)
        outcome["event"] = str(event_id)
    if deployment:
        from prefect.deployments import run_deployment

        run_parameters = {"monitor": monitor, "batch_id": batch_id, "severity": worst_severity, **parameters}
        try:
            flow_run = run_deployment(
                name=deployment, parameters=run_parameters, timeout=0, idempotency_key=key, as_subflow=False
            )
            outcome["flow_run_id"] = str(flow_run.id)
        except Exception as exc:
            outcome["error"] = f"could not start deployment {deployment!r}: {type(exc).__name__}: {exc}"
            log.error(outcome["error"])
    return outcome
