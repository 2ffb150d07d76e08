"""Senders against a real local HTTP server playing Slack: posts, retries, refusals, unreachable hosts."""

from __future__ import annotations

import io
import logging
import time

import pytest

from driftline.tasks.alerts.channels.slack import SlackBotSender, SlackWebhookSender
from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.alerts.delivery import ConsoleSender, DeliveryError, UnavailableSender, build_sender
from tests.alerts.builders import TOKEN
from tests.alerts.slack_server import WEBHOOK_PATH, Reply, SlackStandIn, closed_port_url

MESSAGE = {
    "text": "driftline: m, batch b: worst severity high",
    "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "*drift* &lt;age&gt;"}}],
}


def _bot(slack: SlackStandIn, channel: str = "#ml-alerts") -> SlackBotSender:
    config = AlertConfig.model_validate({"slack": {"channel": channel, "base_url": slack.api_url}})
    sender = build_sender(config, TOKEN)
    assert isinstance(sender, SlackBotSender)
    return sender


def _refusal(sender, message=MESSAGE) -> str:
    with pytest.raises(DeliveryError) as info:
        sender.send(message)
    text = str(info.value)
    assert TOKEN not in text and "stand-in-webhook-secret" not in text
    return text


def test_bot_post_arrives_with_channel_text_blocks_and_token(slack: SlackStandIn) -> None:
    _bot(slack).send(MESSAGE)
    (request,) = slack.requests
    assert request.path == "/api/chat.postMessage"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.body == {"channel": "#ml-alerts", **MESSAGE}
    assert request.accepted


def test_rate_limit_is_retried_after_retry_after_and_delivered_once(slack: SlackStandIn) -> None:
    slack.script(Reply.rate_limited(retry_after=1), Reply.ok())
    start = time.monotonic()
    _bot(slack).send(MESSAGE)
    assert time.monotonic() - start >= 1.0
    assert [r.status for r in slack.requests] == [429, 200]
    assert len(slack.accepted()) == 1


def test_server_error_is_retried_and_delivered_once(slack: SlackStandIn) -> None:
    slack.script(Reply.server_error(), Reply.ok())
    _bot(slack).send(MESSAGE)
    assert [r.status for r in slack.requests] == [500, 200]
    assert len(slack.accepted()) == 1


def test_persistent_server_error_fails_after_one_retry(slack: SlackStandIn) -> None:
    slack.default = Reply.server_error(503)
    text = _refusal(_bot(slack))
    assert text.startswith("Slack answered HTTP 503")
    assert [r.status for r in slack.requests] == [503, 503]


@pytest.mark.parametrize("code", ["invalid_auth", "not_authed", "token_revoked"])
def test_rejected_token_names_the_problem_and_its_source(slack: SlackStandIn, code: str) -> None:
    slack.script(Reply.slack_error(code))
    text = _refusal(_bot(slack))
    source = "the bot token from environment variable SLACK_BOT_TOKEN"
    assert text == f"Slack rejected {source} ({code}): check or replace it"
    assert len(slack.requests) == 1


def test_unknown_channel_names_the_channel(slack: SlackStandIn) -> None:
    slack.script(Reply.slack_error("channel_not_found"))
    text = _refusal(_bot(slack, "#nowhere"))
    assert "#nowhere (channel_not_found)" in text


def test_message_errors_do_not_block_other_messages(slack: SlackStandIn) -> None:
    slack.script(Reply.slack_error("invalid_blocks"))
    with pytest.raises(DeliveryError) as info:
        _bot(slack).send(MESSAGE)
    assert not info.value.affects_all and "invalid_blocks" in str(info.value)


def test_unreachable_server_is_a_delivery_error() -> None:
    url = closed_port_url()
    sender = SlackBotSender(token=TOKEN, channel="#a", base_url=url)
    text = _refusal(sender)
    assert text.startswith(f"cannot reach Slack at {url.removesuffix('/api/')}: URLError")


