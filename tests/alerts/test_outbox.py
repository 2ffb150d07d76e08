"""The outbox and `process_alerts` end to end: a real Slack stand-in, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from driftline.tasks.alerts import AlertConfig, AlertReport, flush_outbox, process_alerts
from driftline.tasks.alerts.channels.slack import SlackBotSender
from driftline.tasks.alerts.outbox import enqueue, purge_sent
from driftline.tasks.history.models import AlertOutbox, Incident
from tests.alerts.builders import TOKEN, result
from tests.alerts.slack_server import Reply, SlackStandIn, closed_port_url

HIGH_AGE = [result("drift.numeric", "age", "high", metrics={"psi": 0.5}), result("drift.numeric", "x", "low")]


def _config(base_url: str, **slack: Any) -> AlertConfig:
    """A bot channel; an incident resolves on its first quiet run, so a resolution takes one batch."""
    return AlertConfig.model_validate(
        {"slack": {"channel": "#ml-alerts", "base_url": base_url, **slack}, "resolve_after": 1}
    )


def _process(engine: Engine, config: AlertConfig, batch_id: str, results=HIGH_AGE, **kw: Any) -> AlertReport:
    return process_alerts(
        engine, monitor="acs", batch_id=batch_id, results=results, config=config, token=TOKEN, **kw
    )


def _outbox(engine: Engine) -> list[AlertOutbox]:
    with Session(engine) as session:
        return list(session.scalars(select(AlertOutbox).order_by(AlertOutbox.id)))


def _posted_batches(slack: SlackStandIn) -> list[str]:
    """The batch named in each accepted post's fallback text."""
    return [r.body["text"].split(", batch ")[1].split(":")[0] for r in slack.accepted()]


def test_alert_is_posted_with_channel_and_blocks(engine: Engine, slack: SlackStandIn) -> None:
    report = _process(engine, _config(slack.api_url), "b1", run_url="https://prefect/runs/1")
    assert (report.queued, report.delivered, report.failed, report.pending) == (1, 1, 0, 0)
    assert report.destination == "slack:#ml-alerts" and report.reasons == []
    (post,) = slack.accepted()
    assert post.path == "/api/chat.postMessage" and post.body["channel"] == "#ml-alerts"
    blocks = post.body["blocks"]
    assert blocks[0]["text"]["text"] == ":red_circle: acs: worst severity high"
    assert blocks[3]["text"]["text"].startswith(
        ":red_circle: *[HIGH] drift.numeric · age: opened*\npsi = 0.5"
    )
    assert blocks[-1]["elements"][0]["text"] == "<https://prefect/runs/1|Open the run>"
    (row,) = _outbox(engine)
    assert (row.monitor, row.batch_id, row.attempts, row.last_error) == ("acs", "b1", 1, None)
    assert row.sent_at is not None and row.payload == {"text": post.body["text"], "blocks": blocks}
    assert report.to_dict()["changes"] == [
        {
            "kind": "opened",
            "incident_id": report.changes[0].incident_id,
            "check": "drift.numeric",
            "target": "age",
            "severity": "high",
            "previous_severity": None,
        }
    ]


def test_same_batch_processed_twice_posts_once(engine: Engine, slack: SlackStandIn) -> None:
    config = _config(slack.api_url)
    assert _process(engine, config, "b1").delivered == 1
    again = _process(engine, config, "b1")
    assert (again.changes, again.queued, again.delivered) == ([], 0, 0)
    assert len(slack.requests) == 1 and len(_outbox(engine)) == 1


def test_enqueue_is_idempotent_per_dedupe_key(engine: Engine) -> None:
    kwargs = {"monitor": "acs", "batch_id": "b1", "destination": "console", "payload": {"text": "t"}}
    with Session(engine) as session, session.begin():
        assert enqueue(session, key="k1", **kwargs) is True
        assert enqueue(session, key="k1", **kwargs) is False
        assert enqueue(session, key="k2", **kwargs) is True
    assert [r.dedupe_key for r in _outbox(engine)] == ["k1", "k2"]


def test_incidents_open_escalate_and_resolve_across_three_runs(engine: Engine, slack: SlackStandIn) -> None:
    config = _config(slack.api_url)
    runs = [
        ("b1", [result("drift.numeric", "age", "medium")], ["opened"]),
        ("b2", [result("drift.numeric", "age", "high")], ["escalated"]),
        ("b3", [result("drift.numeric", "age", "low")], ["resolved"]),
    ]
    for batch_id, results, kinds in runs:
        report = _process(engine, config, batch_id, results)
        assert [c.kind for c in report.changes] == kinds and report.delivered == 1
    texts = [r.body["text"].splitlines()[1] for r in slack.accepted()]
    assert texts == [
        "[MEDIUM] drift.numeric · age: opened",
        "[HIGH] drift.numeric · age: escalated from medium",
        "drift.numeric · age: resolved (now low, was high)",
    ]
    with Session(engine) as session:
        incident = session.scalars(select(Incident)).one()
        assert (incident.status, incident.severity, incident.opened_batch) == ("resolved", "high", "b1")


