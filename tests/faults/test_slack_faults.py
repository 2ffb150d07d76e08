"""Slack answering 429 or 500, or down, during real monitor runs: every alert reaches the channel once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from driftline import load_spec, run_monitor
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox
from tests.alerts.builders import TOKEN
from tests.alerts.slack_server import Reply, SlackStandIn, closed_port_url
from tests.demo import count, write_spec

FAILING_BATCH, PASSING_BATCH = "2018-12", "2016-06"


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


def monitor(demo_data: Path, tmp_path: Path, base_url: str, monkeypatch: pytest.MonkeyPatch) -> MonitorSpec:
    """The demo monitor alerting `#ml-alerts` through the Slack API at `base_url`; its incidents resolve
    on the first quiet run, so one passing batch resolves them (these tests are about delivery)."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    slack = {"channel": "#ml-alerts", "base_url": base_url, "token_env": "SLACK_BOT_TOKEN"}
    url = f"sqlite:///{tmp_path / 'h.db'}"
    alerts = {"min_severity": "medium", "slack": slack, "resolve_after": 1}
    return load_spec(write_spec(demo_data, tmp_path, store_url=url, retrain=None, alerts=alerts))


def unsent(spec: MonitorSpec) -> list[str]:
    engine = open_store(spec.database_url())
    try:
        with Session(engine) as session:
            query = select(AlertOutbox.batch_id).where(AlertOutbox.sent_at.is_(None))
            return list(session.scalars(query))
    finally:
        engine.dispose()


def posted_batches(slack: SlackStandIn) -> list[str]:
    return [r.body["text"].split(", batch ")[1].split(":")[0] for r in slack.accepted()]


def test_rate_limited_then_accepted_posts_once(
    demo_data: Path, tmp_path: Path, slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack.script(Reply.rate_limited(retry_after=1))
    spec = monitor(demo_data, tmp_path, slack.api_url, monkeypatch)
    summary = run_monitor(spec, FAILING_BATCH)
    assert summary.alerts["delivered"] == 1 and summary.alerts["pending"] == 0
    assert [r.status for r in slack.requests] == [429, 200]
    run_monitor(spec, FAILING_BATCH)
    assert posted_batches(slack) == [FAILING_BATCH]
    assert count(spec.database_url(), AlertOutbox) == 1 and unsent(spec) == []


def test_server_errors_keep_the_alert_for_the_next_run(
    demo_data: Path, tmp_path: Path, slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack.script(Reply.server_error(), Reply.server_error())
    spec = monitor(demo_data, tmp_path, slack.api_url, monkeypatch)
    first = run_monitor(spec, FAILING_BATCH)
    assert first.status == "failed" and first.alerts["pending"] == 1 and slack.accepted() == []
    assert unsent(spec) == [FAILING_BATCH]

    second = run_monitor(spec, FAILING_BATCH)
    assert second.alerts["delivered"] == 1 and second.alerts["pending"] == 0
    assert posted_batches(slack) == [FAILING_BATCH]
    assert count(spec.database_url(), AlertOutbox) == 1


def test_slack_down_then_back_delivers_every_alert_once_in_order(
    demo_data: Path, tmp_path: Path, slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = monitor(demo_data, tmp_path, closed_port_url(), monkeypatch)
    assert run_monitor(down, FAILING_BATCH).status == "failed"
    assert unsent(down) == [FAILING_BATCH]

    up = monitor(demo_data, tmp_path, slack.api_url, monkeypatch)
    newer = demo_data.parent / "data" / "batches" / "2019-06.parquet"
    newer.write_bytes((demo_data.parent / "data" / "batches" / f"{PASSING_BATCH}.parquet").read_bytes())
    try:
        back = run_monitor(up, "2019-06")
    finally:
        newer.unlink()
    assert back.alerts["delivered"] == 2 and back.alerts["pending"] == 0
    assert posted_batches(slack) == [FAILING_BATCH, "2019-06"]
    assert count(up.database_url(), AlertOutbox) == 2 and unsent(up) == []
