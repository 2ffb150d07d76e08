"""One Slack thread per incident: opened as a message, escalated and resolved as replies, the parent edited
to the current state; replies wait for their parent; routing to several channels; mutes; webhooks flat.
Against the Slack stand-in, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from driftline.tasks.alerts import AlertConfig, AlertReport, flush_outbox, process_alerts
from driftline.tasks.alerts.channels.slack import SlackBotSender
from driftline.tasks.alerts.mutes import active_mutes, list_mutes, mute, unmute
from driftline.tasks.alerts.outbox import PARENT_PATIENCE
from driftline.tasks.history.models import AlertMute, AlertOutbox, Incident, IncidentThread, utcnow
from tests.alerts.builders import TOKEN, result
from tests.alerts.slack_server import Reply, SlackStandIn, closed_port_url


def _config(base_url: str, **alerts: Any) -> AlertConfig:
    """A bot channel; an incident resolves on its first quiet run, so a resolution takes one batch."""
    slack = {"channel": "#ml-alerts", "base_url": base_url, **alerts.pop("slack", {})}
    return AlertConfig.model_validate({"slack": slack, "resolve_after": 1, **alerts})


def _run(engine: Engine, config: AlertConfig, batch_id: str, *results: dict[str, Any]) -> AlertReport:
    return process_alerts(
        engine, monitor="acs", batch_id=batch_id, results=list(results), config=config, token=TOKEN
    )


def _threads(engine: Engine) -> list[IncidentThread]:
    with Session(engine) as session:
        return list(session.scalars(select(IncidentThread).order_by(IncidentThread.id)))


def test_open_escalate_resolve_make_one_thread_and_the_parent_follows(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    last = _run(engine, config, "b3", result("drift.numeric", "age", "none"))
    assert last.delivered == 1 and last.pending == 0

    (parent,) = slack.top_level()
    replies = slack.thread(parent["ts"])
    assert [r["text"].splitlines()[1] for r in replies] == [
        "[HIGH] drift.numeric · age: escalated from medium",
        "drift.numeric · age: resolved (now none, was high)",
    ]
    posts = slack.accepted()
    assert [p.body.get("thread_ts") for p in posts] == [None, parent["ts"], parent["ts"]]
    assert [p.body["channel"] for p in posts] == ["#ml-alerts", "C0STANDIN", "C0STANDIN"]
    # the parent was edited twice: open at high, then resolved
    assert [u.body["ts"] for u in slack.updates] == [parent["ts"]] * 2
    assert "1 of 1 incident(s) open, worst high" in slack.updates[0].body["text"]
    assert parent["text"].startswith("driftline: acs: all 1 incident(s) resolved (updated at batch b3)")
    (thread,) = _threads(engine)
    assert (thread.destination, thread.channel, thread.ts) == ("slack:#ml-alerts", "C0STANDIN", parent["ts"])


def test_a_flapping_target_posts_one_opening_and_one_resolution_and_nothing_while_quiet(
    engine: Engine, slack: SlackStandIn
) -> None:
    """high/none/high/none, then quiet: one incident, one parent post, one resolution reply after the
    third quiet run in a row, and the parent edited only by that resolution."""
    config = _config(slack.api_url, resolve_after=3)
    severities = ["high", "none", "high", "none", "none"]
    reports = [
        _run(engine, config, f"b{i}", result("drift.numeric", "age", s)) for i, s in enumerate(severities)
    ]
    assert [len(r.changes) for r in reports] == [1, 0, 0, 0, 0]
    assert len(slack.accepted()) == 1 and slack.updates == []

    last = _run(engine, config, "b5", result("drift.numeric", "age", "none"))
    assert [c.kind for c in last.changes] == ["resolved"] and last.delivered == 1
    (parent,) = slack.top_level()
    assert parent["text"].startswith("driftline: acs: all 1 incident(s) resolved (updated at batch b5)")
    (reply,) = slack.thread(parent["ts"])
    assert reply["text"].splitlines()[1] == "drift.numeric · age: resolved (now none, was high)"
    assert len(slack.accepted()) == 2 and len(slack.updates) == 1
    with Session(engine) as session:
        incident = session.scalars(select(Incident)).one()
        assert (incident.status, incident.opened_batch, incident.last_batch) == ("resolved", "b0", "b5")


def test_incidents_opened_by_one_run_share_its_thread_and_new_ones_start_another(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    _run(engine, config, "b1", result("drift.numeric", "age", "high"), result("drift.numeric", "x", "medium"))
    _run(
        engine,
        config,
        "b2",
        result("drift.numeric", "age", "none"),
        result("drift.numeric", "x", "medium"),
        result("drift.numeric", "y", "high"),
    )
    first, second = slack.top_level()
    assert "y: opened" in second["text"] and "resolved" not in second["text"]
    (reply,) = slack.thread(first["ts"])
    assert "age: resolved" in reply["text"] and "y:" not in reply["text"]
    assert "1 of 2 incident(s) open, worst medium" in first["text"]
    assert {t.ts for t in _threads(engine)} == {first["ts"], second["ts"]}


def test_a_reply_queued_before_its_parent_was_delivered_waits_for_it(
    engine: Engine, slack: SlackStandIn
) -> None:
    down = _config(closed_port_url())
    assert _run(engine, down, "b1", result("drift.numeric", "age", "medium")).pending == 1
    assert _run(engine, down, "b2", result("drift.numeric", "age", "high")).pending == 2
    assert all(t.ts is None for t in _threads(engine))

    flushed = flush_outbox(engine, SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url))
    assert (flushed.delivered, flushed.failed, flushed.pending) == (2, 0, 0)
    parent, reply = slack.accepted()
    assert "thread_ts" not in parent.body and reply.body["thread_ts"] == slack.top_level()[0]["ts"]


def test_a_reply_waits_while_its_parent_fails_then_starts_the_thread_itself(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    slack.script(Reply.slack_error("invalid_blocks"))  # the parent alone is refused
    first = _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    assert (first.delivered, first.failed, first.pending) == (0, 1, 1)
    slack.script(*[Reply.slack_error("invalid_blocks")] * (PARENT_PATIENCE - 1))
    second = _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    # the parent failed again; the reply waited, unsent and not counted as a failure
    assert (second.delivered, second.failed, second.pending) == (0, 1, 2)
    with Session(engine) as session:
        reply = session.scalars(select(AlertOutbox).where(AlertOutbox.thread_key.is_not(None))).one()
        assert reply.attempts == 0 and reply.last_error is None

    third = _run(engine, config, "b3", result("drift.numeric", "age", "high"))  # no change, a flush only
    assert third.changes == [] and third.failed == 1  # the parent's last try
    assert third.delivered == 1 and third.pending == 1  # the reply went out on its own
    (posted,) = slack.accepted()
    assert "escalated from medium" in posted.body["text"] and "thread_ts" not in posted.body
    assert _threads(engine)[0].ts == slack.top_level()[0]["ts"]
    _run(engine, config, "b4", result("drift.numeric", "age", "none"))
    assert "resolved" in slack.thread(slack.top_level()[0]["ts"])[0]["text"]


def test_a_failed_parent_edit_does_not_fail_or_repeat_the_reply(engine: Engine, slack: SlackStandIn) -> None:
    config = _config(slack.api_url)
    _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    slack.script_updates(Reply.slack_error("cant_update_message"))
    report = _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    assert (report.delivered, report.failed, report.pending) == (1, 0, 0)
    assert len(slack.accepted()) == 2 and len(slack.updates) == 1


def test_an_interrupted_reply_is_found_in_the_thread_and_not_posted_again(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    with Session(engine) as session, session.begin():  # as if the reply's answer never came back
        session.execute(
            update(AlertOutbox)
            .where(AlertOutbox.thread_key.is_not(None))
            .values(sent_at=None, sending_at=utcnow() - timedelta(hours=1))
        )
    flushed = flush_outbox(engine, SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url))
    assert (flushed.delivered, flushed.pending) == (1, 0)
    assert len(slack.accepted()) == 2 and "/api/conversations.replies" in slack.reads


def test_webhooks_post_flat_one_message_a_run(engine: Engine, slack: SlackStandIn) -> None:
    config = AlertConfig.model_validate({"slack": {"webhook_url": slack.webhook_url}})
    _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    assert len(slack.accepted()) == 2 and slack.updates == [] and _threads(engine) == []
    assert all("thread_ts" not in str(p.body) for p in slack.accepted())


def test_routes_send_copies_to_channels_by_severity_and_family(engine: Engine, slack: SlackStandIn) -> None:
    routes = [{"channel": "#ml-oncall", "min_severity": "high"}, {"channel": "#ml-drift", "family": "drift"}]
    config = _config(slack.api_url, routes=routes)
    report = _run(
        engine,
        config,
        "b1",
        result("drift.numeric", "age", "high"),
        result("subset.auc", "young", "medium", metrics={"auc": 0.6}, thresholds={"auc": [0.8, 0.7, 0.6]}),
    )
    assert report.destinations == ["slack:#ml-alerts", "slack:#ml-oncall", "slack:#ml-drift"]
    assert (report.queued, report.delivered, report.pending) == (3, 3, 0)
    by_channel = {p.body["channel"]: p.body["text"] for p in slack.accepted()}
    assert "age" in by_channel["#ml-alerts"] and "young" in by_channel["#ml-alerts"]
    assert "age" in by_channel["#ml-oncall"] and "young" not in by_channel["#ml-oncall"]
    assert "age" in by_channel["#ml-drift"] and "young" not in by_channel["#ml-drift"]

    # the resolution of a high incident goes where its opening went, each into its own channel's thread
    _run(
        engine, config, "b2", result("drift.numeric", "age", "none"), result("subset.auc", "young", "medium")
    )
    replies = [p.body for p in slack.accepted()[3:]]
    assert sorted(r["channel"] for r in replies) == sorted(
        slack.channels[c] for c in ("ml-alerts", "ml-oncall", "ml-drift")
    )
    assert all(r.get("thread_ts") for r in replies)


def test_a_muted_incident_keeps_its_history_but_sends_nothing_until_the_mute_ends(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    with Session(engine) as session, session.begin():
        mute(session, monitor="acs", check="drift.numeric", target="age", until=utcnow() + timedelta(days=1))
    opened = _run(
        engine, config, "b1", result("drift.numeric", "age", "medium"), result("drift.numeric", "x", "high")
    )
    assert [c.kind for c in opened.changes] == ["opened", "opened"] and opened.muted == 1
    (post,) = slack.accepted()
    assert "x: opened" in post.body["text"] and "age" not in post.body["text"]
    escalated = _run(
        engine, config, "b2", result("drift.numeric", "age", "high"), result("drift.numeric", "x", "high")
    )
    assert [c.kind for c in escalated.changes] == ["escalated"] and escalated.queued == 0
    with Session(engine) as session:
        incident = session.scalars(select(Incident).where(Incident.target == "age")).one()
        assert (incident.status, incident.severity, incident.last_batch) == ("open", "high", "b2")

    with Session(engine) as session, session.begin():  # the mute ends
        session.execute(update(AlertMute).values(until=utcnow() - timedelta(seconds=1)))
        assert active_mutes(session, "acs").keys == frozenset()
    _run(engine, config, "b3", result("drift.numeric", "age", "none"), result("drift.numeric", "x", "high"))
    assert "age: resolved" in slack.top_level()[-1]["text"]  # no thread existed here: it starts one


def test_mute_every_target_list_and_unmute(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        mute(session, monitor="acs", check="drift.numeric", target="*", until=utcnow() + timedelta(hours=2))
        mute(session, monitor="acs", check="subset.auc", target="young", until=utcnow() + timedelta(hours=1))
        mutes = active_mutes(session, "acs")
        assert mutes.covers("drift.numeric", "anything") and mutes.covers("subset.auc", "young")
        assert not mutes.covers("subset.auc", "old") and not active_mutes(session, "other").keys
        assert [m["check"] for m in list_mutes(session, "acs")] == ["subset.auc", "drift.numeric"]
        assert unmute(session, monitor="acs", check="subset.auc", target="young") == 1
        assert unmute(session, monitor="acs", check="subset.auc", target="young") == 0
        with pytest.raises(ValueError, match="not in the future"):
            mute(session, monitor="acs", check="x", target="*", until=utcnow() - timedelta(days=1))


def test_report_link_sits_beside_the_run_link(engine: Engine, slack: SlackStandIn) -> None:
    config = _config(
        slack.api_url,
        run_url="https://ui/{monitor}/{batch_id}",
        report_url="https://reports/{monitor}/{batch_id}.html",
    )
    _run(engine, config, "b1", result("drift.numeric", "age", "high"))
    (post,) = slack.accepted()
    assert post.body["blocks"][-1]["elements"][0]["text"] == (
        "<https://ui/acs/b1|Open the run> · <https://reports/acs/b1.html|Open the report>"
    )
    assert post.body["text"].endswith("Run: https://ui/acs/b1\nReport: https://reports/acs/b1.html")


def test_an_interrupted_parent_is_found_in_the_channel_and_its_thread_recorded(
    engine: Engine, slack: SlackStandIn
) -> None:
    config = _config(slack.api_url)
    _run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    with Session(engine) as session, session.begin():  # posted, but the answer never came back
        session.execute(update(AlertOutbox).values(sent_at=None, sending_at=utcnow() - timedelta(hours=1)))
        session.execute(update(IncidentThread).values(channel=None, ts=None))
    report = _run(engine, config, "b2", result("drift.numeric", "age", "high"))
    assert (report.delivered, report.pending) == (2, 0)
    (parent,) = slack.top_level()
    assert "/api/conversations.history" in slack.reads
    assert _threads(engine)[0].ts == parent["ts"]
    assert [m["text"].splitlines()[1] for m in slack.thread(parent["ts"])] == [
        "[HIGH] drift.numeric · age: escalated from medium"
    ]
