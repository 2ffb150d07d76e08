"""`driftline mute`: silence a monitor's incidents on one check (and target) until a date, list and
lift mutes. A muted incident still opens, changes and resolves in the history; it only sends nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from driftline.flows.cli_common import JsonOption, app, console, fail, json_mode, print_json
from driftline.flows.cli_history import DatabaseOption, MonitorArgument, _monitor
from driftline.flows.render import plain


def parse_until(value: str) -> datetime:
    """A date (midnight UTC that day) or an ISO date-time (naive means UTC)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"--until {value!r}: expected a date such as 2026-12-01 or a time such as 2026-12-01T09:00")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _has_mutes(session: Any) -> bool:
    """True when the history database has the `alert_mutes` table (migration 0005 or later)."""
    from sqlalchemy import inspect

    return bool(inspect(session.connection()).has_table("alert_mutes"))


def _open_incidents(session: Any, monitor: str, check: str, target: str) -> int:
    """How many open incidents a mute of (check, target) covers now."""
    from sqlalchemy import func, select

    from driftline.tasks.history.models import Incident

    query = select(func.count()).where(
        Incident.monitor == monitor, Incident.check == check, Incident.status == "open"
    )
    if target != "*":
        query = query.where(Incident.target == target)
    return int(session.scalar(query) or 0)


@app.command()
def mute(
    monitor: MonitorArgument,
    check: Annotated[
        str | None, typer.Option("--check", help="Check of the incidents (a rule's is rule:<name>).")
    ] = None,
    target: Annotated[str, typer.Option("--target", help="Target of the incidents; * for all.")] = "*",
    until: Annotated[
        str | None, typer.Option("--until", help="End of the mute: a date (UTC midnight) or ISO time.")
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why it is muted (shown by --list).")] = None,
    show: Annotated[bool, typer.Option("--list", help="List the monitor's mutes.")] = False,
    lift: Annotated[bool, typer.Option("--unmute", help="Lift the mute of --check/--target.")] = False,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Silence a monitor's incidents on a check (and target) until a date; --list, --unmute."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    if show and lift:
        fail("give either --list or --unmute")
    if not show and check is None:
        fail("--check is required (the check whose incidents to mute, or unmute)")
    if not show and not lift and until is None:
        fail("--until is required, e.g. --until 2026-12-01")
    from sqlalchemy.orm import Session

    from driftline.tasks.alerts.mutes import list_mutes
    from driftline.tasks.alerts.mutes import mute as add_mute
    from driftline.tasks.alerts.mutes import unmute as lift_mute
    from driftline.tasks.history.db import (
        StoreConfigError,
        StoreUnavailable,
        open_store,
        resolve_database_url,
    )

    try:
        engine = open_store(resolve_database_url(database), create=not show)
    except (StoreUnavailable, StoreConfigError) as exc:
        fail(str(exc))
    try:
        with Session(engine) as session, session.begin():
            if show:
                # a store not yet migrated by a run of this version has no mutes table (and no mutes)
                mutes = list_mutes(session, monitor_name) if _has_mutes(session) else []
            elif lift:
                assert check is not None
                removed = lift_mute(session, monitor=monitor_name, check=check, target=target)
            else:
                assert check is not None and until is not None
                end = parse_until(until)
                try:
                    add_mute(session, monitor=monitor_name, check=check, target=target, until=end, note=note)
                except ValueError as exc:
                    fail(str(exc))
                covered = _open_incidents(session, monitor_name, check, target)
    finally:
        engine.dispose()
    subject = f"{check} · {'every target' if target == '*' else target}"
    if show:
        _print_mutes(monitor_name, mutes, as_json)
    elif lift:
        if not removed:
            fail(f"{monitor_name}: {subject} was not muted")
        if as_json:
            print_json({"monitor": monitor_name, "check": check, "target": target, "removed": removed})
        else:
            console.print(plain(f"{monitor_name}: {subject} is no longer muted"))
    elif as_json:
        print_json(
            {
                "monitor": monitor_name,
                "check": check,
                "target": target,
                "until": end.isoformat(),
                "open": covered,
            }
        )
    else:
        console.print(
            plain(f"{monitor_name}: {subject} muted until {end.isoformat()} ({covered} open incident(s) now)")
        )


def _print_mutes(monitor: str, mutes: list[dict[str, Any]], as_json: bool) -> None:
    """The mutes as JSON or a table."""
    if as_json:
        print_json(mutes)
        return
    if not mutes:
        console.print(f"{monitor}: nothing is muted")
        return
    from rich.table import Table

    table = Table(title=f"{monitor}: {len(mutes)} mute(s)", title_justify="left")
    for name in ("check", "target", "until", "active", "note"):
        table.add_column(name)
    for m in mutes:
        table.add_row(
            plain(m["check"]),
            plain(m["target"]),
            m["until"][:19],
            "yes" if m["active"] else "ended",
            plain(m["note"] or ""),
        )
    console.print(table)
