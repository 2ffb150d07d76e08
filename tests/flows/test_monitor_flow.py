"""The monitor flow end to end on a real local Prefect server, census data and a real history store."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox, ResultRow, Run
from driftline.tasks.history.query import read_history
from tests.alerts.slack_server import Reply, SlackStandIn
from tests.demo import count, write_spec

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_passing_batch_is_stored_once_even_when_rerun(
    demo_data: Path, tmp_path: Path, database_url: str
) -> None:
    from driftline.flows.monitor import monitor

    spec = write_spec(demo_data, tmp_path, store_url=database_url, retrain=None)
    first = monitor(str(spec), "2016-06")
    assert first["status"] == "passed" and first["batch_id"] == "2016-06" and first["rows"] == 6000
    checks = {r["check"] for r in first["results"]}
    assert {"schema.columns", "drift.numeric", "drift.prediction", "performance.overall"} <= checks
    assert all(r["status"] == "ok" for r in first["results"]), [r["reason"] for r in first["results"]]
    rows = count(database_url, ResultRow)
    metrics = sum(max(1, len(r["metrics"])) for r in first["results"])
    assert rows == metrics

    second = monitor(str(spec), "2016-06")
    assert second["results"] == first["results"]
    assert count(database_url, ResultRow) == rows
    assert count(database_url, Run) == 1

    engine = open_store(database_url)
    history = read_history(engine, "acs-employment", check="drift.prediction", metric="psi")
    engine.dispose()
    assert history["batch_id"].tolist() == ["2016-06"]
    [stored] = [r for r in first["results"] if r["check"] == "drift.prediction"]
    assert history["value"].iloc[0] == pytest.approx(stored["metrics"]["psi"])


def test_failing_batch_alerts_slack_and_starts_retraining(
    demo_data: Path, tmp_path: Path, monkeypatch
) -> None:
    from prefect.client.orchestration import get_client

    from driftline.flows.monitor import monitor
    from driftline.flows.retrain import retrain

    deployment_id = retrain.to_deployment(name="on-failure").apply()
    url = f"sqlite:///{tmp_path / 'history.db'}"
    monkeypatch.setenv("TEST_SLACK_TOKEN", "xoxb-test-token")
    with SlackStandIn() as slack:
        spec = write_spec(
            demo_data,
            tmp_path,
            store_url=url,
            alerts={
                "min_severity": "medium",
                "slack": {
                    "channel": "#ml-alerts",
                    "token_env": "TEST_SLACK_TOKEN",
                    "base_url": slack.api_url,
                },
            },
            retrain={
                "deployment": "driftline-retrain/on-failure",
                "min_severity": "high",
                "emit_event": True,
            },
        )
        slack.script(Reply.rate_limited(retry_after=1))  # the first post is throttled, then retried
        summary = monitor(str(spec), "2018-12")
        again = monitor(str(spec), "2018-12")  # a re-run of the batch posts nothing and retrains once
        posts = slack.accepted()

    assert summary["status"] == "failed" and summary["worst_severity"] == "high"
    assert [p.path for p in posts] == ["/api/chat.postMessage"]
    assert posts[0].body["channel"] == "#ml-alerts"
    assert "xoxb-test-token" not in str(posts[0].body)
    assert posts[0].headers["authorization"] == "Bearer xoxb-test-token"
    assert count(url, AlertOutbox) == 1

    figures = {Path(p).name: Path(p).read_text(encoding="utf-8") for p in summary["figures"]}
    assert set(figures) == {"attribution-auc-tree.svg", "attribution-pairs-matrix.svg"}
    assert all(ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg" for svg in figures.values())
    from prefect.artifacts import Artifact

    table = Artifact.get("driftline-acs-employment")
    assert table is not None and table.type == "table" and "2018-12" in table.description

    retraining = summary["retraining"]
    assert retraining["error"] is None and retraining["flow_run_id"]
    [incident] = retraining["incidents"]
    assert again["retraining"] == {
        "skipped": f"retraining already requested for incident {incident} at batch 2018-12"
    }
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(retraining["flow_run_id"])
        assert flow_run.deployment_id == deployment_id
        assert flow_run.parameters == {"monitor": "acs-employment", "batch_id": "2018-12", "severity": "high"}
        runs = client.read_flow_runs()
        assert sum(r.deployment_id == deployment_id for r in runs) == 1
        event = _wait_for_event(client, "driftline.monitor.failed")
    assert event["resource"]["prefect.resource.id"] == "driftline.monitor.acs-employment"
    assert event["payload"]["batch_id"] == "2018-12" and event["payload"]["severity"] == "high"
    assert event["payload"]["spec_path"] == str(spec.resolve())


def _wait_for_event(client: Any, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """The newest event called `name` once the server has persisted it."""
    deadline = time.monotonic() + timeout
    query = {"filter": {"event": {"name": [name]}, "occurred": {"since": "2000-01-01T00:00:00Z"}}, "limit": 5}
    while time.monotonic() < deadline:
        events = client.request("POST", "/events/filter", json=query).json()["events"]
        if events:
            return events[0]
        time.sleep(0.5)
    raise AssertionError(f"no {name} event reached the Prefect server within {timeout} s")


def test_unreachable_store_spools_run_and_alert_and_the_next_run_replays_both(
    demo_data: Path, tmp_path: Path
) -> None:
    """The store is away (its folder does not exist yet), then back: the spooled run and its alert
    reach it first, before the new run's."""
    from driftline.flows.monitor import monitor

    later = tmp_path / "later"
    url = f"sqlite:///{later / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    summary = monitor(str(spec), "2018-12")
    assert summary["status"] == "failed"
    assert summary["stored"].startswith("spooled to") and "database unavailable" in summary["stored"]
    spool = tmp_path / ".driftline" / "spool"
    assert len(list(spool.glob("*.json"))) == 1

    later.mkdir()
    monitor(str(spec), "2016-06")
    engine = open_store(url)
    history = read_history(engine, "acs-employment", check="drift.prediction", metric="psi")
    batches = sorted(history["batch_id"])
    with engine.connect() as conn:
        queued = conn.execute(select(AlertOutbox.batch_id).order_by(AlertOutbox.id)).scalars().all()
    engine.dispose()
    assert batches == ["2016-06", "2018-12"]
    assert queued[0] == "2018-12"  # the spooled failing batch's alert was not lost, and went first
    assert not list(spool.glob("*.json"))


