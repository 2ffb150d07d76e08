"""The Prefect engine: the monitor core's steps as Prefect tasks, each check a task run of the flow
run (evaluated as the plain engine evaluates it, reported by state events), secrets from Secret
blocks, retraining by event or deployment run, and the run report as artifacts."""

from __future__ import annotations

import fnmatch
import logging
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import FlowRun, TaskRun
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, Running, State
from prefect.types import DateTime

from driftline.checks.result import CheckResult, worst_severity
from driftline.flows.report import publish_artifacts
from driftline.tasks.config.spec import MonitorSpec, RetrainSpec, severity_at_least
from driftline.tasks.retraining.actions import FAILED_EVENT, RetrainRequest, trigger_plain
from driftline.tasks.run.driver import CheckJob, Driver
from driftline.tasks.run.steps import IO_RETRIES, is_transient
from driftline.tasks.views.ranking import model_level, ranked

T = TypeVar("T")


def retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry the step only when it failed on transient I/O."""
    try:
        state.result()
    except Exception as exc:
        return is_transient(exc)
    return False


# Frames are passed by reference between threads: never hash them for Prefect's cache, never persist them.
IN_MEMORY: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}


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
    """One check's results and its task run (whose state is renamed once the run is graded)."""

    results: list[CheckResult]
    task_run: TaskRun


def errored_message(label: str, results: list[CheckResult]) -> str | None:
    """A check task's failure message when every result it gave is an `error`: the check and the
    first error; None when it produced a verdict."""
    errors = [r for r in results if r.status == "error"]
    if not errors or len(errors) < len(results):
        return None
    more = f" (+{len(errors) - 1} more error(s))" if len(errors) > 1 else ""
    return f"{label}: {errors[0].reason}{more}"


def severity_state_name(severity: str) -> str:
    """The state name of a check task whose graded result reached the alert level."""
    return f"{severity.capitalize()} severity"


def record_state(task_run: TaskRun, state: State) -> None:
    """Give a finished task run the final `state`, the way the task engine reports states (an event
    the server records when it is newer than the run's current state)."""
    from prefect.utilities.engine import emit_task_run_state_change_event

    previous = task_run.state
    state.state_details.task_run_id, state.state_details.flow_run_id = task_run.id, task_run.flow_run_id
    task_run.state, task_run.state_id, task_run.state_name = state, state.id, state.name
    task_run.state_type = state.type
    emit_task_run_state_change_event(task_run=task_run, initial_state=previous, validated_state=state)


def run_time(state: State[Any]) -> DateTime:
    """A state's time as a task run's: Prefect declares a state's a `datetime` and a task run's its own
    `DateTime` (pendulum's below Python 3.13), which its models build from any `datetime`."""
    return cast(DateTime, state.timestamp)


def started_check(label: str, index: int) -> TaskRun:
    """A `Running` task run of the current flow run standing for one check, reported to the API by its
    state event alone: the check runs in the plain engine's worker lanes, not in Prefect's task engine
    (which would cost a thread, a forked process and several API events per check)."""
    context = FlowRunContext.get()
    running: State[Any] = Running()
    task_run = TaskRun(
        name=label,
        flow_run_id=context.flow_run.id if context and context.flow_run else None,
        task_key="check",
        dynamic_key=str(index),
        run_count=1,
        start_time=run_time(running),
        expected_start_time=run_time(running),
    )
    record_state(task_run, running)
    return task_run


def finish_check(task_run: TaskRun, label: str, results: list[CheckResult]) -> None:
    """End a check's task run: `Failed` naming the check and its error when every result is an
    `error`, else `Completed`."""
    message = errored_message(label, results)
    state: State[Any] = Failed(message=message) if message else Completed()
    task_run.end_time = run_time(state)
    if task_run.start_time is not None:  # set by `started_check`
        task_run.total_run_time = state.timestamp - task_run.start_time
    record_state(task_run, state)


def rename_state(task_run: TaskRun, name: str) -> None:
    """Give a finished task run a `Completed` state called `name`, keeping its message."""
    previous = task_run.state
    record_state(task_run, Completed(name=name, message=previous.message if previous else None))


def monitor_resource(monitor: str) -> dict[str, str]:
    """The Prefect event resource that names a monitor."""
    return {"prefect.resource.id": f"driftline.monitor.{monitor}", "prefect.resource.name": monitor}


