"""Secrets and the history database from Airflow Connections, beside the environment variables the
core reads.

An environment variable or a URL in the spec always wins (as under `driftline run`); a connection
fills in what they leave unset: `driftline_db` for the history database, `driftline_slack` for the
Slack bot token or incoming-webhook URL.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from driftline.tasks.spec import MonitorSpec

DB_CONN_ID = "driftline_db"
SLACK_CONN_ID = "driftline_slack"

# Connection types Airflow users pick for these databases, and the SQLAlchemy driver the core uses.
_SQLALCHEMY_SCHEMES = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}


def get_connection(conn_id: str | None) -> Any | None:
    """The Airflow Connection `conn_id`, or None when it is not defined (or no id is given)."""
    if not conn_id:
        return None
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def sqlalchemy_url(conn: Any) -> str:
    """A SQLAlchemy URL from a connection: its extra `url` if set, else built from its fields
    (conn type `postgres` or `sqlite`)."""
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return str(extra["url"])
    conn_type = (conn.conn_type or "").lower()
    if conn_type == "sqlite":
        if not conn.host:
            raise ValueError(f"connection {conn.conn_id!r}: a sqlite connection needs the file path as host")
        return f"sqlite:///{conn.host}"
    scheme = _SQLALCHEMY_SCHEMES.get(conn_type)
    if scheme is None:
        raise ValueError(
            f"connection {conn.conn_id!r}: conn type {conn.conn_type!r} is not postgres or sqlite; "
            'put a SQLAlchemy URL in its extra as {"url": "..."}'
        )
    auth = ""
    if conn.login:
        auth = quote(conn.login, safe="")
        if conn.password:
            auth += ":" + quote(conn.password, safe="")
        auth += "@"
    port = f":{conn.port}" if conn.port else ""
    return f"{scheme}://{auth}{conn.host or ''}{port}/{conn.schema or ''}"


def resolve_store_url(spec: MonitorSpec, store_url: str | None, conn_id: str | None) -> str | None:
    """The history database URL to put in the spec: the operator's `store_url`, else the spec's, else
    None when $DRIFTLINE_DATABASE_URL is set (the core reads it), else the connection's, else None
    (the core's default)."""
    from driftline.tasks.history.db import ENV_VAR

    if store_url:
        return store_url
    if spec.store_url or os.environ.get(ENV_VAR):
        return spec.store_url
    conn = get_connection(conn_id)
    return sqlalchemy_url(conn) if conn is not None else None


def slack_secret(conn: Any) -> str | None:
    """The secret a Slack connection holds: its password (a bot token or a webhook URL), else an
    http(s) host (a webhook URL kept in the host field)."""
    if conn.password:
        return str(conn.password)
    host = conn.host or ""
    return host if host.startswith(("http://", "https://")) else None


def with_slack_connection(spec: MonitorSpec, conn_id: str | None) -> MonitorSpec:
    """The spec with its Slack credential taken from the connection when its environment variable is
    unset: the bot token through the driver's secret lookup, the webhook URL as a masked value."""
    slack = spec.alerts.slack
    if slack is None or slack.webhook_url is not None or slack.token_block:
        return spec
    env = slack.webhook_url_env if slack.uses_webhook else slack.token_env
    if env and os.environ.get(env):
        return spec
    conn = get_connection(conn_id)
    secret = slack_secret(conn) if conn is not None else None
    if not secret:
        return spec
    fields = slack.model_dump()
    if slack.uses_webhook:
        fields.update(webhook_url=secret, webhook_url_env=None)
    else:
        fields.update(token_block=conn_id)
    new_slack = type(slack).model_validate(fields)
    alerts = spec.alerts.model_copy(update={"slack": new_slack})
    return spec.model_copy(update={"alerts": alerts})
