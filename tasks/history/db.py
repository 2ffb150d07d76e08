"""Connecting to the history database: URL resolution, engine setup and migrations to head.

SQLite is the default (a file in the working directory) and PostgreSQL the production database. The
schema is managed by the Alembic migrations in `tasks/migrations`, run programmatically when a store
is opened, so a fresh database needs no separate setup step. Read-only callers open the store with
`create=False`, which neither creates a database nor migrates one.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus

from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.pool import NullPool

if TYPE_CHECKING:
    from alembic.config import Config

from driftline.tasks.tools.files import create_private_file

ENV_VAR = "DRIFTLINE_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///driftline.db"
# Shipped as package data; Alembic reads it as a folder, which an installed wheel always has.
MIGRATIONS_DIR = Path(str(resources.files("driftline.tasks") / "migrations"))
# The newest migration (a test compares it with the scripts) and the table Alembic records it in: an
# up-to-date store is recognised without importing Alembic.
HEAD_REVISION = "0005"
VERSION_TABLE = "alembic_version"

# How long a SQLite writer waits for another writer's lock before failing (seconds).
SQLITE_BUSY_TIMEOUT = 30.0
# How long a PostgreSQL connection attempt may take before the store counts as unreachable (seconds).
POSTGRES_CONNECT_TIMEOUT = 10
# Rows per multi-row INSERT on PostgreSQL: psycopg re-parses every long statement, and pages of about
# a hundred rows wrote 20,000 metric rows about twice as fast as the default thousand.
POSTGRES_INSERT_PAGE_SIZE = 100
# Key of the PostgreSQL advisory lock that serialises concurrent migrations ("drift1" in ASCII).
MIGRATION_LOCK_KEY = 0x647269667431


# Alembic keeps the running migration context in module globals, so one process migrates one at a time.
_ALEMBIC_LOCK = threading.Lock()


class StoreUnavailable(RuntimeError):
    """The history database cannot be reached or opened; the message names the URL (password masked)."""


class StoreConfigError(ValueError):
    """The history database URL itself is wrong (unparsable, unknown scheme or driver): a user mistake
    to correct, not an outage to wait out. The message never shows the password."""


SUPPORTED_BACKENDS = ("sqlite", "postgresql")


def validate_database_url(url: str) -> None:
    """Raise StoreConfigError unless `url` names SQLite or PostgreSQL with a driver that is installed."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreConfigError(
            "the database URL cannot be parsed: expected dialect+driver://user:password@host/name, "
            "e.g. postgresql+psycopg://user@host/db or sqlite:///driftline.db"
        ) from None
    parts = split_url(url)
    if parts is None or (parts.password is not None and unquote(parts.password) != parsed.password):
        raise StoreConfigError(
            f"{masked_url(url)}: the password holds an unencoded '@' or '?': percent-encode it (%40, %3F)"
        )
    backend = parsed.get_backend_name()
    if backend == "postgres":
        raise StoreConfigError(
            f"{masked_url(url)}: write postgresql+psycopg:// (SQLAlchemy has no postgres://)"
        )
    if backend not in SUPPORTED_BACKENDS:
        raise StoreConfigError(
            f"{masked_url(url)}: the history store needs SQLite or PostgreSQL, not {backend}"
        )
    try:
        parsed.get_dialect()
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreConfigError(f"{masked_url(url)}: unsupported driver ({exc})") from None


def resolve_database_url(spec_url: str | None) -> str:
    """The history database URL: the spec's, else `$DRIFTLINE_DATABASE_URL`, else `./driftline.db`."""
    return spec_url or os.environ.get(ENV_VAR) or DEFAULT_DATABASE_URL


# Query parameters whose values are credentials: password=, sslpassword=, token=, api_key=, secret=...
CREDENTIAL_KEY = re.compile(r"pass|pwd|secret|token|key|auth|cred", re.IGNORECASE)
MASK = "***"


@dataclass(frozen=True)
class UrlParts:
    """A database URL cut where its credentials are: `userinfo` runs to the `@` before the host (a
    password may hold unencoded `@`, `/` or `?`), `query` is None without a `?`."""

    scheme: str
    userinfo: str | None
    location: str
    query: str | None

    @property
    def password(self) -> str | None:
        return self.userinfo.partition(":")[2] if self.userinfo and ":" in self.userinfo else None

    def credential_pairs(self) -> list[tuple[str, str]]:
        """The (key, value) query parameters whose key names a credential."""
        pairs = (pair.partition("=") for pair in (self.query or "").split("&"))
        return [(k, v) for k, eq, v in pairs if eq and CREDENTIAL_KEY.search(unquote_plus(k))]


