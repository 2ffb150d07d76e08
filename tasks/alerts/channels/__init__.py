"""Alert channels: one module per kind, each a `Channel` registered by its `kind` (`register_channel`,
or the `driftline.channels` entry point group of an installed package).

Built in: `slack` (`alerts.slack` and its routes, or an `alerts.channels` entry), `pagerduty` (Events
API v2), `teams` (incoming webhook, Adaptive Card), `email` (SMTP) and `webhook` (signed JSON); the
console is `alerts.console`. How to add one: docs/alerts.md.
"""

from driftline.tasks.alerts.channels.base import (
    Channel,
    ChannelUnavailable,
    Credentials,
    DeliveryError,
    Posted,
    UnavailableChannel,
    required_secret,
    secret_url,
)
from driftline.tasks.alerts.channels.console import ConsoleSender
from driftline.tasks.alerts.channels.email import EmailChannel
from driftline.tasks.alerts.channels.http_post import post_json, url_secrets
from driftline.tasks.alerts.channels.pagerduty import PagerDutyChannel
from driftline.tasks.alerts.channels.registry import (
    ENTRY_POINT_GROUP,
    channel_class,
    channel_kinds,
    register_channel,
    unregister_channel,
)
from driftline.tasks.alerts.channels.slack import (
    SlackBotSender,
    SlackChannel,
    SlackWebhookSender,
    slack_sender,
)
from driftline.tasks.alerts.channels.teams import TeamsChannel
from driftline.tasks.alerts.channels.webhook import WebhookChannel
from driftline.tasks.alerts.config import ChannelConfig

__all__ = [
    "ENTRY_POINT_GROUP",
    "Channel",
    "ChannelConfig",
    "ChannelUnavailable",
    "ConsoleSender",
    "Credentials",
    "DeliveryError",
    "EmailChannel",
    "PagerDutyChannel",
    "Posted",
    "SlackBotSender",
    "SlackChannel",
    "SlackWebhookSender",
    "TeamsChannel",
    "UnavailableChannel",
    "WebhookChannel",
    "channel_class",
    "channel_kinds",
    "post_json",
    "register_channel",
    "required_secret",
    "secret_url",
    "slack_sender",
    "unregister_channel",
    "url_secrets",
]
