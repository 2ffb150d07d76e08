"""`DriftlineNotifier`: sends a monitor task's verdict, as a task or DAG callback.

It reads the monitor task's XCom summary (pushed before the task fails or skips, so it is there in an
`on_failure_callback` too) and sends one message: the verdict, the worst severity, the failing checks in
the order of every other surface, and the link to the report. It goes where the `driftline` connection
says (its `slack_channel` with its `slack_token`, or its `slack_webhook_url`), else to the task log,
and to every alert channel given (`channels`, else the connection's extra `channels`): entries as in
a spec's `alerts.channels` (PagerDuty, Teams, email, a signed webhook, Slack, or any kind registered or
published under `driftline.channels`), built by the same channel registry, rendered by each channel from
one channel-neutral `Alert`, with `*_block` secrets read from Airflow connections. Delivery is
driftline's own, so retries, redaction and error messages are those of the monitor's alerts. A destination
that does not take the verdict is logged with the verdict itself, so the task log keeps it; the callback
does not fail.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseNotifier

from driftline_airflow.hooks.driftline import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from driftline.tasks.alerts.alert import Alert
    from driftline.tasks.alerts.config import ChannelConfig

SLACK_SECTION_LIMIT = 3000  # characters of one Slack section block
LISTED = 10  # failing checks the message names


def verdict_text(summary: Mapping[str, Any], report_url: str | None) -> str:
    """The message: `monitor batch B: status (worst severity S)`, the failing checks, the report link
    (Slack mrkdwn, every value from the data escaped)."""
    from driftline.tasks.alerts.messages import clip, escape, slack_link

    head = (
        f"*{escape(str(summary['monitor']))}* batch {escape(str(summary['batch_id']))}: "
        f"{escape(str(summary['status']))} (worst severity {escape(str(summary['worst_severity']))})"
    )
    failing = list(summary.get("failing_checks") or [])
    lines = [head]
    lines += [
        f"• {escape(str(c['check']))}[{escape(str(c['target']))}] {escape(str(c['severity']))}"
        for c in failing[:LISTED]
    ]
    if len(failing) > LISTED:
        lines.append(f"+{len(failing) - LISTED} more")
    if report_url:
        lines.append(slack_link(report_url, "report"))
    return clip("\n".join(lines), SLACK_SECTION_LIMIT)


def verdict_alert(summary: Mapping[str, Any]) -> Alert:
    """The verdict as a channel-neutral `Alert`: a change per failing check (with its metrics), keyed by
    the incident the run recorded for it when it did (`summary["alerts"]`), and the report link."""
    from driftline.tasks.alerts.alert import Alert
    from driftline.tasks.alerts.incidents import IncidentChange

    recorded = {(c["check"], c["target"]): c for c in ((summary.get("alerts") or {}).get("changes") or [])}
    changes = []
    for failing in summary.get("failing_checks") or []:
        key = (str(failing["check"]), str(failing["target"]))
        incident = recorded.get(key) or {}
        result = {"check": key[0], "target": key[1], "status": "ok", "severity": str(failing["severity"])}
        result["metrics"] = dict(failing.get("metrics") or {})
        kind = incident.get("kind") if incident.get("kind") in ("opened", "escalated") else "opened"
        changes.append(
            IncidentChange(
                kind, int(incident.get("incident_id") or 0), *key, result["severity"], None, result
            )
        )
    return Alert(
        str(summary["monitor"]), str(summary["batch_id"]), changes, report_url=summary.get("report_url")
    )


class DriftlineNotifier(BaseNotifier):
    """Send the verdict of a driftline monitor task.

    :param task_id: the monitor task whose summary is sent; default the task the callback is on.
    :param driftline_conn_id: the `driftline` connection with the Slack channel and credential; when it
        is not defined, or names no Slack destination, the message goes to the task log.
    :param channels: alert channels the verdict also goes to, each a mapping as an entry of a spec's
        `alerts.channels` (`{"kind": "teams"}`, `{"kind": "email", "smtp_host": ...}`); default the
        connection's extra `channels` (a JSON list), else none.
    """

    template_fields: Sequence[str] = ("task_id", "driftline_conn_id")

    def __init__(
        self,
        *,
        task_id: str | None = None,
        driftline_conn_id: str | None = DEFAULT_CONN_ID,
        channels: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self.task_id = task_id
        self.driftline_conn_id = driftline_conn_id
        self.channels = [dict(entry) for entry in channels] if channels is not None else None

    def notify(self, context: Any) -> None:
        """Send the summary's verdict; say so in the log when the task pushed no summary."""
        from driftline.tasks.alerts.channels.base import DeliveryError
        from driftline.tasks.alerts.delivery import build_sender

        ti = context["ti"]
        task_id = self.task_id or ti.task_id
        summary = ti.xcom_pull(task_ids=task_id)
        if not summary:
            self.log.warning("no driftline summary from task %s: nothing to send", task_id)
            return
        message = verdict_text(summary, summary.get("report_url"))
        config, token = self.alert_config()
        sender = build_sender(config, token, stream=sys.stdout)
        if sender is not None:
            section = {"type": "section", "text": {"type": "mrkdwn", "text": message}}
            try:
                sender.send({"text": message, "blocks": [section]})
            except DeliveryError as exc:
                self.undelivered(sender.destination, sender.redact(str(exc)), message)
        if entries := self.channel_configs():
            self.send_to_channels(entries, verdict_alert(summary), message)

    def undelivered(self, destination: str, why: str, message: str) -> None:
        """Log that `destination` did not get the verdict and why, with the verdict itself, so the task
        log keeps what no channel took."""
        self.log.error("verdict not sent to %s: %s; the verdict:\n%s", destination, why, message)

    def channel_configs(self) -> list[ChannelConfig]:
        """The alert channels to send to, validated as a spec's `alerts.channels` entries are (a wrong
        key or kind is an error naming it)."""
        from driftline.tasks.alerts.config import AlertConfig
        from driftline_airflow.connections import get_connection
        from driftline_airflow.hooks.driftline import CONN_TYPE, extra_value

        entries = self.channels
        if entries is None:
            conn = get_connection(self.driftline_conn_id)
            given = (
                extra_value(conn, "channels")
                if conn and (conn.conn_type or "").lower() == CONN_TYPE
                else None
            )
            entries = json.loads(given) if isinstance(given, str) else list(given or [])
        return AlertConfig.model_validate({"console": False, "channels": entries}).channels

    def send_to_channels(self, entries: list[ChannelConfig], alert: Alert, message: str) -> None:
        """Send `alert` through each channel (one message per incident to a per-incident channel such
        as PagerDuty, only for the checks the run keyed to an incident); a channel that cannot be built
        or refuses the message is logged with the verdict (`message`), and the others still get theirs."""
        from driftline.tasks.alerts.alert import Alert
        from driftline.tasks.alerts.channels.base import ChannelUnavailable, Credentials, DeliveryError
        from driftline.tasks.alerts.channels.registry import channel_class
        from driftline.tasks.alerts.outbox import dedupe_key
        from driftline_airflow.connections import get_connection, slack_secret

        credentials = Credentials(lambda name: slack_secret(conn) if (conn := get_connection(name)) else None)
        for entry in entries:
            try:
                channel = channel_class(entry.kind).from_config(entry, credentials)
            except ChannelUnavailable as exc:
                self.undelivered(entry.destination, str(exc), message)
                continue
            parts = [[c] for c in alert.changes if c.incident_id] if channel.per_incident else [alert.changes]
            if channel.per_incident and len(parts) < len(alert.changes):
                self.log.warning("%s: only checks with a recorded incident are sent", entry.destination)
            for changes in parts:
                part = Alert(
                    alert.monitor, alert.batch_id, changes, alert.results, report_url=alert.report_url
                )
                key = dedupe_key(alert.monitor, alert.batch_id, f"notifier:{entry.destination}", changes)
                try:
                    channel.send(channel.message(part), key=key)
                except DeliveryError as exc:
                    self.undelivered(entry.destination, channel.redact(str(exc)), message)

    def alert_config(self) -> tuple[Any, str | None]:
        """driftline's alert config for the connection's Slack destination (console when none) and
        the bot token."""
        from driftline.tasks.alerts.config import AlertConfig, SlackConfig
        from driftline_airflow.connections import get_connection
        from driftline_airflow.hooks.driftline import CONN_TYPE, DriftlineHook, extra_value

        conn = get_connection(self.driftline_conn_id)
        if conn is None or (conn.conn_type or "").lower() != CONN_TYPE:
            return AlertConfig(console=True), None
        hook = DriftlineHook(self.driftline_conn_id or DEFAULT_CONN_ID)
        webhook = extra_value(hook.connection, "slack_webhook_url")
        channel = hook.slack_channel()
        if webhook and not channel:
            return AlertConfig(slack=SlackConfig(webhook_url=webhook, token_env=None)), None
        if channel:
            token = extra_value(hook.connection, "slack_token")
            return AlertConfig(slack=SlackConfig(channel=channel, token_env=None)), token
        return AlertConfig(console=True), None
