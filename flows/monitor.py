"""The monitor as a Prefect flow: the orchestrator-free core run by the Prefect driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from driftline.flows.prefect_driver import PrefectDriver
from driftline.tasks.pipeline import run_monitor
from driftline.tasks.spec import MonitorSpec, load_spec

# Each check task waits on its own worker process (process isolation), so threads suffice here.
CHECK_RUNNER = ThreadPoolTaskRunner(max_workers=4)


@flow(name="driftline-monitor", task_runner=CHECK_RUNNER)
def monitor(
    spec_path: str, batch_id: str | None = None, alerts: bool = True, retrain: bool = True
) -> dict[str, Any]:
    """Run the monitor described by the spec file over one batch (the newest when `batch_id` is empty)."""
    spec = load_spec(spec_path)
    summary = run_monitor(spec, batch_id, driver=PrefectDriver(), alerts=alerts, retrain=retrain)
    return summary.to_dict()


def monitor_deployment(spec: MonitorSpec, spec_path: Path) -> Any:
    """The monitor as a Prefect deployment on the spec's cron schedule (what `driftline serve` serves).

    Its entrypoint is the module path, so runs load the installed flow from any working directory.
    """
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    return monitor.to_deployment(
        name=spec.name,
        schedule=Cron(spec.schedule.cron, timezone=spec.schedule.timezone),
        parameters={"spec_path": str(spec_path.resolve())},
        description=spec.description or f"driftline monitor {spec.name}",
        tags=["driftline"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