def failure_event_id(request: RetrainRequest, run_id: str | None) -> uuid.UUID:
    """The id of a request's failure event: one per request and flow run, so a retried step of the
    same run repeats the event (the server keeps it once) while a later run's request is a new event."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"{request.key}:{run_id or ''}")


def emit_failure(request: RetrainRequest, run_id: str | None) -> str:
    """Emit `driftline.monitor.failed` under `failure_event_id`; returns the event id."""
    from prefect.events import emit_event

    payload = {
        "batch_id": request.batch_id,
        "severity": request.severity,
        "failing_checks": request.failing_checks,
        "spec_path": request.spec_path,
    }
    event_id = failure_event_id(request, run_id)
    emit_event(event=FAILED_EVENT, resource=monitor_resource(request.monitor), payload=payload, id=event_id)
    return str(event_id)


def expects(trigger: Any, event: str) -> bool:
    """Whether an automation trigger (compound and sequence triggers included) fires on `event`; an
    empty `expect` matches every event."""
    nested = getattr(trigger, "triggers", None)
    if nested:
        return any(expects(t, event) for t in nested)
    patterns = getattr(trigger, "expect", None) or {"*"}
    return any(fnmatch.fnmatchcase(event, pattern) for pattern in patterns)


def automations_expecting(event: str) -> int | None:
    """How many enabled automations (deployment triggers included) fire on `event`; None when the API
    cannot say."""
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            automations = client.read_automations()
    except Exception:
        return None
    return sum(1 for a in automations if a.enabled and expects(a.trigger, event))


def action_text(name: str, outcome: Any) -> str:
    """What one retraining action did, in a few words."""
    if isinstance(outcome, dict) and "error" in outcome:
        return f"{name} failed ({outcome['error']})"
    if isinstance(outcome, dict) and "skipped" in outcome:
        return f"{name} skipped ({outcome['skipped']})"
    return f"{name} started"


def retraining_line(request: RetrainRequest, retrain: RetrainSpec, outcome: dict[str, Any]) -> str:
    """One log line for a retraining request: the monitor, the batch and what each action did."""
    done = [action_text(name, outcome[name]) for name in ("command", "webhook") if name in outcome]
    if outcome.get("event"):
        done.append(f"event {FAILED_EVENT} emitted (id {outcome['event']})")
    if retrain.deployment:
        run = outcome.get("flow_run_id")
        done.append(
            f"deployment {retrain.deployment} run {run}"
            if run
            else f"deployment {retrain.deployment} not started"
        )
    return (
        f"retraining sent: monitor {request.monitor}, batch {request.batch_id} "
        f"(severity {request.severity}): {'; '.join(done) or 'no action configured'}"
    )


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
    return str(cast(FlowRun, started).id)  # sync code: `run_deployment` returns the flow run


class PrefectDriver(Driver):
    """Runs the monitor core inside a Prefect flow run."""

    name = "prefect"

    def __init__(self, spec: MonitorSpec | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.check_runs: list[CheckRun] = []
        self._started: dict[int, TaskRun] = {}
        self._finished: dict[int, CheckRun] = {}

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
            name=name,
            retries=IO_RETRIES.retries,
            retry_delay_seconds=list(IO_RETRIES.delays),
            retry_condition_fn=retry_transient,
            **IN_MEMORY,
        )(fn)
        return as_task(*args)

    def fan_out(self, jobs: list[CheckJob], workers: int) -> list[list[CheckResult]]:
        """The checks as the plain engine runs them (a few forked workers of the flow's process, each
        check within its own limits; frames are never shipped), each shown as a task run named after
        the check and its targets: `Running` as it starts, then `Completed`, or `Failed` naming the
        check and its error when it only errored."""
        self._started, self._finished = {}, {}
        outcomes = super().fan_out(jobs, workers)
        self.check_runs.extend(self._finished[i] for i in range(len(jobs)))
        return outcomes

    def check_started(self, index: int, job: CheckJob) -> None:
        self._started[index] = started_check(job.label, index)

    def check_finished(self, index: int, job: CheckJob, results: list[CheckResult]) -> None:
        for result in results:
            if result.status == "error":
                self.logger.error("check %s errored on %s: %s", job.label, result.target, result.reason)
        task_run = self._started[index]
        finish_check(task_run, job.label, results)
        self._finished[index] = CheckRun(results, task_run)

    def map_partitions(
        self, fn: Callable[[Any, Any], T], partitions: Sequence[Any], work: Any, workers: int
    ) -> Iterator[T]:
        """One Prefect task per partition on the flow's task runner (which sets the parallelism), all
        fed by one `share_work` task (on Dask, its result copied to every worker first); states
        yielded in partition order."""
        as_task = task(name="partition", **IN_MEMORY)(fn)
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
            if severity_at_least(worst, min_severity):
                rename_state(run.task_run, severity_state_name(worst))

    def secret(self, block: str) -> str | None:
        from prefect.blocks.system import Secret

        try:
            return cast(Secret, Secret.load(block)).get()  # sync code: `load` returns the block
        except Exception as exc:
            self.logger.error("cannot load the Prefect Secret block %r: %s", block, type(exc).__name__)
            return None

    def retrain(self, spec: MonitorSpec, request: RetrainRequest, state_dir: Path) -> dict[str, Any]:
        """The spec's command or webhook, then the failure event and/or the deployment run; one log line
        says what was asked, and a warning when the event has no automation to start anything."""
        retrain = spec.retrain
        assert retrain is not None
        outcome = trigger_plain(retrain, request, state_dir)
        outcome.update(event=None, flow_run_id=None, error=None)
        if retrain.emits:
            outcome["event"] = emit_failure(request, self.run_id)
        if retrain.deployment:
            try:
                outcome["flow_run_id"] = start_deployment(retrain.deployment, request, retrain.parameters)
            except Exception as exc:
                outcome["error"] = (
                    f"could not start deployment {retrain.deployment!r}: {type(exc).__name__}: {exc}"
                )
                self.logger.error(outcome["error"])
        self.logger.info(retraining_line(request, retrain, outcome))
        if outcome["event"] and automations_expecting(FAILED_EVENT) == 0:
            self.logger.warning(
                "no enabled automation fires on %s: event %s starts no retraining (deploy a trigger such "
                "as retrain-on-failure in deployments/prefect.yaml)",
                FAILED_EVENT,
                outcome["event"],
            )
        return outcome

    def publish(self, summary: dict[str, Any], figures: list[Path]) -> None:
        alerts = self.spec.alerts if self.spec else None
        report_url = alerts.format_report_url(summary["monitor"], summary["batch_id"]) if alerts else None
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


# Feature-level failures named in a failed flow run's message (model-level ones are all named).
NAMED_FEATURES = 8


def failure_message(summary: dict[str, Any], fail_on: str) -> str:
    """Why a batch failed: its worst severity, then the results at or above `fail_on` in the order
    alerts rank them: every model-level one (outputs, performance, fairness), then up to
    `NAMED_FEATURES` feature-level ones and how many more there are."""
    results = summary["results"]
    hits = ranked(r for r in results if r["status"] == "ok" and severity_at_least(r["severity"], fail_on))
    model = [r for r in hits if model_level(r["check"])]
    features = [r for r in hits if not model_level(r["check"])]
    named = [f"{r['check']}[{r['target']}] {r['severity']}" for r in model + features[:NAMED_FEATURES]]
    more = f", +{len(features) - NAMED_FEATURES} more" if len(features) > NAMED_FEATURES else ""
    return (
        f"{summary['monitor']} batch {summary['batch_id']}: worst severity {summary['worst_severity']} "
        f"(fail_on {fail_on}); failing checks: {', '.join(named)}{more}"
    )


class ModelFailed(Exception):
    """The verdict of a flow run whose batch reached `fail_on`; it carries what the flow returned."""

    def __init__(self, message: str, returned: Any = None) -> None:
        super().__init__(message)
        self.returned = returned


class ExpectedVerdict(logging.Filter):
    """Drops a log record whose exception is a `ModelFailed` verdict.

    A worker or `serve` runs a flow in `prefect.engine`, which asks the run for its result and, on any
    `Failed` state, logs the verdict as an "unexpected exception" with its traceback (Prefect 3.8 and
    3.9). The run's state already says why it failed: that record is noise, not a crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ModelFailed))


# The loggers of the engine's flow run logger and of `python -m prefect.engine`.
ENGINE_LOGGERS = ("prefect.flow_runs", "prefect.engine")


def quiet_expected_verdicts() -> None:
    """Keep a `ModelFailed` verdict out of the engine's error log (once per process)."""
    for name in ENGINE_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ExpectedVerdict) for f in logger.filters):
            logger.addFilter(ExpectedVerdict())


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
