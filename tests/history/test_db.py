"""Opening the history store: URL resolution, unreachable databases, migrations, SQLite settings."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from tasks.history.db import (
    DEFAULT_DATABASE_URL,
    ENV_VAR,
    StoreUnavailable,
    alembic_config,
    as_utc,
    migrate,
    open_store,
    resolve_database_url,
)
from tasks.history.models import Base

TABLES = {"runs", "results", "incidents", "alert_outbox"}


def schema_differences(engine: Engine) -> list:
    """Alembic's comparison of the live schema with models.py (empty when they agree)."""
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)


def current_revision(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(MigrationContext.configure(conn).get_current_heads())


# --- URL resolution -------------------------------------------------------------------------------


def test_spec_url_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_database_url("sqlite:///from-spec.db") == "sqlite:///from-spec.db"


def test_environment_wins_over_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "postgresql+psycopg://u@db/history")
    assert resolve_database_url(None) == "postgresql+psycopg://u@db/history"


def test_default_is_a_sqlite_file_in_the_working_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_database_url(None) == DEFAULT_DATABASE_URL == "sqlite:///driftline.db"


# --- unreachable databases ------------------------------------------------------------------------


def test_unreachable_postgres_names_the_host_and_hides_the_password() -> None:
    started = time.perf_counter()
    with pytest.raises(StoreUnavailable) as caught:
        open_store("postgresql+psycopg://u:secret@127.0.0.1:1/x")
    message = str(caught.value)
    assert "127.0.0.1" in message
    assert "secret" not in message
    assert "u:***@127.0.0.1:1/x" in message
    assert caught.value.__cause__ is None  # the driver error (which may quote the URL) is not chained
    assert time.perf_counter() - started < 15


def test_sqlite_file_in_a_missing_directory_is_unavailable(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'history.db'}"
    with pytest.raises(StoreUnavailable, match=r"history\.db"):
        open_store(url)


def test_unparsable_url_is_unavailable_without_echoing_it() -> None:
    with pytest.raises(StoreUnavailable, match="cannot be parsed") as caught:
        open_store("not a url :secret")
    assert "secret" not in str(caught.value)


def test_unknown_driver_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable, match="unsupported driver"):
        open_store("nosuchdb://u:secret@host/db")


# --- migrations -----------------------------------------------------------------------------------


def test_migrated_schema_matches_the_models(store: Engine) -> None:
    assert set(inspect(store).get_table_names()) >= TABLES
    assert schema_differences(store) == []
    assert current_revision(store) == {"0001"}


def test_migration_round_trip(store: Engine) -> None:
    with store.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert not TABLES & set(inspect(store).get_table_names())
    assert current_revision(store) == set()
    migrate(store)
    assert schema_differences(store) == []
    assert current_revision(store) == {"0001"}


def test_opening_an_up_to_date_store_again_keeps_its_data(database_url: str) -> None:
    first = open_store(database_url)
    with first.begin() as conn:
        conn.execute(
            text(
                'INSERT INTO incidents (monitor, "check", target, status, severity, opened_batch, '
                "last_batch, opened_at, updated_at, details) VALUES ('m', 'c', 't', 'open', 'high', "
                "'b', 'b', :now, :now, '{}')"
            ),
            {"now": datetime.now(UTC)},
        )
    first.dispose()
    second = open_store(database_url)
    with second.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM incidents")).scalar_one() == 1
    second.dispose()


def open_and_close(url: str) -> set[str]:
    """Open the store (migrating it if needed) and report its revision."""
    engine = open_store(url)
    try:
        return current_revision(engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_concurrent_first_opens_migrate_once(database_url: str, workers: str) -> None:
    if workers == "threads":
        pool = ThreadPoolExecutor(max_workers=3)
    else:
        pool = ProcessPoolExecutor(max_workers=3, mp_context=multiprocessing.get_context("spawn"))
    with pool:
        revisions = list(pool.map(open_and_close, [database_url] * 3))
    assert revisions == [{"0001"}] * 3


# --- SQLite settings ------------------------------------------------------------------------------


def test_sqlite_uses_wal_busy_timeout_and_foreign_keys(tmp_path) -> None:
    engine = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 30_000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    engine.dispose()


# --- time normalisation ---------------------------------------------------------------------------


def test_as_utc_converts_aware_and_labels_naive_times() -> None:
    plus_two = datetime(2024, 5, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    assert as_utc(plus_two) == datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert as_utc(plus_two).utcoffset() == timedelta(0)
    assert as_utc(datetime(2024, 5, 1, 12, 30)) == datetime(2024, 5, 1, 12, 30, tzinfo=UTC)


def test_in_memory_sqlite_is_migrated_on_its_own_connection() -> None:
    engine = open_store("sqlite://")
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert schema_differences(engine) == []
    engine.dispose()
