"""`DriftlineHook` and its connection type `driftline`: where a monitor's history is stored, the
credentials its alerts go out with, and where its reports are served.

One connection holds what would otherwise be spread over a database connection, a Slack connection and
a setting:

| field | holds |
| --- | --- |
| extra `store_url` | the history store's SQLAlchemy URL (`postgresql+psycopg://driftline@db/driftline`) |
| password | the store's password, when the URL names a user without one (masked by Airflow) |
| extra `slack_channel` | the channel the notifier posts to with the bot token |
| extra `slack_token` | a Slack bot token (masked) |
| extra `slack_webhook_url` | a Slack incoming-webhook URL, instead of a channel and token (masked) |
| extra `report_url` | a link template to a served report: `{monitor}`, `{batch_id}`, `{file}` |
| extra `channels` | alert channels the notifier also sends to: a JSON list of `alerts.channels` entries |

Every secret read is masked in task logs (`mask_secret`).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from string import Formatter
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook

CONN_TYPE = "driftline"
DEFAULT_CONN_ID = "driftline_default"
REPORT_URL_FIELDS = frozenset({"monitor", "batch_id", "file"})
SECRET_EXTRAS = ("slack_token", "slack_webhook_url")


def extra_value(conn: Any, key: str) -> Any:
    """An extra of a `driftline` connection, under its own key or the form's `extra__driftline__` key."""
    extra = conn.extra_dejson or {}
    value = extra.get(key)
    return value if value not in (None, "") else extra.get(f"extra__{CONN_TYPE}__{key}") or None


def checked_report_template(template: str, where: str) -> str:
    """`template` when it names only `{monitor}`, `{batch_id}` and `{file}`; else a ValueError saying
    where it came from."""
    try:
        names = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"{where}: malformed report URL template {template!r}: {exc}") from None
    unknown = names - REPORT_URL_FIELDS
    if unknown:
        raise ValueError(
            f"{where}: report URL template names {sorted(unknown)}; "
            "use {monitor}, {batch_id} and {file}"
        )
    return template


def report_link(template: str | None, monitor: str, batch_id: str, report: Path) -> str:
    """The URL of a run's report: the template filled in (each field percent-encoded), else the file's
    own `file://` URI."""
    if not template:
        return report.resolve().as_uri()
    fields = {"monitor": monitor, "batch_id": batch_id, "file": report.name}
    return template.format(**{key: quote(value, safe="") for key, value in fields.items()})


class DriftlineHook(BaseHook):
    """Reads a `driftline` connection: the history store URL, the Slack credentials and channel, and
    the template of report links.

    :param driftline_conn_id: the connection (conn type `driftline`).
    """

    conn_name_attr = "driftline_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = "driftline"

    def __init__(self, driftline_conn_id: str = DEFAULT_CONN_ID) -> None:
        super().__init__()
        self.driftline_conn_id = driftline_conn_id

    @cached_property
    def connection(self) -> Any:
        """The connection, its secrets masked in task logs."""
        from airflow.sdk.log import mask_secret

        conn = self.get_connection(self.driftline_conn_id)
        for key in SECRET_EXTRAS:
            value = extra_value(conn, key)
            if value:
                mask_secret(value)
        return conn

    def get_conn(self) -> Any:
        """The connection itself (driftline opens its own database sessions)."""
        return self.connection

    def store_url(self) -> str | None:
        """The history store URL (None when the connection gives none), with the connection's
        password filled in when the URL names a user without one."""
        return store_url_of(self.connection)

    def slack_secret(self) -> str | None:
        """The Slack bot token, else the incoming-webhook URL, else None."""
        return slack_secret_of(self.connection)

    def slack_channel(self) -> str | None:
        """The channel the bot token posts to (None: a webhook, or no Slack)."""
        return extra_value(self.connection, "slack_channel")

    def report_url(self, monitor: str, batch_id: str, report: Path) -> str:
        """The link to a run's report, from the connection's `report_url` template (else a file URI)."""
        template = extra_value(self.connection, "report_url")
        where = f"connection {self.driftline_conn_id!r}"
        checked = checked_report_template(template, where) if template else None
        return report_link(checked, monitor, batch_id, report)


def store_url_of(conn: Any) -> str | None:
    """A `driftline` connection's history store URL, the connection's password filled in when the URL
    names a user without one; None when it has no `store_url`."""
    from sqlalchemy.engine import make_url

    given = extra_value(conn, "store_url")
    if not given:
        return None
    try:
        url = make_url(str(given))
    except Exception:
        raise ValueError(f"connection {conn.conn_id!r}: extra store_url is not a SQLAlchemy URL") from None
    if url.username and url.password is None and conn.password:
        url = url.set(password=conn.password)
    if url.password:
        from airflow.sdk.log import mask_secret

        mask_secret(url.password)
    return url.render_as_string(hide_password=False)


def slack_secret_of(conn: Any) -> str | None:
    """A `driftline` connection's Slack bot token, else its incoming-webhook URL, else None."""
    return extra_value(conn, "slack_token") or extra_value(conn, "slack_webhook_url")
