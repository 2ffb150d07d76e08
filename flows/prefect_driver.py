"""The Prefect engine: the monitor core's steps as Prefect tasks, a task per check, secrets from
Secret blocks, retraining by event or deployment run, and the run report as artifacts."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait
from prefect.runtime import flow_run

from driftline.flows.report import publish_artifacts
from driftline.tasks.driver import CheckJob, Driver
from driftline.tasks.retrain import FAILED_EVENT, RetrainRequest, trigger_plain
from driftline.tasks.spec import MonitorSpec
from driftline.tasks.steps import IO_RETRIES, is_transient

T = TypeVar("T")


def retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry the step only when it failed on transient I/O."""
    try:
        state.result()
    except Exception as exc:
        return is_transient(exc)
    return False


# Frames are passed by reference between threads: never hash them for Prefect's cache, never persist them.
IN_MEMORY = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="check", **IN_MEMORY)
def run_check_job(job: CheckJob) -> list[dict[str, Any]]:
    """One check of the run (in its own worker process under process isolation)."""
    return job.run()


def monitor_resource(monitor: str) -> dict[str, str]:
    """The Prefect event resource that names a monitor."""
    return {"prefect.resource.id": f"driftline.monitor.{monitor}", "prefect.resource.name": monitor}


def emit_failure(request: RetrainRequest) -> str:
    """Emit `driftline.monitor.failed`; the event id comes from the request key, so a re-run is one event."""
    from prefect.events import emit_event

    payload = {
        "batch_id": request.batch_id,
        "severity": request.severity,
        "failing_checks": request.failing_checks,
        "spec_path": request.spec_path,
    }
    event_id = uuid.uuid5(uuid.NAMESPACE_URL, request.key)
    emit_event(event=FAILED_EVENT, resource=monitor_resource(request.monitor), payload=payload, id=event_id)
    return str(event_id)


def start_deployment(deployment: str, request: RetrainRequest, parameters: dict[str, Any]) -> str:
    """Start `deployment` without waiting; its idempotency key makes a re-run start nothing new."""
    from prefect.deployments import run_deployment

    run_parameters = {
        "monitor": request.monitor,
        "batch_id": request.batch_id,
        "severity": request.severity,
        **parameters,
    }
    started = run_deployment(
        name=deployment, parameters=run_parameters, timeout=0, idempotency_key=request.key, as_subflow=False
    )
    return str(started.id)


class PrefectDriver(Driver):
    """Runs the monitor core inside a Prefect flow run."""

    name = "prefect"

    @property
    def logger(self) -> Any:
        return get_run_logger()

    @property
    def run_id(self) -> str | None:
        return flow_run.id

    @property
    def run_url(self) -> str | None:
        from prefect.settings import PREFECT_UI_URL

        return flow_run.ui_url if PREFECT_UI_URL.value() else None

    def step(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        as_task = task(
            fn,
            name=name,
            retries=IO_RETRIES.retries,
            retry_delay_seconds=list(IO_RETRIES.delays),
            retry_condition_fn=retry_transient,
            **IN_MEMORY,
        )
        return as_task(*args)

    def fan_out(self, jobs: list[CheckJob], workers: int) -> list[list[dict[str, Any]]]:
        """A task per check, named after the check and its targets; the flow's task runner sets the
        parallelism. A task that crashes becomes the check's `error` result."""
        futures = [run_check_job.with_options(task_run_name=job.label).submit(job) for job in jobs]
        wait(futures)
        outcomes = []
        for future, job in zip(futures, jobs, strict=True):
            try:
                outcomes.append(future.result())
            except Exception as exc:
                outcomes.append(job.failed(exc))
        return outcomes

    def secret(self, block: str) -> str | None:
        from prefect.blocks.system import Secret

        try:
            return Secret.load(block).get()
        except Exception as exc:
            self.logger.error("cannot load the Prefect Secret block %r: %s", block, type(exc).__name__)
            return None

    def retrain(self, spec: MonitorSpec, request: RetrainRequest, state_dir: Path) -> dict[str, Any]:
        """The spec's command or webhook, then the failure event and/or the deployment run."""
        retrain = spec.retrain
        assert retrain is not None
        outcome = trigger_plain(retrain, request, state_dir)
        outcome.update(event=None, flow_run_id=None, error=None)
        if retrain.emits:
            outcome["event"] = emit_failure(request)
        if retrain.deployment:
            try:
                outcome["flow_run_id"] = start_deployment(retrain.deployment, request, retrain.parameters)
            except Exception as exc:
                outcome["error"] = (
                    f"could not start deployment {retrain.deployment!r}: {type(exc).__name__}: {exc}"
                )
                self.logger.error(outcome["error"])
        return outcome

    def publish(self, summary: dict[str, Any], figures: list[Path]) -> None:
        publish_artifacts(summary, figures)
