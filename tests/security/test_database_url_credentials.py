"""Item 2: every credential of a database URL is masked wherever the URL is shown or stored: the
password (even one holding an unencoded `@`), and password-, token- or key-like query parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.history.db import StoreConfigError, masked_url, scrubbed, validate_database_url
from driftline.tasks.run.spool import SPOOL_STORE, pending, spool_run

runner = CliRunner()
SECRET = "S3cretQ"
MASKED = {
    f"postgresql+psycopg://postgres@db.internal/history?password={SECRET}&sslmode=require": (
        "postgresql+psycopg://postgres@db.internal/history?password=***&sslmode=require"
    ),
    f"postgresql+psycopg://postgres:My@{SECRET}@db.internal:5432/history": (
        "postgresql+psycopg://postgres:***@db.internal:5432/history"
    ),
    f"postgresql+psycopg://u:a/{SECRET}@db.internal/history?user=me@corp": (
        "postgresql+psycopg://u:***@db.internal/history?user=me@corp"
    ),
    f"postgresql+psycopg://db.internal/h?sslpassword={SECRET}&auth_token={SECRET}&api_key={SECRET}": (
        "postgresql+psycopg://db.internal/h?sslpassword=***&auth_token=***&api_key=***"
    ),
    f"postgresql+psycopg://u:p@ss?w{SECRET}@db.internal/history": "postgresql+psycopg://u:***@db.internal/history",
    "sqlite:///history.db?timeout=5": "sqlite:///history.db?timeout=5",
}


@pytest.mark.parametrize("url", MASKED)
def test_every_credential_is_masked(url: str) -> None:
    assert masked_url(url) == MASKED[url]
    assert SECRET not in masked_url(url)


def test_a_driver_message_loses_every_credential() -> None:
    url = f"postgresql+psycopg://u:pa%40{SECRET}@db/h?token=T0ken{SECRET}"
    message = f'password authentication failed for "u" (pa@{SECRET}), token T0ken{SECRET}'
    assert SECRET not in scrubbed(message, url)


def test_a_password_with_an_unencoded_at_is_a_usage_error_that_does_not_echo_it() -> None:
    with pytest.raises(StoreConfigError, match="%40") as raised:
        validate_database_url(f"postgresql+psycopg://postgres:My@{SECRET}@127.0.0.1/db")
    assert SECRET not in str(raised.value)
    result = runner.invoke(
        app, ["runs", "m", "--db", f"postgresql+psycopg://postgres:My@{SECRET}@127.0.0.1/db"]
    )
    assert result.exit_code == EXIT_USAGE and SECRET not in result.output + result.stderr


def test_an_unreachable_store_with_a_query_password_is_named_masked() -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:1/db?password={SECRET}&connect_timeout=2"
    result = runner.invoke(app, ["runs", "m", "--db", url, "--json"])
    assert result.exit_code == EXIT_USAGE
    assert "password=***" in result.stderr
    assert SECRET not in result.stdout + result.stderr


def test_the_spool_keeps_only_the_hash_and_the_masked_url(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://postgres@db.internal/history?password={SECRET}"
    path = spool_run({"monitor": "m", "batch_id": "b1"}, tmp_path, url)
    assert SECRET not in path.read_text()
    [waiting] = pending(tmp_path)
    assert waiting["store"] == "postgresql+psycopg://postgres@db.internal/history?password=***"
    # a record spooled by an older version, with the query password in its stored URL, is listed masked
    record = json.loads(path.read_text())
    record[SPOOL_STORE]["url"] = url
    path.write_text(json.dumps(record))
    assert SECRET not in json.dumps(pending(tmp_path))


def test_a_failing_sql_source_is_named_masked() -> None:
    from driftline.tasks.sources import SourceError, sql_connection

    url = f"postgresql+psycopg://postgres@127.0.0.1:1/db?password={SECRET}&connect_timeout=2"
    with pytest.raises(SourceError) as raised, sql_connection(url):
        pass
    assert "password=***" in str(raised.value) and SECRET not in str(raised.value)
