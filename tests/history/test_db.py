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
from sqlalchemy import Engine, create_engine, inspect, select, text
from sqlalchemy.exc import IntegrityError

from driftline.tasks.history.db import (
    DEFAULT_DATABASE_URL,
    ENV_VAR,
    StoreConfigError,
    StoreUnavailable,
    alembic_config,
    as_utc,
    migrate,
    open_store,
    resolve_database_url,
)
from driftline.tasks.history.models import Base

TABLES = {"runs", "results", "incidents", "alert_outbox", "incident_threads", "alert_mutes"}
HEAD = "0005"


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


def test_unparsable_url_is_a_config_error_without_echoing_it() -> None:
    """A wrong URL is a mistake to correct (exit 2 upstream), not an outage to spool for."""
    with pytest.raises(StoreConfigError, match="cannot be parsed") as caught:
        open_store("not a url :secret")
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nosuchdb://u:secret@host/db", "needs SQLite or PostgreSQL, not nosuchdb"),
        ("postgres://u:secret@host/db", r"write postgresql\+psycopg://"),
        ("postgresql+nosuchdriver://u:secret@host/db", "unsupported driver"),
    ],
)
def test_unknown_scheme_or_driver_is_a_config_error(url: str, message: str) -> None:
    with pytest.raises(StoreConfigError, match=message) as caught:
        open_store(url)
    assert "secret" not in str(caught.value)


# --- opening without creating ---------------------------------------------------------------------


def test_read_only_open_of_a_missing_sqlite_file_creates_nothing(tmp_path) -> None:
    path = tmp_path / "driftline.db"
    with pytest.raises(StoreUnavailable) as caught:
        open_store(f"sqlite:///{path}", create=False)
    assert str(caught.value) == f"no history database at {path} (set --db or {ENV_VAR})"
    assert caught.value.__cause__ is None
    assert list(tmp_path.iterdir()) == []


def test_read_only_open_of_a_relative_sqlite_path_names_the_file(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable, match=r"^no history database at .*driftline\.db \(set --db"):
        open_store(DEFAULT_DATABASE_URL, create=False)
    assert list(tmp_path.iterdir()) == []


def test_read_only_open_of_a_database_without_tables_fails_clearly(database_url: str) -> None:
    other = create_engine(database_url)
    with other.begin() as conn:
        conn.execute(text("CREATE TABLE unrelated (id INTEGER)"))
    other.dispose()
    with pytest.raises(StoreUnavailable, match="has no driftline tables") as caught:
        open_store(database_url, create=False)
    assert "unrelated" not in str(caught.value)
    engine = create_engine(database_url)
    assert not TABLES & set(inspect(engine).get_table_names())  # nothing was migrated
    engine.dispose()


