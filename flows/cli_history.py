"""`driftline history`, `runs` and `trend`: read a monitor's stored history (never write it).

Each takes a monitor name, or the monitor's spec file, whose `store_url` is then the database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from driftline.checks.result import format_number
from driftline.flows.cli_common import JsonOption, app, console, errors, fail, json_mode, print_json
from driftline.flows.render import history_table, results_table

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL (default: the spec's store_url, $DRIFTLINE_DATABASE_URL or ./driftline.db).",
    ),
]
CheckOption = Annotated[str | None, typer.Option("--check", help="Only this check.")]
MonitorArgument = Annotated[
    str,
    typer.Argument(metavar="MONITOR", help="Monitor name, or its spec file (then its store_url is used)."),
]


def _monitor(monitor: str, database: str | None) -> tuple[str, str | None]:
    """(monitor name, database URL): a spec file gives both, a name keeps `--db`."""
    if not monitor.endswith((".yaml", ".yml")):
        return monitor, database
    from driftline.tasks.spec import SpecError, load_spec

    try:
        spec = load_spec(Path(monitor))
    except SpecError as exc:
        fail(str(exc))
    return spec.name, database or spec.store_url


def _open_history(database: str | None) -> Any:
    """The history database, read-only use: a missing or unreachable one exits naming its (masked) URL."""
    from driftline.tasks.history.db import (
        StoreConfigError,
        StoreUnavailable,
        open_store,
        resolve_database_url,
    )

    try:
        return open_store(resolve_database_url(database), create=False)
    except (StoreUnavailable, StoreConfigError) as exc:
        fail(str(exc))


def _read_history(database: str | None, monitor_name: str, **filters: Any) -> Any:
    """The monitor's metric history as a frame."""
    from driftline.tasks.history.query import read_history

    engine = _open_history(database)
    try:
        return read_history(engine, monitor_name, **filters)
    finally:
        engine.dispose()


def _records(frame: Any) -> list[dict[str, Any]]:
    return json.loads(frame.to_json(orient="records", date_format="iso"))


@app.command()
def history(
    monitor: MonitorArgument,
    check: CheckOption = None,
    target: Annotated[
        str | None, typer.Option("--target", help="Only this target (column, subset, ...).")
    ] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="Only this metric.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only batches from this date (YYYY-MM-DD).")
    ] = None,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the metric history of a monitor."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    from datetime import UTC, datetime

    try:
        since_time = datetime.fromisoformat(since).replace(tzinfo=UTC) if since else None
    except ValueError:
        fail(f"--since {since!r}: expected a date such as 2024-05-01")
    records = _records(
        _read_history(database, monitor_name, check=check, target=target, metric=metric, since=since_time)
    )
    if as_json:
        print_json(records)
    elif not records:
        errors.print(f"no history for monitor {monitor_name!r} with these filters")
    else:
        console.print(history_table(records, title=f"{monitor_name}: {len(records)} values"))


