"""What a failed write to the history database means: an outage to wait out, or a refusal of what was
written. Only an outage may hold a run back in the spool; a refused run is set aside, so it never
blocks the runs after it."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError

from driftline.tasks.history.db import StoreUnavailable, scrubbed

FailureKind = Literal["transient", "rejected"]

# A unique key written at the same moment by another writer: the retry finds the row and updates it.
POSTGRES_UNIQUE_VIOLATION = "23505"
SQLITE_UNIQUE_VIOLATIONS = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})


def failure_kind(exc: BaseException) -> FailureKind:
    """`transient` when the database could not be reached or used (a lost connection, a lock, a full
    disk, another writer on the same key): the same write may succeed later. `rejected` when the
    database refused the values (too long, not encodable, out of range, against a constraint) or the
    record is malformed: the same write can never succeed."""
    if isinstance(exc, StoreUnavailable | OSError):
        return "transient"
    if isinstance(exc, IntegrityError):
        return "transient" if _same_key_race(exc) else "rejected"
    if isinstance(exc, DataError):
        return "rejected"
    if isinstance(exc, DBAPIError):
        return "transient"
    return "rejected"


def is_outage(exc: BaseException) -> bool:
    """True when `exc` is an outage of the history database (`failure_kind` is `transient`)."""
    return failure_kind(exc) == "transient"


def _same_key_race(exc: IntegrityError) -> bool:
    """True for a unique-key violation: runs write their keys as upserts, so only another writer of
    the same key at the same moment (two runs opening one incident) causes it."""
    orig = exc.orig
    return (
        getattr(orig, "sqlstate", None) == POSTGRES_UNIQUE_VIOLATION
        or getattr(orig, "sqlite_errorname", None) in SQLITE_UNIQUE_VIOLATIONS
    )


def one_line(exc: BaseException, url: str) -> str:
    """`Type: first line of the message`, with the credentials of the database `url` masked."""
    lines = str(exc).strip().splitlines()
    return scrubbed(f"{type(exc).__name__}: {lines[0] if lines else ''}", url)