def test_read_only_open_of_a_partial_schema_names_the_missing_tables(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    engine = create_engine(url)
    Base.metadata.tables["runs"].create(engine)
    engine.dispose()
    with pytest.raises(StoreUnavailable, match="lacks the driftline tables alert_outbox, incidents, results"):
        open_store(url, create=False)


def test_read_only_open_of_an_unreachable_postgres_hides_the_password() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_store("postgresql+psycopg://u:secret@127.0.0.1:1/x", create=False)
    assert "u:***@127.0.0.1:1/x" in str(caught.value) and "secret" not in str(caught.value)


def test_read_only_open_of_a_migrated_store_does_not_migrate(database_url: str) -> None:
    open_store(database_url).dispose()
    engine = create_engine(database_url)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0001")
    engine.dispose()
    reader = open_store(database_url, create=False)
    try:
        assert current_revision(reader) == {"0001"}
        with reader.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() == 0
    finally:
        reader.dispose()
    open_store(database_url).dispose()  # the default still migrates to head
    engine = create_engine(database_url)
    assert current_revision(engine) == {HEAD}
    engine.dispose()


def test_read_only_sqlite_store_keeps_the_connection_settings(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    open_store(url).dispose()
    engine = open_store(url, create=False)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 30_000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    engine.dispose()


# --- migrations -----------------------------------------------------------------------------------


def test_migrated_schema_matches_the_models(store: Engine) -> None:
    assert set(inspect(store).get_table_names()) >= TABLES
    assert schema_differences(store) == []
    assert current_revision(store) == {HEAD}


def test_migration_round_trip(store: Engine) -> None:
    with store.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert not TABLES & set(inspect(store).get_table_names())
    assert current_revision(store) == set()
    migrate(store)
    assert schema_differences(store) == []
    assert current_revision(store) == {HEAD}


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


def insert_incident(conn, status: str, target: str = "age", updated: datetime | None = None) -> None:
    now = updated or datetime(2024, 5, 1, tzinfo=UTC)
    conn.execute(
        text(
            'INSERT INTO incidents (monitor, "check", target, status, severity, opened_batch, '
            "last_batch, opened_at, updated_at, details) VALUES ('m', 'drift.numeric', :target, :status, "
            "'high', 'b1', 'b1', :now, :now, '{}')"
        ),
        {"target": target, "status": status, "now": now},
    )


def test_outbox_has_an_index_for_the_unsent_scan(store: Engine) -> None:
    # A fresh engine: SQLite's PRAGMA index_list on a connection pooled before the migration can
    # answer from that connection's cached schema.
    fresh = create_engine(store.url)
    try:
        indexes = {ix["name"]: ix for ix in inspect(fresh).get_indexes("alert_outbox")}
    finally:
        fresh.dispose()
    assert indexes["ix_alert_outbox_unsent"]["column_names"] == ["destination", "sent_at", "created_at"]
    assert not indexes["ix_alert_outbox_unsent"]["unique"]


def test_at_most_one_open_incident_per_monitor_check_and_target(store: Engine) -> None:
    with store.begin() as conn:
        insert_incident(conn, "open")
        insert_incident(conn, "resolved")
        insert_incident(conn, "resolved")
        insert_incident(conn, "open", target="income")
    with pytest.raises(IntegrityError), store.begin() as conn:
        insert_incident(conn, "open")
    with store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM incidents WHERE status = 'open'")).scalar_one() == 2


def test_migrating_closes_duplicate_open_incidents_keeping_the_oldest(store: Engine) -> None:
    with store.begin() as conn:
        command.downgrade(alembic_config(conn), "0001")
    first, later = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)
    with store.begin() as conn:
        insert_incident(conn, "open", updated=first)
        insert_incident(conn, "open", updated=later)
        insert_incident(conn, "open", updated=later)
        insert_incident(conn, "open", target="income", updated=later)
        insert_incident(conn, "resolved", updated=first)
    migrate(store)
    assert current_revision(store) == {HEAD}
    incidents = Base.metadata.tables["incidents"]
    query = select(incidents.c.id, incidents.c.target, incidents.c.status, incidents.c.resolved_at)
    with store.connect() as conn:
        rows = conn.execute(query.order_by(incidents.c.id)).all()
    assert [(r.id, r.target, r.status) for r in rows] == [
        (1, "age", "open"),
        (2, "age", "resolved"),
        (3, "age", "resolved"),
        (4, "income", "open"),
        (5, "age", "resolved"),
    ]
    assert [as_utc(r.resolved_at) for r in rows[1:3]] == [later, later]
    assert rows[0].resolved_at is None and rows[4].resolved_at is None


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
    assert revisions == [{HEAD}] * 3


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


def test_the_head_revision_constant_is_the_newest_migration_script() -> None:
    from alembic.script import ScriptDirectory

    from driftline.tasks.history.db import HEAD_REVISION, MIGRATIONS_DIR

    assert ScriptDirectory(str(MIGRATIONS_DIR)).get_heads() == [HEAD_REVISION]


def test_an_up_to_date_store_is_opened_without_importing_alembic(tmp_path) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'h.db'}"
    open_store(url).dispose()  # created and migrated
    code = (
        "import sys\n"
        "from driftline.tasks.history.db import open_store\n"
        f"open_store({url!r}).dispose()\n"
        "assert 'alembic' not in sys.modules, 'alembic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
