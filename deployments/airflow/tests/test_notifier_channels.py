"""The notifier sends a monitor task's verdict through driftline's alert channels, built by the registry
the monitor's own alerts use: a signed webhook and PagerDuty on local recorders (the recorder of the core's
tests, loaded from its file), the webhook's secret from an Airflow connection, PagerDuty keyed by the
incident the run recorded, and the channels listed in the `driftline` connection."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from driftline_airflow.notifications.driftline import DriftlineNotifier

REPO = Path(__file__).resolve().parents[3]
SECRET = "whsec-notifier-test-secret-0123"
SUMMARY = {
    "monitor": "m",
    "batch_id": "2024-01-02",
    "status": "failed",
    "worst_severity": "high",
    "failing_checks": [
        {"check": "drift.numeric", "target": "x", "severity": "high", "metrics": {"psi": 0.4}},
        {"check": "performance.overall", "target": "model", "severity": "medium", "metrics": {"auc": 0.7}},
    ],
    "report_url": "https://reports.example/m/2024-01-02/report.html",
    "alerts": {"changes": [{"kind": "opened", "incident_id": 7, "check": "drift.numeric", "target": "x"}]},
}
HEADLINES = {"[HIGH] drift.numeric · x: opened", "[MEDIUM] performance.overall · model: opened"}


def recorder_module() -> ModuleType:
    """`tests/alerts/http_recorder.py` of the core (its `tests` package is not this one's)."""
    name = "driftline_core_http_recorder"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "alerts" / "http_recorder.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


@pytest.fixture
def hook() -> Iterator[Any]:
    with recorder_module().HttpRecorder(default=204) as server:
        yield server


@pytest.fixture
def pager() -> Iterator[Any]:
    with recorder_module().HttpRecorder(default=202) as server:
        yield server


def notify(notifier: DriftlineNotifier) -> None:
    notifier.notify({"ti": SimpleNamespace(task_id="monitor", xcom_pull=lambda task_ids: SUMMARY)})


def test_the_notifier_sends_the_verdict_through_the_channels_given(
    hook: Any, pager: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_HOOK_SECRET", json.dumps({"conn_type": "generic", "password": SECRET}))
    monkeypatch.setenv("PD_KEY", "R0UT1NGKEY-notifier")
    channels = [
        {"kind": "webhook", "url": f"{hook.url}/in", "secret_block": "hook_secret"},
        {"kind": "pagerduty", "base_url": pager.url, "routing_key_env": "PD_KEY"},
    ]
    notify(DriftlineNotifier(driftline_conn_id="nowhere", channels=channels))

    (delivery,) = hook.requests
    body = delivery.json
    assert (body["monitor"], body["batch_id"], body["worst_severity"]) == ("m", "2024-01-02", "high")
    assert {c["headline"] for c in body["changes"]} == HEADLINES
    assert body["report_url"] == SUMMARY["report_url"] and delivery.headers["x-driftline-delivery"]
    stamp, signed = (p.split("=", 1)[1] for p in delivery.headers["x-driftline-signature"].split(","))
    assert (
        signed == hmac.new(SECRET.encode(), f"{stamp}.".encode() + delivery.raw, hashlib.sha256).hexdigest()
    )

    # PagerDuty: only the check the run keyed to an incident, under that incident's dedup_key
    (event,) = [r.json for r in pager.requests]
    assert (event["event_action"], event["dedup_key"]) == ("trigger", "driftline/m/incident/7")
    assert event["payload"]["severity"] == "critical" and event["routing_key"] == "R0UT1NGKEY-notifier"
    assert event["links"] == [{"href": SUMMARY["report_url"], "text": "Open the report"}]


def test_the_channels_come_from_the_connection_and_one_failing_leaves_the_others(
    hook: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    monkeypatch.delenv("TEAMS_WEBHOOK_URL", raising=False)
    channels = [{"kind": "teams"}, {"kind": "webhook", "url": f"{hook.url}/in", "secret_env": "HOOK_SECRET"}]
    conn = {"conn_type": "driftline", "extra": {"channels": json.dumps(channels)}}
    monkeypatch.setenv("AIRFLOW_CONN_DRIFTLINE_DEFAULT", json.dumps(conn))
    notify(DriftlineNotifier())
    assert len(hook.requests) == 1 and {c["headline"] for c in hook.requests[0].json["changes"]} == HEADLINES
    assert "verdict not sent to teams: no Teams webhook URL" in capsys.readouterr().out  # the task log

    with pytest.raises(ValueError, match="unknown channel kind 'pager'"):
        DriftlineNotifier(channels=[{"kind": "pager"}]).channel_configs()


def test_a_verdict_no_destination_takes_is_kept_in_the_task_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TEAMS_WEBHOOK_URL", raising=False)
    with recorder_module().HttpRecorder(default=404) as slack:
        conn = {"conn_type": "driftline", "extra": {"slack_webhook_url": f"{slack.url}/services/T0/B0/x"}}
        monkeypatch.setenv("AIRFLOW_CONN_DRIFTLINE_DEFAULT", json.dumps(conn))
        notify(DriftlineNotifier(channels=[{"kind": "teams"}]))  # neither raises nor loses the verdict
        assert len(slack.requests) == 1
    log = capsys.readouterr().out
    assert "verdict not sent to slack" in log and "verdict not sent to teams: no Teams webhook URL" in log
    assert log.count("• drift.numeric[x] high") == 2 and log.count("• performance.overall[model] medium") == 2
    assert "*m* batch 2024-01-02: failed (worst severity high)" in log