@app.command()
def runs(
    monitor: MonitorArgument,
    batch: Annotated[
        str | None,
        typer.Option("--batch", "-b", help="Show this stored batch's results ('latest' for the newest)."),
    ] = None,
    limit: Annotated[int, typer.Option(help="How many runs to list.")] = 20,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a monitor's recent runs, or show the stored results of one batch."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    from rich.table import Table

    from driftline.tasks.history.query import latest_results, list_runs

    engine = _open_history(database)
    try:
        if batch is not None:
            results = latest_results(engine, monitor_name, None if batch == "latest" else batch)
        else:
            recent = list_runs(engine, monitor_name, limit=limit)
    finally:
        engine.dispose()
    if batch is not None:
        if not results:
            fail(f"no stored results for monitor {monitor_name!r}, batch {batch!r}")
        if as_json:
            print_json(results)
        else:
            console.print(results_table(results, title=f"{monitor_name} · batch {batch} (stored)"))
        return
    if as_json:
        print_json(json.loads(json.dumps(recent, default=str)))
        return
    table = Table(title=f"{monitor_name}: {len(recent)} most recent runs", title_justify="left")
    for name in ("batch", "batch time", "status", "worst severity", "rows", "finished"):
        table.add_column(name)
    for r in recent:
        table.add_row(
            str(r["batch_id"]),
            str(r["batch_time"])[:19],
            r["status"],
            r["worst_severity"],
            format_number(r["rows"]),
            str(r["finished_at"] or "")[:19],
        )
    console.print(table)


@app.command()
def trend(
    monitor: MonitorArgument,
    check: CheckOption = None,
    metric: Annotated[str | None, typer.Option("--metric", help="Only this metric (e.g. psi).")] = None,
    window: Annotated[int, typer.Option(help="Runs in the rolling baseline.")] = 10,
    z: Annotated[float, typer.Option(help="Show series whose latest robust z-score reaches this.")] = 3.0,
    min_severity: Annotated[str, typer.Option(help="Severity that counts toward a streak.")] = "medium",
    runs: Annotated[int, typer.Option(help="Consecutive runs that make drift sustained.")] = 3,
    shift_window: Annotated[int, typer.Option(help="Runs searched for a level shift.")] = 30,
    shift_strength: Annotated[
        float, typer.Option(help="Level-shift strength (cost fall in noise variances) to show.")
    ] = 15.0,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sustained drift (a severity held for several runs), values far from their rolling baseline, and
    recent level shifts (the baseline code the alert rules use)."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    from rich.table import Table

    from driftline.tasks.history.trend import latest_zscores, recent_shifts, sustained_drift

    frame = _read_history(database, monitor_name, check=check, metric=metric)
    if frame.empty:
        fail(f"no history for monitor {monitor_name!r}")
    try:
        streaks = sustained_drift(frame, min_severity=min_severity, runs=runs)
        latest = latest_zscores(frame, window=window)
        shifts = recent_shifts(frame, window=shift_window, within=runs, min_strength=shift_strength)
    except ValueError as exc:
        fail(str(exc))
    streaks = streaks[streaks["streak"] > 0].sort_values("streak", ascending=False)
    outliers = latest[latest["robust_z"].abs() >= z].sort_values("robust_z", key=abs, ascending=False)
    if as_json:
        print_json(
            {"sustained": _records(streaks), "outliers": _records(outliers), "shifts": _records(shifts)}
        )
        return
    table = Table(title=f"{monitor_name}: runs at {min_severity} or above (sustained from {runs})")
    for name in ("check", "target", "streak", "since batch", "last severity", "sustained"):
        table.add_column(name)
    for r in streaks.itertuples():
        table.add_row(
            r.check,
            r.target,
            str(r.streak),
            str(r.since_batch),
            r.last_severity,
            "yes" if r.sustained else "",
        )
    console.print(table)
    console.print(
        _series_table(
            f"latest values with |robust z| >= {z:g} against the previous {window} runs",
            outliers,
            ("batch", "batch_id"),
            {"value": "value", "baseline median": "baseline_median", "robust z": "robust_z"},
        )
    )
    console.print(
        _series_table(
            f"level shifts in the last {runs} runs (strength > {shift_strength:g})",
            shifts,
            ("runs since", "runs_since"),
            {"before": "before", "after": "after", "strength": "strength"},
        )
    )


def _series_table(title: str, frame: Any, label: tuple[str, str], numbers: dict[str, str]) -> Any:
    """A rich table, one row per metric series of `frame`: check, target, metric, the `label` column
    (heading, field), then the `numbers` columns (heading: field) formatted as numbers."""
    from rich.table import Table

    table = Table(title=title)
    for name in ("check", "target", "metric", label[0], *numbers):
        table.add_column(name)
    for r in frame.itertuples():
        values = (format_number(float(getattr(r, field))) for field in numbers.values())
        table.add_row(r.check, r.target, r.metric, str(getattr(r, label[1])), *values)
    return table


@app.command()
def spool(
    spec_path: Annotated[Path, typer.Argument(help="Monitor spec (YAML): its folder holds the spool.")],
    as_json: JsonOption = False,
) -> None:
    """Runs waiting in the spool for their history database to come back, and which database each is for."""
    json_mode(as_json)
    from rich.table import Table

    from driftline.tasks.spec import SpecError, load_spec
    from driftline.tasks.spool import pending

    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        fail(str(exc))
    waiting = pending(spec.state_dir / "spool")
    if as_json:
        print_json(waiting)
        return
    if not waiting:
        console.print("nothing waits in the spool")
        return
    table = Table(title=f"{len(waiting)} run(s) waiting for their history database", title_justify="left")
    for name in ("monitor", "batch", "store", "alerts due", "spooled at"):
        table.add_column(name)
    for w in waiting:
        table.add_row(
            w["monitor"], w["batch_id"], w["store"], "yes" if w["alerts_due"] else "", w["spooled_at"]
        )
    console.print(table)