def test_persistent_server_error_keeps_the_message_until_a_flush_delivers_it(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    slack.default = Reply.server_error()
    report = _process(engine, config, "b1")
    assert (report.queued, report.delivered, report.failed, report.pending) == (1, 0, 1, 1)
    assert report.reasons == [
        "slack:#ml-alerts: alert for batch b1 not sent: Slack answered HTTP 500 "
        "(Received a response in a non-JSON format: upstream failure)"
    ]
    (row,) = _outbox(engine)
    assert (row.attempts, row.sent_at) == (1, None) and "HTTP 500" in (row.last_error or "")
    assert [r.status for r in slack.requests] == [500, 500]

    slack.default = Reply.ok()
    sender = SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url)
    flushed = flush_outbox(engine, sender, monitor="acs")
    assert (flushed.delivered, flushed.failed, flushed.pending) == (1, 0, 0)
    (row,) = _outbox(engine)
    assert (row.attempts, row.last_error) == (2, None) and row.sent_at is not None
    assert len(slack.accepted()) == 1
    assert flush_outbox(engine, sender, monitor="acs").delivered == 0


def test_rejected_token_keeps_the_message_and_never_stores_the_token(
    engine: Engine, slack: SlackStandIn
) -> None:
    slack.script(Reply.slack_error("invalid_auth"))
    report = _process(engine, _config(slack.api_url), "b1")
    assert (report.delivered, report.failed, report.pending) == (0, 1, 1)
    assert (
        "Slack rejected the bot token from environment variable SLACK_BOT_TOKEN (invalid_auth)"
        in (report.reasons[0])
    )
    (row,) = _outbox(engine)
    assert row.sent_at is None and "invalid_auth" in (row.last_error or "")
    stored = repr([(r.payload, r.last_error, r.destination, r.dedupe_key) for r in _outbox(engine)])
    assert TOKEN not in stored and TOKEN not in repr(report.to_dict())

    fixed = _process(engine, _config(slack.api_url), "b2", results=HIGH_AGE)
    assert (fixed.changes, fixed.delivered, fixed.pending) == ([], 1, 0)


def test_unreachable_slack_keeps_messages_and_the_next_run_sends_them_oldest_first(
    engine: Engine, slack: SlackStandIn
) -> None:
    down = _config(closed_port_url())
    first = _process(engine, down, "b1", [result("drift.numeric", "age", "medium")])
    second = _process(engine, down, "b2", [result("drift.numeric", "age", "high")])
    assert (first.queued, first.pending, second.queued, second.pending) == (1, 1, 1, 2)
    # The oldest message failed on a fault that hits every message: the newer one was not tried.
    assert second.reasons[0].startswith(
        "slack:#ml-alerts: alert for batch b1 not sent: cannot reach Slack at"
    )
    assert [row.attempts for row in _outbox(engine)] == [2, 0]

    up = _process(engine, _config(slack.api_url), "b3", [result("drift.numeric", "age", "none")])
    assert (up.queued, up.delivered, up.pending) == (1, 3, 0)
    assert _posted_batches(slack) == ["b1", "b2", "b3"]


def test_a_failure_that_hits_every_message_stops_the_flush(engine: Engine, slack: SlackStandIn) -> None:
    down = _config(closed_port_url())
    for batch_id, severity in (("b1", "medium"), ("b2", "high")):
        _process(engine, down, batch_id, [result("drift.numeric", "age", severity)])
    slack.default = Reply.slack_error("not_authed")
    sender = SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url)
    flushed = flush_outbox(engine, sender, monitor="acs")
    assert (flushed.delivered, flushed.failed, flushed.pending) == (0, 1, 2)
    assert len(slack.requests) == 1


def test_a_message_specific_refusal_does_not_block_the_queue(engine: Engine, slack: SlackStandIn) -> None:
    down = _config(closed_port_url())
    for batch_id, severity in (("b1", "medium"), ("b2", "high")):
        _process(engine, down, batch_id, [result("drift.numeric", "age", severity)])
    slack.script(Reply.slack_error("invalid_blocks"))
    sender = SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url)
    flushed = flush_outbox(engine, sender, monitor="acs")
    assert (flushed.delivered, flushed.failed, flushed.pending) == (1, 1, 1)
    assert _posted_batches(slack) == ["b2"]
    assert [row.sent_at is None for row in _outbox(engine)] == [True, False]


