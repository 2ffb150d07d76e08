"""The two reads of the history store the site needs beside `tasks/history/query.py`: which monitors
it holds, and their open incidents."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, Table, select

from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import Incident, Run

RUNS: Table = Run.__table__  # type: ignore[assignment]
INCIDENTS: Table = Incident.__table__  # type: ignore[assignment]
INCIDENT_COLUMNS = ("monitor", "check", "target", "severity", "opened_batch", "last_batch", "opened_at")


def monitor_names(engine: Engine) -> list[str]:
    """Every monitor with at least one run in the store, sorted by name."""
    with engine.connect() as conn:
        return list(conn.execute(select(RUNS.c.monitor).distinct().order_by(RUNS.c.monitor)).scalars())


def open_incidents(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """The open incidents of each monitor, oldest first."""
    query = select(*(INCIDENTS.c[name] for name in INCIDENT_COLUMNS)).where(INCIDENTS.c.status == "open")
    with engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(query.order_by(INCIDENTS.c.id)).mappings()]
    by_monitor: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row["opened_at"] = as_utc(row["opened_at"])
        by_monitor.setdefault(row.pop("monitor"), []).append(row)
    return by_monitor
