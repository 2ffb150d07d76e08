"""Alert channels: one module per kind, each a `Channel` registered by its `kind` (`register_channel`,
or the `driftline.channels` entry point group of an installed package).

Built in: `slack` (`alerts.slack` and its routes, or an `alerts.channels` entry), `pagerduty` (Events
API v2), `teams` (incoming webhook, Adaptive Card), `email` (SMTP) and `webhook` (signed JSON); the
console is `alerts.console`. How to add one: docs/alerts.md.
"""

from driftline.lazy import exports

# Each name is imported from its module on first use: a monitor that never names Slack never imports
# slack_sdk.
_PUBLIC = {
    "Channel": "driftline.tasks.alerts.channels.base",
    "channel_class": "driftline.tasks.alerts.channels.registry",
    "channel_kinds": "driftline.tasks.alerts.channels.registry",
    "ChannelUnavailable": "driftline.tasks.alerts.channels.base",
    "ConsoleSender": "driftline.tasks.alerts.channels.console",
    "Credentials": "driftline.tasks.alerts.channels.base",
    "DeliveryError": "driftline.tasks.alerts.channels.base",
    "EmailChannel": "driftline.tasks.alerts.channels.email",
    "ENTRY_POINT_GROUP": "driftline.tasks.alerts.channels.registry",
    "PagerDutyChannel": "driftline.tasks.alerts.channels.pagerduty",
    "post_json": "driftline.tasks.alerts.channels.http_post",
    "Posted": "driftline.tasks.alerts.channels.base",
    "register_channel": "driftline.tasks.alerts.channels.registry",
    "required_secret": "driftline.tasks.alerts.channels.base",
    "secret_url": "driftline.tasks.alerts.channels.base",
    "slack_sender": "driftline.tasks.alerts.channels.slack",
    "SlackBotSender": "driftline.tasks.alerts.channels.slack",
    "SlackChannel": "driftline.tasks.alerts.channels.slack",
    "SlackWebhookSender": "driftline.tasks.alerts.channels.slack",
    "TeamsChannel": "driftline.tasks.alerts.channels.teams",
    "UnavailableChannel": "driftline.tasks.alerts.channels.base",
    "unregister_channel": "driftline.tasks.alerts.channels.registry",
    "url_secrets": "driftline.tasks.alerts.channels.http_post",
    "WebhookChannel": "driftline.tasks.alerts.channels.webhook",
    "ChannelConfig": "driftline.tasks.alerts.config",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = exports(__name__, _PUBLIC)