def test_missing_token_queues_until_a_token_is_given(
    engine: Engine, slack: SlackStandIn, monkeypatch
) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    config = _config(slack.api_url)
    report = process_alerts(engine, monitor="acs", batch_id="b1", results=HIGH_AGE, config=config)
    assert (report.queued, report.delivered, report.pending) == (1, 0, 1)
    assert report.reasons == [
        "slack:#ml-alerts: alert for batch b1 not sent: "
        "no Slack bot token (expected from environment variable SLACK_BOT_TOKEN)"
    ]
    assert slack.requests == []
    later = process_alerts(engine, monitor="acs", batch_id="b2", results=HIGH_AGE, config=config, token=TOKEN)
    assert (later.delivered, later.pending) == (1, 0)


def test_webhook_destination(engine: Engine, slack: SlackStandIn) -> None:
    config = AlertConfig.model_validate(
        {"slack": {"webhook_url": slack.webhook_url}, "run_url": "https://dash/{monitor}/{batch_id}"}
    )
    report = _process(engine, config, "b1", run_url="https://prefect/ignored")
    assert (report.destination, report.delivered) == ("slack-webhook", 1)
    (post,) = slack.accepted()
    assert post.path.startswith("/services/") and "channel" not in post.body
    assert post.body["blocks"][-1]["elements"][0]["text"] == "<https://dash/acs/b1|Open the run>"
    (row,) = _outbox(engine)
    assert row.destination == "slack-webhook" and "stand-in-webhook-secret" not in repr(row.payload)


def test_console_destination_prints_once_per_batch(engine: Engine) -> None:
    stream = io.StringIO()
    report = _process(engine, AlertConfig(), "b1", stream=stream)
    assert (report.destination, report.delivered) == ("console", 1)
    assert stream.getvalue().startswith("driftline: acs, batch b1: worst severity high (1 opened)\n")
    _process(engine, AlertConfig(), "b1", stream=stream)
    assert stream.getvalue().count("driftline: acs") == 1


def test_console_destination_writes_to_stderr_by_default(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _process(engine, AlertConfig(), "b1")
    assert (report.destination, report.delivered) == ("console", 1)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("driftline: acs, batch b1: worst severity high (1 opened)\n")


def test_no_destination_still_tracks_incidents(engine: Engine) -> None:
    report = _process(engine, AlertConfig(console=False), "b1")
    assert [c.kind for c in report.changes] == ["opened"] and report.queued == 0
    assert report.reasons == ["no alert destination: configure alerts.slack or set alerts.console"]
    assert _outbox(engine) == []


def test_messages_for_a_former_destination_are_reported(engine: Engine, slack: SlackStandIn) -> None:
    _process(engine, _config(closed_port_url()), "b1")
    report = _process(engine, AlertConfig(), "b2", stream=io.StringIO())
    assert report.reasons == [
        "1 unsent alert(s) for slack:#ml-alerts left queued: the monitor now alerts console"
    ]


def _queue(engine: Engine, key: str, *, created: datetime, sent: datetime | None) -> None:
    with Session(engine) as session, session.begin():
        session.add(
            AlertOutbox(
                dedupe_key=key,
                monitor="acs",
                batch_id=key,
                destination="console",
                payload={"text": key, "blocks": []},
                created_at=created,
                attempts=1 if sent else 0,
                sent_at=sent,
            )
        )


def test_purge_sent_deletes_only_messages_delivered_before_the_cutoff(engine: Engine) -> None:
    now = datetime.now(UTC)
    _queue(engine, "sent-long-ago", created=now - timedelta(days=40), sent=now - timedelta(days=31))
    _queue(engine, "sent-late", created=now - timedelta(days=40), sent=now - timedelta(days=2))
    _queue(engine, "sent-recently", created=now - timedelta(hours=1), sent=now - timedelta(minutes=5))
    _queue(engine, "never-sent", created=now - timedelta(days=60), sent=None)
    assert purge_sent(engine, timedelta(days=30)) == 1
    assert [r.dedupe_key for r in _outbox(engine)] == ["sent-late", "sent-recently", "never-sent"]
    assert purge_sent(engine, timedelta(days=30)) == 0
    assert purge_sent(engine, timedelta(0)) == 2
    assert [r.dedupe_key for r in _outbox(engine)] == ["never-sent"]


def test_purge_sent_refuses_a_negative_age(engine: Engine) -> None:
    with pytest.raises(ValueError, match="older_than"):
        purge_sent(engine, timedelta(days=-1))