def test_webhook_post_and_refusal(slack: SlackStandIn) -> None:
    config = AlertConfig.model_validate({"slack": {"webhook_url": slack.webhook_url}})
    sender = build_sender(config)
    assert isinstance(sender, SlackWebhookSender) and sender.destination == "slack-webhook"
    sender.send(MESSAGE)
    (request,) = slack.requests
    assert (request.path, request.body, request.accepted) == (WEBHOOK_PATH, MESSAGE, True)

    slack.script(Reply.server_error(), Reply.ok())
    sender.send(MESSAGE)
    assert [r.status for r in slack.requests[1:]] == [500, 200]

    slack.script(Reply.webhook_error("invalid_token", 403))
    assert _refusal(sender) == (
        "Slack rejected the webhook URL in alerts.slack.webhook_url (invalid_token): check or replace it"
    )
    slack.script(Reply.webhook_error("channel_is_archived", 410))
    assert "the webhook's channel (channel_is_archived)" in _refusal(sender)


def test_webhook_url_from_the_environment(slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    config = AlertConfig.model_validate({"slack": {"webhook_url_env": "DRIFTLINE_TEST_HOOK"}})
    monkeypatch.delenv("DRIFTLINE_TEST_HOOK", raising=False)
    missing = build_sender(config)
    assert isinstance(missing, UnavailableSender)
    assert "environment variable DRIFTLINE_TEST_HOOK is unset" in _refusal(missing)
    monkeypatch.setenv("DRIFTLINE_TEST_HOOK", slack.webhook_url)
    sender = build_sender(config)
    assert sender is not None
    sender.send(MESSAGE)
    assert len(slack.accepted()) == 1


def test_webhook_url_stays_out_of_errors_and_logs(
    slack: SlackStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    SlackWebhookSender(slack.webhook_url).send(MESSAGE)
    _refusal(SlackWebhookSender(closed_port_url().removesuffix("/api/") + WEBHOOK_PATH))
    assert caplog.records and "stand-in-webhook-secret" not in caplog.text


def test_bot_token_stays_out_of_logs(slack: SlackStandIn, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    slack.script(Reply.server_error(), Reply.slack_error("invalid_auth"))
    _refusal(_bot(slack))
    assert "chat.postMessage" in caplog.text and TOKEN not in caplog.text


def test_bot_token_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    config = AlertConfig.model_validate({"slack": {"channel": "#a", "token_env": "DRIFTLINE_TEST_TOKEN"}})
    monkeypatch.delenv("DRIFTLINE_TEST_TOKEN", raising=False)
    missing = build_sender(config)
    assert isinstance(missing, UnavailableSender) and missing.destination == "slack:#a"
    assert _refusal(missing) == "no Slack bot token (expected from environment variable DRIFTLINE_TEST_TOKEN)"
    monkeypatch.setenv("DRIFTLINE_TEST_TOKEN", TOKEN)
    assert isinstance(build_sender(config), SlackBotSender)
    blocked = AlertConfig.model_validate({"slack": {"channel": "#a", "token_block": "slack-bot"}})
    assert isinstance(build_sender(blocked), UnavailableSender)
    assert isinstance(build_sender(blocked, TOKEN), SlackBotSender)


def test_console_prints_readable_text() -> None:
    stream = io.StringIO()
    sender = build_sender(AlertConfig(), stream=stream)
    assert isinstance(sender, ConsoleSender)
    sender.send({"text": "a &lt;b&gt; &amp; c", "blocks": []})
    assert stream.getvalue() == "a <b> & c\n\n"
    assert build_sender(AlertConfig(console=False)) is None


def test_console_defaults_to_stderr_so_stdout_stays_machine_readable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sender = build_sender(AlertConfig())
    assert isinstance(sender, ConsoleSender)
    sender.send({"text": "a &lt;b&gt;", "blocks": []})
    ConsoleSender().send({"text": "c", "blocks": []})
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "a <b>\n\nc\n\n"


def test_redaction_covers_every_secret() -> None:
    sender = SlackBotSender(token=f" {TOKEN} ", channel="#a")
    assert sender.redact(f"bad {TOKEN}!") == "bad [redacted]!"
    webhook = SlackWebhookSender("https://hooks.example/services/T1/B1/abc")
    assert webhook.redact("POST /services/T1/B1/abc failed") == "POST [redacted] failed"