def test_backfill_stores_every_batch_without_alerting(demo_data: Path, tmp_path: Path) -> None:
    from driftline.flows.backfill import backfill
    from driftline.flows.monitor import summary_of

    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url)
    state = backfill(str(spec), ["2016-06", "2018-12"], return_state=True)
    summaries = summary_of(state)
    assert [(s["batch_id"], s["status"]) for s in summaries] == [("2016-06", "passed"), ("2018-12", "failed")]
    assert state.is_failed() and state.message.startswith("acs-employment batch 2018-12: worst severity high")
    assert all(s["alerts"] == {"skipped": "alerts disabled for this run"} for s in summaries)
    assert all(s["retraining"] is None for s in summaries)
    assert count(url, Run) == 2 and count(url, AlertOutbox) == 0


def test_serve_registers_the_spec_schedule(demo_data: Path, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    from driftline.flows.monitor import monitor_deployment
    from driftline.tasks.config.spec import load_spec

    spec_path = write_spec(demo_data, tmp_path, schedule={"cron": "30 5 * * 1", "timezone": "Europe/Paris"})
    deployment_id = monitor_deployment(load_spec(spec_path), spec_path).apply()
    with get_client(sync_client=True) as client:
        stored = client.read_deployment(deployment_id)
    assert stored.name == "acs-employment"
    assert stored.parameters == {"spec_path": str(spec_path.resolve())}
    [schedule] = stored.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone) == ("30 5 * * 1", "Europe/Paris")


def test_a_crashed_run_leaves_an_error_row_naming_the_cause(demo_data: Path, tmp_path: Path) -> None:
    from driftline.flows.monitor import monitor
    from driftline.tasks.history.query import list_runs
    from driftline.tasks.references.model import ModelError

    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, model="tests.tasks.nowhere:load")
    with pytest.raises(ModelError, match=r"No module named 'tests\.tasks\.nowhere'"):
        monitor(str(spec), "2016-06")
    engine = open_store(url)
    [run] = list_runs(engine, "acs-employment")
    engine.dispose()
    assert run["status"] == "error" and "ModelError" in run["details"]["reason"]
