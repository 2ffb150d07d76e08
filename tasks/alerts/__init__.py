"""Alerting: incidents opened, escalated and resolved by runs (thresholds and baseline rules), and their
messages on every channel (`channels/`: Slack, with one thread per incident on a bot channel,
PagerDuty, Teams, email, signed webhooks, the console, or a channel of your own), routed and muted as
configured.

Every message goes through the `alert_outbox` table before it is sent, so an alert a channel cannot
take now is delivered by a later run.

The public names are imported on first use (`driftline.lazy`): a spec reads `alerts.config` without
importing slack_sdk or SQLAlchemy.
"""

from driftline.lazy import exports

_PUBLIC = {
    "AlertConfig": "driftline.tasks.alerts.config",
    "AlertReport": "driftline.tasks.alerts.process",
    "AlertRule": "driftline.tasks.alerts.config",
    "ConsoleSender": "driftline.tasks.alerts.channels.console",
    "DeliveryError": "driftline.tasks.alerts.delivery",
    "FlushResult": "driftline.tasks.alerts.outbox",
    "IncidentChange": "driftline.tasks.alerts.incidents",
    "Posted": "driftline.tasks.alerts.delivery",
    "Route": "driftline.tasks.alerts.config",
    "Sender": "driftline.tasks.alerts.delivery",
    "SlackBotSender": "driftline.tasks.alerts.channels.slack",
    "SlackConfig": "driftline.tasks.alerts.config",
    "SlackWebhookSender": "driftline.tasks.alerts.channels.slack",
    "apply_incidents": "driftline.tasks.alerts.incidents",
    "build_message": "driftline.tasks.alerts.messages",
    "build_sender": "driftline.tasks.alerts.delivery",
    "build_senders": "driftline.tasks.alerts.delivery",
    "enqueue": "driftline.tasks.alerts.outbox",
    "flush_outbox": "driftline.tasks.alerts.outbox",
    "process_alerts": "driftline.tasks.alerts.process",
    "purge_sent": "driftline.tasks.alerts.outbox",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = exports(__name__, _PUBLIC)
