"""Secrets and the history database from Airflow Connections, beside the environment variables the
core reads.

An environment variable or a URL in the spec always wins (as under `driftline run`); a connection
fills in what they leave unset: `driftline_db` for the history database, `driftline_slack` for the
Slack bot token or incoming-webhook URL.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from driftline_airflow.hooks.driftline import CONN_TYPE, slack_secret_of, store_url_of

if TYPE_CHECKING:
    from driftline.tasks.config.spec import MonitorSpec

DB_CONN_ID = "driftline_db"
SLACK_CONN_ID = "driftline_slack"

# Connection types Airflow users pick for these databases, and the SQLAlchemy driver the core uses.
_SQLALCHEMY_SCHEMES = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}
# Extras that Airflow's PostgreSQL hook reads itself (its `ignored_extra_options`): the database driver
# would refuse them as connection parameters.
_HOOK_ONLY_EXTRAS = frozenset(
    {"iam", "redshift", "redshift-serverless", "cursor", "cluster-identifier", "workgroup-name",
     "aws_conn_id", "sqlalchemy_scheme", "sqlalchemy_query", "azure_conn_id"}
)  # fmt: skip
# Extras asking for a password the hook fetches from a cloud provider, which driftline cannot do.
_TOKEN_EXTRAS = ("iam", "azure_conn_id")
# Connection fields by the URL part they fill.
_FIELD_NAMES = {"username": "login", "database": "schema"}


def first_holding(conn_ids: tuple[str | None, ...], holds: Any) -> str | None:
    """The first of `conn_ids` whose connection is defined and `holds(conn)`, else the last id (whose
    absence the caller handles as before)."""
    for conn_id in conn_ids[:-1]:
        conn = get_connection(conn_id)
        if conn is not None and holds(conn):
            return conn_id
    return conn_ids[-1]


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
    """A SQLAlchemy URL from a connection: its extra `url` if set, else built from its fields (conn type
    `postgres` or `sqlite`); the other extras (`sslmode`, `sslrootcert`, ...) become query parameters."""
    from sqlalchemy.engine import URL, make_url

    if (conn.conn_type or "").lower() == CONN_TYPE:
        url = store_url_of(conn)
        if url is None:
            raise ValueError(f"connection {conn.conn_id!r}: a driftline connection needs extra store_url")
        return url
    extra = dict(conn.extra_dejson or {})
    given = extra.pop("url", None)
    query = _query_parameters(conn.conn_id, extra)
    if given:
        url = make_url(str(given))
        return _rendered(conn.conn_id, url.update_query_dict({**query, **url.query}))
    conn_type = (conn.conn_type or "").lower()
    if conn_type == "sqlite":
        if not conn.host:
            raise ValueError(f"connection {conn.conn_id!r}: a sqlite connection needs the file path as host")
        return _rendered(conn.conn_id, URL.create("sqlite", database=conn.host, query=query))
    scheme = _SQLALCHEMY_SCHEMES.get(conn_type)
    if scheme is None:
        raise ValueError(
            f"connection {conn.conn_id!r}: conn type {conn.conn_type!r} is not postgres or sqlite; "
            'put a SQLAlchemy URL in its extra as {"url": "..."}'
        )
    url = URL.create(
        scheme,
        username=conn.login or None,
        password=(conn.password or None) if conn.login else None,
        host=conn.host or None,
        port=int(conn.port) if conn.port else None,
        database=conn.schema or None,
        query=query,
    )
    return _rendered(conn.conn_id, url)


def _query_parameters(conn_id: str, extra: dict[str, Any]) -> dict[str, str]:
    """A connection's extras as URL query parameters: text, numbers and booleans kept as text; the
    keys only Airflow's own hooks read are left out, a nested value is refused by name."""
    asked = [key for key in _TOKEN_EXTRAS if extra.get(key)]
    if asked:
        raise ValueError(
            f"connection {conn_id!r}: extra {asked[0]!r} asks for a cloud token, which driftline does not "
            'fetch; put a SQLAlchemy URL with the credentials in its extra as {"url": "..."}'
        )
    query: dict[str, str] = {}
    for key, value in extra.items():
        if key in _HOOK_ONLY_EXTRAS or value is None:
            continue
        if isinstance(value, bool):
            query[key] = str(value).lower()
        elif isinstance(value, str | int | float):
            query[key] = str(value)
        else:
            raise ValueError(
                f"connection {conn_id!r}: extra {key!r} is a {type(value).__name__}; "
                "only text, numbers and booleans become URL query parameters"
            )
    return query


def _rendered(conn_id: str, url: Any) -> str:
    """`url` as text, refused when a part would read back as something else: SQLAlchemy encodes the
    login, password, query and (from 2.1) the database, but writes the host as it is, so a host holding
    `/` or `?` (or, under SQLAlchemy 2.0, a schema such as `prod?host=evil`) would change the URL."""
    from sqlalchemy.engine import make_url

    text = url.render_as_string(hide_password=False)
    parsed = make_url(text)
    for part in ("drivername", "username", "password", "host", "port", "database"):
        if getattr(parsed, part) != getattr(url, part):
            raise ValueError(
                f"connection {conn_id!r}: its {_FIELD_NAMES.get(part, part)} {getattr(url, part)!r} "
                "cannot be written into a database URL (it holds URL syntax)"
            )
    if dict(parsed.query) != dict(url.query):
        raise ValueError(f"connection {conn_id!r}: its extras cannot be written as URL query parameters")
    return text


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
    http(s) host (a webhook URL kept in the host field); a `driftline` connection's Slack extras."""
    if (conn.conn_type or "").lower() == CONN_TYPE:
        return slack_secret_of(conn)
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
