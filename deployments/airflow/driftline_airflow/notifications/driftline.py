"""`DriftlineNotifier`: sends a monitor task's verdict, as a task or DAG callback.

It reads the monitor task's XCom summary (pushed before the task fails or skips, so it is there in an
`on_failure_callback` too) and sends one message: the verdict, the worst severity, the failing checks in
the order of every other surface, and the link to the report. It goes where the `driftline` connection
says (its `slack_channel` with its `slack_token`, or its `slack_webhook_url`), else to the task log.
Delivery is driftline's own (`driftline.tasks.alerts.delivery.build_sender`), so retries, redaction and
error messages are those of the monitor's alerts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from driftline_airflow.hooks.driftline import DEFAULT_CONN_ID

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


class DriftlineNotifier(BaseNotifier):
    """Send the verdict of a driftline monitor task.

    :param task_id: the monitor task whose summary is sent; default the task the callback is on.
    :param driftline_conn_id: the `driftline` connection with the Slack channel and credential; when it
        is not defined, or names no Slack destination, the message goes to the task log.
    """

    template_fields: Sequence[str] = ("task_id", "driftline_conn_id")

    def __init__(
        self, *, task_id: str | None = None, driftline_conn_id: str | None = DEFAULT_CONN_ID
    ) -> None:
        super().__init__()
        self.task_id = task_id
        self.driftline_conn_id = driftline_conn_id

    def notify(self, context: Any) -> None:
        """Send the summary's verdict; say so in the log when the task pushed no summary."""
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
            sender.send({"text": message, "blocks": [section]})

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
