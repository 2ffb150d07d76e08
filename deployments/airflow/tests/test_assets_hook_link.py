"""The provider's Airflow conventions without a scheduler: the batch and verdict assets, the batch an
asset-triggered run monitors, the retraining decision on verdicts, the `driftline` connection's hook,
the report link and the notifier's message."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk import AssetAlias

from driftline_airflow.assets import (
    batch_asset,
    event_batches,
    retraining_due,
    verdict_asset,
    verdict_extra,
    verdicts,
)
from driftline_airflow.batches import chosen_batch, run_date, stray_run_note, unmonitored_note
from driftline_airflow.connections import resolve_store_url, slack_secret
from driftline_airflow.hooks.driftline import DriftlineHook, report_link
from driftline_airflow.links import run_report_url
from driftline_airflow.notifications.driftline import DriftlineNotifier, verdict_text

BATCHES = batch_asset("acs-employment")


def event(batch: Any, minute: int, **extra: Any) -> Any:
    """An asset event the way the task context gives it."""
    return SimpleNamespace(
        extra={"batch_id": batch, **extra} if batch is not None else extra,
        timestamp=datetime(2026, 1, 1, 0, minute, tzinfo=UTC),
        source_dag_id="score",
        source_run_id=f"run{minute}",
    )


def asset_run(*events: Any, alias: bool = False) -> dict[str, Any]:
    triggering: dict[Any, list[Any]] = {BATCHES: list(events)}
    if alias:  # an event emitted through an alias is listed under the alias too
        triggering[AssetAlias(name="scored")] = list(events)
    dag_run = SimpleNamespace(run_type="asset_triggered", conf={}, dag_id="mon", run_id="asset_triggered__x")
    return {"dag_run": dag_run, "triggering_asset_events": triggering}


def test_assets_are_named_after_the_monitor() -> None:
    assert (BATCHES.name, BATCHES.uri, BATCHES.group) == (
        "driftline.acs-employment.batches",
        "driftline://acs-employment/batches",
        "driftline",
    )
    assert verdict_asset("m_1").uri == "driftline://m_1/verdict"
    for bad in ("", "a b", "x/y", "-lead", 7):
        with pytest.raises(ValueError, match="cannot name an asset"):
            batch_asset(bad)  # type: ignore[arg-type]


def test_an_asset_triggered_run_monitors_the_batch_its_event_names() -> None:
    ctx = asset_run(event("2017-06", 1))
    assert chosen_batch(ctx, None, "%Y-%m") == ("2017-06", "the triggering asset event's batch_id")
    assert unmonitored_note(ctx) is None
    # the conf and the operator's batch_id still win
    ctx["dag_run"].conf = {"batch_id": "2016-06"}
    assert chosen_batch(ctx, None, "%Y-%m")[0] == "2016-06"
    assert chosen_batch(asset_run(event("2017-06", 1)), "2018-12", "%Y-%m")[0] == "2018-12"
    # an event without a batch id: the newest batch, as for any run without a logical date
    assert chosen_batch(asset_run(event(None, 1)), None, "%Y-%m")[0] is None


def test_events_queued_together_monitor_the_newest_and_name_the_others() -> None:
    ctx = asset_run(event("2018-06", 5), event("2017-12", 2), event("2018-06", 7), alias=True)
    assert event_batches(ctx) == ["2017-12", "2018-06"]
    assert chosen_batch(ctx, None, "%Y-%m")[0] == "2018-06"
    note = unmonitored_note(ctx)
    assert note is not None and "this run monitors 2018-06" in note
    assert """airflow dags trigger mon --conf '{"batch_id": "2017-12"}'""" in note
    with pytest.raises(ValueError, match=r"from score/run3 gives batch_id 12"):
        event_batches(asset_run(event(12, 3)))


def test_a_manual_run_a_backfill_reprocessed_keeps_its_dates_batch() -> None:
    """`--reprocess-behavior completed` turns the manual run into a backfill run but keeps the interval
    Airflow inferred for it when it was triggered: its logical date names the batch."""
    june, dec = datetime(2017, 6, 1, tzinfo=UTC), datetime(2017, 12, 1, tzinfo=UTC)
    inferred = {"data_interval_start": datetime(2025, 12, 1, tzinfo=UTC), "data_interval_end": june}
    ctx = {"dag_run": SimpleNamespace(run_type="backfill", conf={}), "logical_date": june, **inferred}
    assert run_date(ctx) == june
    # a backfill run's own interval starts at its logical date
    assert run_date({**ctx, "data_interval_start": june, "data_interval_end": dec}) == june
    # a trigger timetable's interval ends at its logical date: the interval start names the batch
    assert (
        run_date({**ctx, "logical_date": dec, "data_interval_start": june, "data_interval_end": dec}) == june
    )


def test_the_stray_run_note_gives_the_exact_commands() -> None:
    dec = datetime(2018, 12, 1, tzinfo=UTC)
    dag_run = SimpleNamespace(run_type="manual", conf={}, dag_id="mon", run_id="manual__x")
    note = stray_run_note({"dag_run": dag_run, "logical_date": dec})
    assert note is not None
    assert (
        "airflow backfill create --dag-id mon --from-date 2018-12-01T00:00:00+00:00 "
        "--to-date 2018-12-01T00:00:00+00:00 --max-active-runs 1 --reprocess-behavior completed"
    ) in note
    assert """airflow dags trigger mon --conf '{"batch_id": "..."}'""" in note


SUMMARY = {
    "monitor": "m",
    "batch_id": "2024-01-02",
    "status": "failed",
    "worst_severity": "high",
    "failing_checks": [{"check": "drift.numeric", "target": "x<y>", "severity": "high", "metrics": {}}],
    "report_path": "/r/report.md",
    "retrain_conf": {"batch_id": "2024-01-02"},
    "retraining": {"airflow": "due"},
}


def test_verdicts_decide_retraining() -> None:
    failed = verdict_extra(SUMMARY)
    assert failed["verdict"] == "failed" and failed["batch_id"] == "2024-01-02"
    passed = {**failed, "verdict": "passed", "batch_id": "b1", "retrain": None, "failing_checks": []}
    unasked = {**failed, "batch_id": "b2", "retrain": None, "retraining": {"skipped": "retrained at b0"}}
    due, why_not = retraining_due([passed, failed, unasked])
    assert due == [failed]
    assert why_not == [
        "batch b1 passed: nothing to retrain",
        "batch b2 failed, no retraining requested ({'skipped': 'retrained at b0'})",
    ]
    ctx = {"triggering_asset_events": {verdict_asset("m"): [SimpleNamespace(extra=failed, timestamp=1)]}}
    assert verdicts(ctx) == [failed]


def driftline_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str = "driftline_default", **extra: Any) -> None:
    conn = {"conn_type": "driftline", "password": "s3cret", "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def test_the_hook_reads_its_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    driftline_conn(
        monkeypatch,
        store_url="postgresql+psycopg://monitor@db:5432/driftline",
        slack_channel="#ml",
        slack_token="xoxb-1",
        report_url="https://reports.example/{monitor}/{batch_id}/{file}",
    )
    hook = DriftlineHook()
    # the connection's password fills in the URL's; percent-encoding keeps each field one component
    assert hook.store_url() == "postgresql+psycopg://monitor:s3cret@db:5432/driftline"
    assert hook.slack_channel() == "#ml" and hook.slack_secret() == "xoxb-1"
    report = tmp_path / "report.html"
    assert (
        hook.report_url("m", "2024/01 ?", report) == "https://reports.example/m/2024%2F01%20%3F/report.html"
    )
    # the operator's lookups take the same connection
    conn = hook.connection
    assert slack_secret(conn) == "xoxb-1"
    from driftline.tasks.config.spec import MonitorSpec

    spec = MonitorSpec.model_validate(
        {
            "name": "m",
            "reference": {"path": "r.csv"},
            "batches": {"path": "b/{batch}.csv"},
            "checks": ["drift.numeric"],
        }
    )
    assert resolve_store_url(spec, None, "driftline_default") == hook.store_url()


def test_report_links_fall_back_to_the_setting_then_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = tmp_path / "report.md"
    assert run_report_url(None, "m", "b", report) == report.as_uri() == report_link(None, "m", "b", report)
    monkeypatch.setenv("AIRFLOW__DRIFTLINE__REPORT_URL", "http://127.0.0.1:8000/{monitor}/{batch_id}/{file}")
    assert run_report_url("driftline_default", "m", "b", report) == "http://127.0.0.1:8000/m/b/report.md"
    driftline_conn(monkeypatch, report_url="https://r.example/{batch_id}")
    assert run_report_url("driftline_default", "m", "b", report) == "https://r.example/b"
    driftline_conn(monkeypatch, report_url="https://r.example/{run_id}")
    with pytest.raises(ValueError, match=r"'driftline_default': report URL template names \['run_id'\]"):
        run_report_url("driftline_default", "m", "b", report)


def test_the_notifier_sends_the_verdict_to_the_task_log(monkeypatch: pytest.MonkeyPatch) -> None:
    text = verdict_text(SUMMARY, "https://r.example/m/2024-01-02/report.html")
    assert text.splitlines() == [
        "*m* batch 2024-01-02: failed (worst severity high)",
        "• drift.numeric[x&lt;y&gt;] high",
        "<https://r.example/m/2024-01-02/report.html|report>",
    ]
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    ti = SimpleNamespace(task_id="monitor", xcom_pull=lambda task_ids: SUMMARY)
    DriftlineNotifier(driftline_conn_id="nowhere").notify({"ti": ti})
    assert "m* batch 2024-01-02: failed (worst severity high)\n• drift.numeric[x<y>] high" in out.getvalue()


def test_the_notifier_posts_with_the_connections_slack_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    driftline_conn(monkeypatch, slack_channel="#ml", slack_token="xoxb-2")
    config, token = DriftlineNotifier().alert_config()
    assert config.slack.channel == "#ml" and token == "xoxb-2"
    driftline_conn(monkeypatch, slack_webhook_url="https://hooks.example/T/B/x")
    config, token = DriftlineNotifier().alert_config()
    assert config.slack.webhook_url.get_secret_value() == "https://hooks.example/T/B/x" and token is None
