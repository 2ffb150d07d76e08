"""A process killed while Slack posts its alert: the next flush finds the message and does not post it
again; a send cut off before it reached Slack goes out once; a fresh in-flight send is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from driftline.tasks.alerts import flush_outbox
from driftline.tasks.alerts.channels.slack import SlackBotSender, SlackWebhookSender
from driftline.tasks.alerts.config import WEBHOOK_DESTINATION
from driftline.tasks.alerts.outbox import enqueue
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox, utcnow
from tests.alerts.builders import TOKEN
from tests.alerts.slack_server import Reply, SlackStandIn

ROOT = Path(__file__).parents[2]
MESSAGE = {"text": "acs: worst severity high, batch b1: drift", "blocks": []}
FLUSH = (
    "import sys\n"
    "from driftline.tasks.alerts import flush_outbox\n"
    "from driftline.tasks.alerts.channels.slack import SlackBotSender\n"
    "from driftline.tasks.history.db import open_store\n"
    "sender = SlackBotSender(token=sys.argv[3], channel='#ml-alerts', base_url=sys.argv[2])\n"
    "flush_outbox(open_store(sys.argv[1]), sender)\n"
)


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


@pytest.fixture
def store(database_url: str) -> Iterator[Engine]:
    """A migrated history store holding one queued alert for `#ml-alerts`."""
    engine = open_store(database_url)
    with Session(engine) as session, session.begin():
        enqueue(
            session, monitor="acs", batch_id="b1", destination="slack:#ml-alerts", payload=MESSAGE, key="k1"
        )
    try:
        yield engine
    finally:
        engine.dispose()


def row(engine: Engine) -> AlertOutbox:
    with Session(engine) as session:
        return session.scalars(select(AlertOutbox)).one()


def kill_mid_post(url: str, slack: SlackStandIn) -> None:
    """Run a flush in another process and kill it (-9) once Slack has posted but not yet answered."""
    slack.script(Reply.posted_then_silent(30))
    flusher = subprocess.Popen([sys.executable, "-c", FLUSH, url, slack.api_url, TOKEN], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not slack.accepted():
            assert flusher.poll() is None, "the flush ended before Slack answered"
            assert time.monotonic() < deadline, "the flush never reached Slack"
            time.sleep(0.05)
    finally:
        os.kill(flusher.pid, signal.SIGKILL)
        flusher.wait(10)


def bot(slack: SlackStandIn) -> SlackBotSender:
    return SlackBotSender(token=TOKEN, channel="#ml-alerts", base_url=slack.api_url)


def test_killed_after_slack_posted_is_not_posted_again(
    store: Engine, database_url: str, slack: SlackStandIn
) -> None:
    kill_mid_post(database_url, slack)
    cut_off = row(store)
    assert cut_off.sent_at is None and cut_off.sending_at is not None and cut_off.attempts == 1

    flushed = flush_outbox(store, bot(slack), lease=timedelta(0))
    assert (flushed.delivered, flushed.failed, flushed.pending) == (1, 0, 0)
    assert len(slack.accepted()) == 1
    assert slack.accepted()[0].body["metadata"]["event_payload"] == {"dedupe_key": "k1"}
    assert slack.reads == ["/api/conversations.list", "/api/conversations.history"]
    settled = row(store)
    assert settled.sent_at is not None and settled.sending_at is None and settled.attempts == 2


def test_killed_before_the_request_left_is_posted_once(store: Engine, slack: SlackStandIn) -> None:
    with Session(store) as session, session.begin():
        session.execute(update(AlertOutbox).values(sending_at=utcnow() - timedelta(minutes=10), attempts=1))
    flushed = flush_outbox(store, bot(slack))
    assert (flushed.delivered, flushed.pending) == (1, 0)
    assert len(slack.accepted()) == 1 and "/api/conversations.history" in slack.reads


def test_a_send_in_flight_elsewhere_is_left_alone_until_its_lease_ends(
    store: Engine, slack: SlackStandIn
) -> None:
    with Session(store) as session, session.begin():
        session.execute(update(AlertOutbox).values(sending_at=utcnow(), attempts=1))
    flushed = flush_outbox(store, bot(slack))
    assert (flushed.delivered, flushed.failed, flushed.pending) == (0, 0, 1)
    assert slack.requests == [] and slack.reads == []


def test_webhooks_cannot_look_back_and_post_an_interrupted_send_again(
    store: Engine, slack: SlackStandIn
) -> None:
    """The documented limit: a webhook has no history to read, so delivery is at least once."""
    with Session(store) as session, session.begin():
        session.execute(
            update(AlertOutbox).values(
                destination=WEBHOOK_DESTINATION, sending_at=utcnow() - timedelta(hours=1)
            )
        )
    flushed = flush_outbox(store, SlackWebhookSender(slack.webhook_url))
    assert flushed.delivered == 1 and len(slack.accepted()) == 1 and slack.reads == []
