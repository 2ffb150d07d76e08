"""Alerting: incidents opened, escalated and resolved by runs (thresholds and baseline rules), and their
messages on every channel (`channels/`: Slack, with one thread per incident on a bot channel,
PagerDuty, Teams, email, signed webhooks, the console, or a channel of your own), routed and muted as
configured.

Every message goes through the `alert_outbox` table before it is sent, so an alert a channel cannot
take now is delivered by a later run.
"""

from driftline.tasks.alerts.config import AlertConfig, AlertRule, Route, SlackConfig
from driftline.tasks.alerts.delivery import (
    ConsoleSender,
    DeliveryError,
    Posted,
    Sender,
    SlackBotSender,
    SlackWebhookSender,
    build_sender,
    build_senders,
)
from driftline.tasks.alerts.incidents import IncidentChange, apply_incidents
from driftline.tasks.alerts.messages import build_message
from driftline.tasks.alerts.outbox import FlushResult, enqueue, flush_outbox, purge_sent
from driftline.tasks.alerts.process import AlertReport, process_alerts

__all__ = [
    "AlertConfig",
    "AlertReport",
    "AlertRule",
    "ConsoleSender",
    "DeliveryError",
    "FlushResult",
    "IncidentChange",
    "Posted",
    "Route",
    "Sender",
    "SlackBotSender",
    "SlackConfig",
    "SlackWebhookSender",
    "apply_incidents",
    "build_message",
    "build_sender",
    "build_senders",
    "enqueue",
    "flush_outbox",
    "process_alerts",
    "purge_sent",
]
