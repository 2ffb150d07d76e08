"""The verdict readable in Prefect, against a real local server: a failing batch's flow run is
`Failed` with the severity in its failing checks' task state names, a passing batch's is `Completed`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml

from driftline.tasks.views.drift_overview import OVERVIEW_CHECK
from tests.demo import write_spec

pytestmark = pytest.mark.usefixtures("prefect_server")

ABSENT = {"check": "drift.numeric", "features": ["no_such_column"]}  # a check that can only error


def eventually(read: Callable[[], Any], timeout: float = 30.0) -> Any:
    """`read()` once it is truthy (the server records task states and logs shortly after they happen)."""
    deadline = time.monotonic() + timeout
    while not (value := read()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {timeout:g} s")
        time.sleep(0.5)
    return value


def task_states(flow_run_id: UUID) -> dict[str, Any]:
    """Task run name → state, of one flow run's tasks."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {run.name: run.state for run in runs}


def severity_named(flow_run_id: UUID) -> dict[str, str]:
    """Task run name → state name, of the tasks whose state names a severity."""
    return {name: s.name for name, s in task_states(flow_run_id).items() if s.name.endswith(" severity")}


def log_lines(flow_run_id: UUID, level: int = 0) -> list[str]:
    """The flow run's log messages at `level` or above."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return [log.message for log in logs if log.level >= level]


def newest_flow_run() -> Any:
    """The flow run created last on the server."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        [run] = client.read_flow_runs(sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=1)
    return run


def test_failing_batch_is_a_failed_run_naming_severities_and_a_passing_one_completes(
    demo_data: Path, tmp_path: Path
) -> None:
    from driftline.flows.monitor import monitor, summary_of

    path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    spec = yaml.safe_load(path.read_text())
    spec["checks"].append(ABSENT)
    spec["alerts"] = {"min_severity": "medium"}
    path.write_text(yaml.safe_dump(spec))

    passing = monitor(str(path), "2016-06", return_state=True)
    failing = monitor(str(path), "2018-12", return_state=True)
    passed_id, failed_id = passing.state_details.flow_run_id, failing.state_details.flow_run_id

    assert passing.is_completed() and passing.result()["status"] == "passed", passing
    summary = summary_of(failing)
    assert failing.is_failed() and summary["status"] == "failed", failing
    assert "batch 2018-12: worst severity high (fail_on high); failing checks: " in failing.message
    high = {r["check"] for r in summary["results"] if r["status"] == "ok" and r["severity"] == "high"}
    assert high and all(check in failing.message for check in high)

    named = eventually(lambda: severity_named(failed_id))
    assert {name.split("[")[0] for name, state in named.items() if state == "High severity"} == high - {
        OVERVIEW_CHECK  # the overview is computed from the drift checks' results, not a task
    }
    assert set(named.values()) <= {"High severity", "Medium severity"}
    name = "drift.numeric[no_such_column]"
    eventually(lambda: task_states(failed_id)[name].is_failed())  # marked once the task has finished
    absent = task_states(failed_id)[name]
    assert absent.message.startswith("drift.numeric[no_such_column]: column(s) ['no_such_column'] are not")
    assert len(absent.message) < 200, absent.message

    errors = eventually(lambda: [m for m in log_lines(failed_id, 40) if "no_such_column" in m])
    assert errors[0].startswith("check drift.numeric[no_such_column] errored on *: column(s) ['no_such")
    assert not [m for m in log_lines(failed_id) if "CheckRun" in m or "Traceback" in m]
    eventually(lambda: [m for m in log_lines(failed_id) if m.startswith("alerts to console: ")])
    assert severity_named(passed_id) == {}


def test_fail_flow_run_off_completes_with_the_verdict_as_message(demo_data: Path, tmp_path: Path) -> None:
    from driftline.flows.monitor import monitor

    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    state = monitor(str(spec), "2018-12", fail_flow_run=False, return_state=True)
    assert state.is_completed() and "worst severity high" in state.message
    assert monitor(str(spec), "2018-12")["status"] == "failed"  # a plain call returns the summary


# Checks judging the model's outputs, performance or fairness (written out here, not read from ranking).
MODEL_LEVEL = ("drift.prediction", "drift.predicted_label", "drift.label", "performance.", "fairness.")


def failing_names(message: str) -> list[str]:
    """The `check[target]` names a failed run's message lists, in order ("+K more" left out)."""
    listed = message.split("failing checks: ", 1)[1].split(", ")
    return [item.rsplit(" ", 1)[0] for item in listed if not item.startswith("+")]


