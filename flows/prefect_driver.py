"""The Prefect engine: the monitor core's steps as Prefect tasks, a task per check, secrets from
Secret blocks, retraining by event or deployment run, and the run report as artifacts."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.futures import PrefectFuture, wait
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State

from driftline.checks.result import CheckResult, severity_rank, worst_severity
from driftline.flows.report import publish_artifacts
from driftline.tasks.driver import CheckJob, Driver, started_first
from driftline.tasks.retrain import FAILED_EVENT, RetrainRequest, trigger_plain
from driftline.tasks.spec import MonitorSpec, severity_at_least
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


@task(name="partition-work", **IN_MEMORY)
def share_work(work: Any) -> Any:
    """The checks, profiles and model as one task's result: the partition tasks take it as their
    upstream, so a Dask worker receives it once (the scheduler's dependency), not once per partition."""
    return work


def on_every_worker(future: PrefectFuture[Any]) -> None:
    """On a Dask task runner, copy the finished result of `future` to every worker: Dask places a task
    where its inputs are, so the tasks taking it would otherwise all queue on the one worker holding it.
    Other task runners share the flow's memory: nothing to copy."""
    dask_runner = sys.modules.get("prefect_dask.task_runners")
    if dask_runner is not None and isinstance(future, dask_runner.PrefectDaskFuture):
        wrapped = future.wrapped_future
        wrapped.client.replicate([wrapped])


@dataclass
class CheckRun:
    """One check task's results and its task run (whose state is renamed once the run is graded)."""

    results: list[CheckResult]
    task_run: TaskRun | None


def check_state(label: str, results: list[CheckResult], logger: Any) -> State:
    """The check task's final state: each `error` result an ERROR line of the flow run's log, and
    `Failed` when the check produced nothing but errors."""
    errors = [r for r in results if r.status == "error"]
    for result in errors:
        logger.error("check %s errored on %s: %s", label, result.target, result.reason)
    outcome = CheckRun(results, TaskRunContext.get().task_run)
    if errors and len(errors) == len(results):
        return Failed(message=f"{label}: {errors[0].reason}", data=outcome)
    return Completed(data=outcome)


@task(name="check", **IN_MEMORY)
def run_check_job(job: CheckJob) -> State:
    """One check of the run (in its own worker process under process isolation)."""
    return check_state(job.label, job.run(), get_run_logger())


def shares_memory() -> bool:
    """Whether the flow's task runner runs tasks in the flow's own process (threads)."""
    from prefect.context import FlowRunContext
    from prefect.task_runners import ThreadPoolTaskRunner

    context = FlowRunContext.get()
    return context is None or isinstance(context.task_runner, ThreadPoolTaskRunner)


def severity_state_name(severity: str) -> str:
    """The state name of a check task whose graded result reached the alert level."""
    return f"{severity.capitalize()} severity"


def rename_state(task_run: TaskRun, name: str) -> None:
    """Give a finished task run a `Completed` state called `name`, the way the task engine reports
    states (an event the server records when it is newer than the run's current state)."""
    from prefect.utilities.engine import emit_task_run_state_change_event

    previous = task_run.state
    renamed = Completed(name=name, message=previous.message if previous else None)
    renamed.state_details.task_run_id, renamed.state_details.flow_run_id = task_run.id, task_run.flow_run_id
    task_run.state, task_run.state_id, task_run.state_name = renamed, renamed.id, name
    emit_task_run_state_change_event(task_run=task_run, initial_state=previous, validated_state=renamed)


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

    def __init__(self, spec: MonitorSpec | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.check_runs: list[CheckRun] = []

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

    def fan_out(self, jobs: list[CheckJob], workers: int) -> list[list[CheckResult]]:
        """A task per check, named after the check and its targets; the flow's task runner sets the
        parallelism. A task that crashes becomes the check's `error` result. On a task runner that
        ships tasks to other processes (Dask), the checks run as the plain engine runs them, in
        worker processes forked from the flow's (their frames are in its memory: never shipped)."""
        if not shares_memory():
            self.logger.info("%d check(s) in worker processes of the flow run", len(jobs))
            return super().fan_out(jobs, workers)
        submitted = {
            i: run_check_job.with_options(task_run_name=jobs[i].label).submit(jobs[i])
            for i in started_first(jobs)
        }
        futures = [submitted[i] for i in range(len(jobs))]
        wait(futures)
        runs = []
        for future, job in zip(futures, jobs, strict=True):
            outcome = future.result(raise_on_failure=False)
            if isinstance(outcome, BaseException):
                self.logger.error("check %s crashed: %s: %s", job.label, type(outcome).__name__, outcome)
                outcome = CheckRun(job.failed(outcome), None)
            runs.append(outcome)
        self.check_runs.extend(runs)
        return [run.results for run in runs]

    def map_partitions(
        self, fn: Callable[[Any, Any], T], partitions: Sequence[Any], work: Any, workers: int
    ) -> Iterator[T]:
        """One Prefect task per partition on the flow's task runner (which sets the parallelism), all
        fed by one `share_work` task (on Dask, its result copied to every worker first); states
        yielded in partition order."""
        as_task = task(fn, name="partition", **IN_MEMORY)
        shared = share_work.submit(work)
        on_every_worker(shared)
        futures = [
            as_task.with_options(task_run_name=f"partition-{i}").submit(p, shared)
            for i, p in enumerate(partitions)
        ]
        for future in futures:
            yield future.result()

    def name_check_states(self, results: list[dict[str, Any]], min_severity: str) -> None:
        """Name each check task's state after the worst graded severity of its results, when that
        reaches `min_severity` ("High severity"): the verdict of every check readable in the UI.

        Results are graded over the whole run only after every check task finished, hence a renamed
        state rather than the task's first one.
        """
        graded = {(r["check"], r["target"]): r["severity"] for r in results if r["status"] == "ok"}
        for run in self.check_runs:
            keys = {(r.check, r.target) for r in run.results}
            worst = worst_severity(graded.get(key, "none") for key in keys)
            if run.task_run is not None and severity_at_least(worst, min_severity):
                rename_state(run.task_run, severity_state_name(worst))

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
        slack = self.spec.alerts.slack if self.spec else None
        report_url = slack.format_report_url(summary["monitor"], summary["batch_id"]) if slack else None
        publish_artifacts(summary, figures, report_url)

    def report(self, spec: MonitorSpec, summary: dict[str, Any]) -> None:
        """After the run: the check tasks' states named by severity and the alert summary logged."""
        self.name_check_states(summary["results"], spec.alerts.min_severity)
        self.logger.info(alert_summary(summary["alerts"]))


def alert_summary(alerts: dict[str, Any]) -> str:
    """One log line saying what the alert step of a run did."""
    if "changes" not in alerts:
        return f"alerts: {alerts.get('skipped') or alerts.get('error') or 'none'}"
    changes = [f"{c['kind']} {c['check']}[{c['target']}] {c['severity']}" for c in alerts["changes"]]
    counts = ", ".join(f"{alerts[k]} {k}" for k in ("queued", "delivered", "failed", "pending", "muted"))
    line = f"alerts to {', '.join(alerts['destinations']) or 'nowhere'}: {len(changes)} incident change(s)"
    line += f" ({'; '.join(changes)})" if changes else ""
    return f"{line}; {counts}" + "".join(f"; {reason}" for reason in alerts["reasons"])


# Failing checks named in a failed flow run's message.
NAMED_CHECKS = 10


def failure_message(summary: dict[str, Any], fail_on: str) -> str:
    """Why a batch failed: its worst severity and the checks at or above `fail_on`, worst first."""
    results = summary["results"]
    hits = [r for r in results if r["status"] == "ok" and severity_at_least(r["severity"], fail_on)]
    hits.sort(key=lambda r: -severity_rank(r["severity"]))
    named = [f"{r['check']}[{r['target']}] {r['severity']}" for r in hits[:NAMED_CHECKS]]
    more = f" and {len(hits) - NAMED_CHECKS} more" if len(hits) > NAMED_CHECKS else ""
    return (
        f"{summary['monitor']} batch {summary['batch_id']}: worst severity {summary['worst_severity']} "
        f"(fail_on {fail_on}); failing checks: {', '.join(named)}{more}"
    )


class ModelFailed(Exception):
    """The verdict of a flow run whose batch reached `fail_on`; it carries what the flow returned."""

    def __init__(self, message: str, returned: Any = None) -> None:
        super().__init__(message)
        self.returned = returned


def verdict_state(summaries: list[dict[str, Any]], fail_on: str, fail_flow_run: bool, data: Any) -> State:
    """The flow run's final state, holding `data`: `Failed` (by `ModelFailed`) when a batch reached
    `fail_on`, as the CLI exits 1; `Completed` with the same message when `fail_flow_run` is off."""
    failed = [failure_message(s, fail_on) for s in summaries if s["status"] == "failed"]
    if not failed:
        return Completed(data=data)
    message = failed[0] if len(failed) == 1 else f"{len(failed)} batches failed: " + " | ".join(failed)
    if not fail_flow_run:
        return Completed(message=message, data=data)
    return Failed(message=message, data=ModelFailed(message, data))
