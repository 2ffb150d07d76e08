"""The verdict readable in Prefect, against a real local server: a failing batch's flow run is
`Failed` with the severity in its failing checks' task state names, a passing batch's is `Completed`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml

from driftline.tasks.drift_overview import OVERVIEW_CHECK
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
    absent = task_states(failed_id)["drift.numeric[no_such_column]"]
    assert absent.is_failed() and "no_such_column" in absent.message

    errors = eventually(lambda: [m for m in log_lines(failed_id, 40) if "no_such_column" in m])
    assert errors[0].startswith("check drift.numeric[no_such_column] errored on *: column(s) ['no_such")
    eventually(lambda: [m for m in log_lines(failed_id) if m.startswith("alerts to console: ")])
    assert severity_named(passed_id) == {}


def test_fail_flow_run_off_completes_with_the_verdict_as_message(demo_data: Path, tmp_path: Path) -> None:
    from driftline.flows.monitor import monitor

    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    state = monitor(str(spec), "2018-12", fail_flow_run=False, return_state=True)
    assert state.is_completed() and "worst severity high" in state.message
    assert monitor(str(spec), "2018-12")["status"] == "failed"  # a plain call returns the summary