def split_url(url: str) -> UrlParts | None:
    """`url` cut into its parts; None when where the user part ends is ambiguous (then all of it is
    treated as a credential). The `@` before the query is preferred, then the last one."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    if "@" not in rest:
        location, has_query, query = rest.partition("?")
        return UrlParts(scheme, None, location, query if has_query else None)
    for at in (rest.split("?", 1)[0].rfind("@"), rest.rfind("@")):
        userinfo, tail = (rest[:at], rest[at + 1 :]) if at >= 0 else (None, rest)
        location, has_query, query = tail.partition("?")
        if all("=" in pair for pair in query.split("&") if pair):
            return UrlParts(scheme, userinfo, location, query if has_query else None)
    return None


def masked_url(url: str) -> str:
    """`url` with every credential replaced by `***` (the password, even one holding an unencoded `@`,
    and the values of password-, token- or key-like query parameters); safe to log and to store.
    Unparsable URLs are not echoed."""
    try:
        make_url(url)
    except ArgumentError:
        return "<unparsable database URL>"
    parts = split_url(url)
    if parts is None:
        return f"{url.partition('://')[0]}://{MASK}"
    text = f"{parts.scheme}://"
    if parts.userinfo is not None:
        user = parts.userinfo.partition(":")[0]
        text += f"{user}:{MASK}@" if parts.password is not None else f"{parts.userinfo}@"
    text += parts.location
    if parts.query is not None:
        secret = {k for k, _ in parts.credential_pairs()}
        pairs = (pair.partition("=") for pair in parts.query.split("&"))
        text += "?" + "&".join(f"{k}={MASK}" if k in secret else k + eq + v for k, eq, v in pairs)
    return text


def url_secrets(url: str) -> list[str]:
    """Every credential of `url` as written and as decoded, longest first: what must never be shown."""
    parts = split_url(url)
    if parts is None:
        raw = [url.partition("://")[2]]
    else:
        raw = [parts.password or "", *(v for _, v in parts.credential_pairs())]
    found = {form for value in raw if value for form in (value, unquote(value), unquote_plus(value))}
    return sorted(found, key=len, reverse=True)


def scrubbed(text: str, url: str) -> str:
    """`text` (e.g. a driver's error message) with every credential of `url` replaced by `***`."""
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text


def open_store(url: str, *, create: bool = True) -> Engine:
    """Connect to the history database and return the engine; by default, create and migrate it to head.

    With `create=False` (for commands that only read), nothing is created or migrated: a SQLite file
    that does not exist raises `StoreUnavailable` naming the path, and a database without the history
    tables raises `StoreUnavailable` saying so. Raises `StoreUnavailable` (naming the URL with its
    password masked) when the database cannot be reached, opened or migrated because of a connection
    problem.
    """
    if not create:
        missing = _missing_sqlite_file(url)
        if missing is not None:
            raise StoreUnavailable(f"no history database at {missing} (set --db or {ENV_VAR})")
    engine = _create_engine(url)
    try:
        _ready(engine, url, create)
    except StoreUnavailable:
        engine.dispose()
        raise
    return engine


def _ready(engine: Engine, url: str, create: bool) -> None:
    """Migrate the store to head (`create`) or require its tables; a connection problem raises
    `StoreUnavailable`."""
    try:
        if create:
            migrate(engine)
        else:
            _require_tables(engine, url)
    except DBAPIError as exc:
        raise StoreUnavailable(_unavailable_message(url, exc)) from None


@dataclass
class _Scope:
    """The engine a `store_scope` lends: opened on first use, migrated once, shared by threads."""

    users: int = 0
    engine: Engine | None = None
    migrated: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lend(self, url: str, create: bool) -> Engine:
        with self.lock:
            if self.engine is None:
                self.engine, self.migrated = open_store(url, create=create), create
            elif create and not self.migrated:
                _ready(self.engine, url, create=True)
                self.migrated = True
            return self.engine


_scopes: dict[str, _Scope] = {}
_scopes_lock = threading.Lock()


@contextmanager
def store_scope(url: str) -> Iterator[None]:
    """Within the block, `connected_store(url)` lends one engine (opened and migrated on first use,
    disposed when the last enclosing block ends) instead of opening one per call: one engine a run.

    A store that cannot be opened raises at the call that needs it, as without the scope, and the
    next call tries again.
    """
    with _scopes_lock:
        scope = _scopes.setdefault(url, _Scope())
        scope.users += 1
    try:
        yield
    finally:
        with _scopes_lock:
            scope.users -= 1
            if scope.users == 0:
                del _scopes[url]
                if scope.engine is not None:
                    scope.engine.dispose()


@contextmanager
def connected_store(url: str, *, create: bool = True) -> Iterator[Engine]:
    """`open_store` for one piece of work: the engine is disposed when the block ends, unless a
    `store_scope` of `url` lends its engine."""
    scope = _scopes.get(url)
    if scope is not None:
        yield scope.lend(url, create)
        return
    engine = open_store(url, create=create)
    try:
        yield engine
    finally:
        engine.dispose()


def _missing_sqlite_file(url: str) -> Path | None:
    """The file a SQLite `url` names when that file does not exist; None for other URLs and in-memory."""
    path = _sqlite_file(url)
    return None if path is None or path.exists() else path


def _sqlite_file(url: str) -> Path | None:
    """The file a SQLite `url` names; None for other URLs and in-memory databases."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # `_create_engine` reports the unparsable URL
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or database in (None, "", ":memory:"):
        return None
    if str(parsed.query.get("uri", "")).lower() in ("true", "1") and database.startswith("file:"):
        if parsed.query.get("mode") == "memory":
            return None
        database = database.removeprefix("file:").split("?", 1)[0]
        if database in ("", ":memory:"):
            return None
    return Path(database)


# Tables a read-only command needs; tables added by later migrations (incident threads, mutes) appear
# with the next run that migrates the store.
READ_TABLES = frozenset({"runs", "results", "incidents", "alert_outbox"})


def _require_tables(engine: Engine, url: str) -> None:
    """Raise `StoreUnavailable` unless the database holds the history tables read-only commands read."""
    with engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
    missing = sorted(READ_TABLES - present)
    if not missing:
        return
    where = f"history database {masked_url(url)}"
    if len(missing) == len(READ_TABLES):
        problem = f"{where} has no driftline tables"
    else:
        problem = f"{where} lacks the driftline tables {', '.join(missing)}"
    raise StoreUnavailable(f"{problem} (record a monitor run into it first, or set --db or {ENV_VAR})")


def stored_revisions(conn: Connection) -> set[str]:
    """The schema revisions Alembic recorded in the store (none for a new one)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return set()
    return {row[0] for row in conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))}


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to `revision`, in one transaction, serialised against concurrent migrators.

    The current revision is read first without locking and without Alembic, so opening an up-to-date
    store stays cheap.
    """
    if revision == "head":
        with engine.connect() as conn:
            if stored_revisions(conn) == {HEAD_REVISION}:
                return
    from alembic import command

    migrator = _migration_engine(engine)
    try:
        with _ALEMBIC_LOCK, migrator.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK_KEY)))
            command.upgrade(alembic_config(conn), revision)
    finally:
        if migrator is not engine:
            migrator.dispose()


def alembic_config(connection: Connection) -> Config:
    """An Alembic configuration of the history migrations that runs on `connection` (no alembic.ini)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _create_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and enforced foreign keys."""
    validate_database_url(url)
    parsed = make_url(url)
    try:
        if parsed.get_backend_name() == "sqlite":
            _create_private_sqlite(url)
            engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT})
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        if parsed.get_backend_name() == "postgresql":
            return create_engine(
                parsed,
                pool_pre_ping=True,
                connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT},
                insertmanyvalues_page_size=POSTGRES_INSERT_PAGE_SIZE,
            )
        return create_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreUnavailable(f"history database {masked_url(url)}: unsupported driver ({exc})") from None


def _create_private_sqlite(url: str) -> None:
    """Create the SQLite file owner-only before SQLite creates it under the umask (its journal and WAL
    files take the database file's mode); a folder that does not exist is left to SQLite to report."""
    path = _sqlite_file(url)
    if path is not None:
        with contextlib.suppress(OSError):
            create_private_file(path)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Per-connection SQLite settings: concurrent readers with one writer, waiting writers, FK cascades."""
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT * 1000)}")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _enable_wal(cursor: Any, attempts: int = 50) -> None:
    """Switch the file to WAL. The switch needs a moment of exclusive access and SQLite reports "locked"
    at once (no busy wait) while another connection writes, e.g. a concurrent first migration; WAL
    persists in the file, so retry briefly and go on if another connection keeps it busy."""
    for _ in range(attempts):
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            time.sleep(0.1)


def _migration_engine(engine: Engine) -> Engine:
    """The engine to migrate with: for SQLite, a single-use one whose transactions are `BEGIN IMMEDIATE`.

    The sqlite3 driver does not open a transaction before DDL, so without this two processes opening a
    fresh file could both try to create the tables; the immediate write lock makes the second wait and
    then find the schema at head.
    """
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return engine  # PostgreSQL locks with an advisory lock; a private in-memory database needs none
    migrator = create_engine(engine.url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT}, poolclass=NullPool)

    @event.listens_for(migrator, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        _sqlite_pragmas(dbapi_connection, record)
        dbapi_connection.isolation_level = None  # the driver stops issuing its own BEGIN

    @event.listens_for(migrator, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return migrator


def _unavailable_message(url: str, exc: DBAPIError) -> str:
    """A one-line reason naming the masked URL; no credential appears, even in the driver's text."""
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
    return f"history database {masked_url(url)} is unavailable: {scrubbed(reason, url)}"


def as_utc(value: datetime) -> datetime:
    """`value` as a timezone-aware UTC datetime; naive values (as SQLite returns them) are taken as UTC."""
    if hasattr(value, "to_pydatetime"):
        value = value.to_pydatetime()
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