def test_an_expected_failure_ranks_the_model_first_and_logs_no_error_or_traceback(
    demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The failing batch through the engine's own entry point (`run_flow`, as a worker or `serve`
    runs a deployment): a `Failed` run whose message lists the model-level failures before the
    features, cut to NAMED_FEATURES with a count, and no ERROR record or traceback anywhere."""
    import logging

    from prefect.flow_engine import run_flow

    from driftline.flows import prefect_driver
    from driftline.flows.monitor import monitor
    from driftline.flows.prefect_driver import ModelFailed

    monkeypatch.setattr(prefect_driver, "NAMED_FEATURES", 3)
    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    logging.getLogger("prefect").addHandler(caplog.handler)  # Prefect's loggers do not propagate
    try:
        with pytest.raises(ModelFailed) as raised:  # what `python -m prefect.engine` then exits on
            parameters = {"spec_path": str(spec), "batch_id": "2018-12"}
            run_flow(monitor, parameters=parameters, error_logger=logging.getLogger("prefect.flow_runs"))
    finally:
        logging.getLogger("prefect").removeHandler(caplog.handler)

    summary = raised.value.returned
    high = [f"{r['check']}[{r['target']}]" for r in summary["results"] if r["severity"] == "high"]
    model = [name for name in high if name.startswith(MODEL_LEVEL)]
    features = [name for name in high if not name.startswith(MODEL_LEVEL)]
    assert model and len(features) > 3, high
    message = str(raised.value)
    named = failing_names(message)
    assert sorted(named[: len(model)]) == sorted(model)
    assert len(named) == len(model) + 3 and set(named[len(model) :]) <= set(features)
    assert message.endswith(f", +{len(features) - 3} more")

    run = newest_flow_run()
    assert run.state.is_failed() and run.state.message == message
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert "Traceback" not in caplog.text
    lines = eventually(lambda: log_lines(run.id))
    assert lines and not log_lines(run.id, logging.ERROR)
    assert not [line for line in lines if "Traceback" in line or "unexpected exception" in line]


@contextmanager
def nothing_listening() -> Iterator[None]:
    """The server's automations that fire on the failure event (other tests' deployment triggers)
    paused for the block."""
    from prefect.client.orchestration import get_client

    from driftline.flows.prefect_driver import expects
    from driftline.tasks.retraining.actions import FAILED_EVENT

    with get_client(sync_client=True) as client:
        listening = [
            a.id for a in client.read_automations() if a.enabled and expects(a.trigger, FAILED_EVENT)
        ]
        for automation in listening:
            client.pause_automation(automation)
        try:
            yield
        finally:
            for automation in listening:
                client.resume_automation(automation)


def retraining_logged(path: Path) -> tuple[str, list[str]]:
    """A failing run of batch 2018-12: the event id its retraining line names, and its warnings."""
    from driftline.flows.monitor import monitor

    state = monitor(str(path), "2018-12", alerts=False, return_state=True)
    run_id = state.state_details.flow_run_id
    [line] = eventually(lambda: [m for m in log_lines(run_id) if m.startswith("retraining sent")])
    assert line.startswith("retraining sent: monitor acs-employment, batch 2018-12 (severity high): ")
    warnings = [m for m in log_lines(run_id, 30) if m not in log_lines(run_id, 40)]
    return line.split("(id ")[1].rstrip(")"), warnings


def test_each_run_requesting_retraining_logs_its_own_event_and_warns_when_nothing_listens(
    demo_data: Path, tmp_path: Path
) -> None:
    """A failing batch that emits `driftline.monitor.failed` logs one line naming the monitor, the
    batch and the event id, and warns while no automation fires on the event; a second run of the
    same batch emits a new event (not dropped by the server as a repeat of the first)."""
    from prefect.automations import Automation, DoNothing, EventTrigger

    path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}")
    spec = yaml.safe_load(path.read_text())
    spec["retrain"] = {"min_severity": "high", "emit_event": True, "when": "every_run"}  # each run asks
    path.write_text(yaml.safe_dump(spec))

    with nothing_listening():
        first, warnings = retraining_logged(path)
        [warned] = [w for w in warnings if "no enabled automation fires on driftline.monitor.failed" in w]
        assert first in warned
        trigger = EventTrigger(expect={"driftline.monitor.*"}, posture="Reactive", threshold=1)
        listener = Automation(name="retrain-test", trigger=trigger, actions=[DoNothing()]).create()
        try:
            second, warnings = retraining_logged(path)
        finally:
            listener.delete()
    assert not [w for w in warnings if "no enabled automation" in w], warnings
    assert second != first
    for event in (first, second):
        eventually(lambda event=event: event_recorded(event))


def event_recorded(event_id: str) -> bool:
    """Whether the server stored the event with this id."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        reply = client.request("POST", "/events/filter", json={"filter": {"id": {"id": [event_id]}}})
    return bool(reply.json()["events"])
