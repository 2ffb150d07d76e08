"""A local spool for run records that could not reach the history database; replayed on a later run."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from driftline.tasks.tools.files import write_private_file

log = logging.getLogger(__name__)

DEFAULT_SPOOL_DIR = Path(".driftline") / "spool"
SPOOL_STORE = "spooled_for"  # the key of a spooled record that names its target store


# A record waiting for its database, and one the database refused (kept for a person to look at).
SPOOLED, REJECTED = ".json", ".rejected"


def _file_name(monitor: str, batch_id: str, suffix: str = SPOOLED) -> str:
    """A readable, collision-free name: sanitised ids plus a short hash of the raw ones."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{monitor}__{batch_id}")
    digest = hashlib.sha256(f"{monitor}\0{batch_id}".encode()).hexdigest()[:8]
    return f"{safe}__{digest}{suffix}"


def store_key(url: str) -> str:
    """An identity of a history database that can be written to disk: a hash, never the URL itself
    (which may hold a password)."""
    return hashlib.sha256(url.encode()).hexdigest()


def spool_run(record: dict[str, Any], directory: Path, store_url: str, suffix: str = SPOOLED) -> Path:
    """Write one run record (the keyword arguments of `record_run`) atomically, tagged with the store
    it is meant for (its key and masked URL, never the URL itself); returns its path. A failed write
    (a full disk) raises and leaves no partial file. With `suffix=REJECTED` the record is set aside:
    kept for a person to look at, never replayed."""
    from driftline.tasks.history.db import masked_url

    record = {**record, SPOOL_STORE: {"key": store_key(store_url), "url": masked_url(store_url)}}
    path = directory / _file_name(record["monitor"], record["batch_id"], suffix)
    write_private_file(path, json.dumps(record, default=str).encode())
    return path


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def pending(directory: Path) -> list[dict[str, Any]]:
    """What waits in the spool, oldest first: monitor, batch, target store (masked), file, time."""
    from driftline.tasks.history.db import masked_url

    if not directory.exists():
        return []
    waiting = []
    for path in sorted(directory.glob("*.json"), key=_age):
        try:
            record = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        store = record.get(SPOOL_STORE)
        waiting.append(
            {
                "monitor": record.get("monitor"),
                "batch_id": record.get("batch_id"),
                # masked again: older versions stored query passwords
                "store": masked_url(store["url"]) if store else "unknown (spooled by an older version)",
                "alerts_due": bool(record.get("alerts_due")),
                "spooled_at": datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds"),
                "path": str(path),
            }
        )
    return waiting


def replay_spool(
    write: Callable[[dict[str, Any]], None],
    directory: Path,
    store_url: str,
    transient: Callable[[Exception], bool] = lambda exc: True,
) -> int:
    """Pass every record spooled for `store_url` to `write` (oldest first), deleting each once written;
    returns the count. Records meant for another store stay where they are, for a run that reaches it.

    An exception that is `transient` (the database is still down) stops the replay and leaves the
    record for the next attempt. Any other exception means the record itself cannot be written: it is
    set aside as `*.rejected` with one line naming its monitor, batch and the error, so it cannot block
    every later run.
    """
    from driftline.tasks.history.failures import one_line

    if not directory.exists():
        return 0
    key = store_key(store_url)
    replayed = 0
    for path in sorted(directory.glob("*.json"), key=_age):
        try:
            record = json.loads(path.read_text())
        except FileNotFoundError:  # replayed meanwhile by a concurrent run
            continue
        target = record.pop(SPOOL_STORE, None)
        if target is not None and target["key"] != key:
            continue
        try:
            write(record)
        except Exception as exc:
            if transient(exc):
                raise
            rejected = path.with_suffix(REJECTED)
            path.rename(rejected)
            log.error(
                "monitor %s batch %s: the spooled run cannot be written (%s); set aside as %s",
                record.get("monitor"),
                record.get("batch_id"),
                one_line(exc, store_url),
                rejected,
            )
            continue
        path.unlink(missing_ok=True)
        replayed += 1
    return replayed
