"""Senders that deliver one message, and the choice of sender for a monitor's alert config.

The console sender and the stand-in for a destination without credentials live here; the Slack
senders (bot and incoming webhook, `tasks.alerts.slack`) are imported only when a monitor sends to
Slack, so a run without Slack never imports slack_sdk. A failure is a `DeliveryError` whose message
names the problem and never contains a token or a webhook URL; the outbox keeps failed messages for
the next run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from driftline.tasks.alerts.config import (
    CONSOLE_DESTINATION,
    AlertConfig,
    SlackConfig,
    http_url_problem,
)
from driftline.tasks.alerts.messages import unescape


@dataclass(frozen=True)
class Posted:
    """Where Slack put a message: the channel id and the message's `ts` (a thread's `thread_ts`)."""

    channel: str
    ts: str


class DeliveryError(RuntimeError):
    """A send that failed; `affects_all` is False when only this message is at fault, `answered` is
    True when the message was certainly not posted (Slack answered, or the connection was refused)."""

    def __init__(self, message: str, *, affects_all: bool = True, answered: bool = False) -> None:
        super().__init__(message)
        self.affects_all = affects_all
        self.answered = answered


class Sender:
    """Delivers messages to one destination; `send` raises `DeliveryError` on failure."""

    destination: str
    secrets: tuple[str, ...] = ()
    threads = False

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """Deliver one message (`text` and `blocks`), tagged with its dedupe `key` where it can be, as
        a reply in `thread` where the destination threads; returns where it landed when known."""
        raise NotImplementedError

    def update(self, thread: Posted, message: Mapping[str, Any]) -> None:
        """Replace a thread's parent message with `message`; destinations that cannot edit ignore it."""

    def already_posted(self, key: str, since: datetime, thread: Posted | None = None) -> Posted | bool | None:
        """Whether a message tagged `key` was posted since `since` (in `thread`, when given): where it
        is when found, False when it is not there, None when this destination cannot tell (the caller
        then sends again)."""
        return None

    def redact(self, text: str) -> str:
        """`text` with every secret this sender holds replaced by `[redacted]`."""
        for secret in filter(None, self.secrets):
            text = text.replace(secret, "[redacted]")
        return text


class ConsoleSender(Sender):
    """Prints a readable plain-text rendering (the demo's sink when no Slack is configured).

    Without a `stream`, alerts go to standard error (looked up at each send), so standard output stays
    free for machine-readable output such as `driftline run --json`. They are written to the stream,
    not printed, so an engine that turns prints into log lines (Prefect's `log_prints`) and a quiet
    log level cannot hide them.
    """

    destination = CONSOLE_DESTINATION

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(unescape(message["text"]) + "\n\n")
        stream.flush()
        return None


class UnavailableSender(Sender):
    """Stands in for a destination that lacks its credentials: every send fails with `problem`."""

    def __init__(self, destination: str, problem: str) -> None:
        self.destination = destination
        self.problem = problem

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        raise DeliveryError(self.problem)


def _webhook_sender(slack: SlackConfig) -> Sender:
    """The incoming-webhook sender of `alerts.slack`, or a stand-in naming what is missing."""
    from driftline.tasks.alerts.slack import SlackWebhookSender

    if slack.webhook_url is not None:
        return SlackWebhookSender(
            slack.webhook_url.get_secret_value(), credential="the webhook URL in alerts.slack.webhook_url"
        )
    env = slack.webhook_url_env
    url = os.environ.get(env) if env else None
    if not url:
        problem = f"no Slack webhook URL: environment variable {env} is unset"
        return UnavailableSender(slack.destination, problem)
    if refused := http_url_problem(url):
        return UnavailableSender(
            slack.destination, f"the Slack webhook URL in environment variable {env} {refused}"
        )
    return SlackWebhookSender(url, credential=f"the webhook URL in environment variable {env}")


def build_sender(
    config: AlertConfig, token: str | None = None, stream: TextIO | None = None
) -> Sender | None:
    """The sender for a monitor's alert config, or None when alerts go nowhere.

    `token` is the bot token the flow resolved; without it, `token_env` is read (unless the token
    comes from a Secret block). Missing credentials give an `UnavailableSender`, so messages still
    queue and go out once the credentials are there.
    """
    slack = config.slack
    if slack is None:
        return ConsoleSender(stream) if config.console else None
    if slack.uses_webhook:
        return _webhook_sender(slack)
    if token is None and slack.token_env and not slack.token_block:
        token = os.environ.get(slack.token_env)
    if not token:
        problem = f"no Slack bot token (expected from {slack.token_source})"
        return UnavailableSender(slack.destination, problem)
    assert slack.channel is not None
    from driftline.tasks.alerts.slack import SlackBotSender

    return SlackBotSender(
        token=token,
        channel=slack.channel,
        base_url=slack.base_url,
        credential=f"the bot token from {slack.token_source}",
    )


def build_senders(
    config: AlertConfig, token: str | None = None, stream: TextIO | None = None
) -> dict[str, Sender]:
    """A sender for every destination of the config: the default one (as `build_sender`), then one
    bot sender per route channel (same token and API URL as `alerts.slack`)."""
    senders: dict[str, Sender] = {}
    default = build_sender(config, token, stream)
    if default is not None:
        senders[default.destination] = default
    slack = config.slack
    if not config.routes or slack is None:
        return senders
    if token is None and slack.token_env and not slack.token_block:
        token = os.environ.get(slack.token_env)
    from driftline.tasks.alerts.slack import SlackBotSender

    for route in config.routes:
        if not token:
            problem = f"no Slack bot token (expected from {slack.token_source})"
            senders[route.destination] = UnavailableSender(route.destination, problem)
            continue
        senders[route.destination] = SlackBotSender(
            token=token,
            channel=route.channel,
            base_url=slack.base_url,
            credential=f"the bot token from {slack.token_source}",
        )
    return senders
