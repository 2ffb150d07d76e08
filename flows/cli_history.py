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
from driftline.flows.render import history_table, plain, print_diagnoses, results_table

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
    """(monitor name, database URL): a spec file gives both (the store its runs write to, from any
    folder), a name keeps `--db`."""
    if not monitor.endswith((".yaml", ".yml")):
        return monitor, database
    from driftline.tasks.config.spec import SpecError, load_spec

    try:
        spec = load_spec(Path(monitor))
        return spec.name, database or spec.database_url()
    except SpecError as exc:
        fail(str(exc))


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
    last: Annotated[
        int, typer.Option("--last", help="Only the newest N runs (0: the whole history).", min=0)
    ] = 50,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the metric history of a monitor: its newest runs, `--last 0` for all of it."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    from datetime import UTC, datetime

    try:
        since_time = datetime.fromisoformat(since).replace(tzinfo=UTC) if since else None
    except ValueError:
        fail(f"--since {since!r}: expected a date such as 2024-05-01")
    records = _records(
        _read_history(
            database,
            monitor_name,
            check=check,
            target=target,
            metric=metric,
            since=since_time,
            last_runs=last or None,
        )
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
            print_diagnoses(console, results)
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
    metric: Annotated[
        str | None, typer.Option("--metric", help="Only results whose key metric is this (e.g. psi).")
    ] = None,
    window: Annotated[int, typer.Option(help="Most earlier runs in the rolling baseline.")] = 10,
    z: Annotated[
        float,
        typer.Option(help="Show results whose key metric is this many spreads worse than its baseline."),
    ] = 3.0,
    min_severity: Annotated[str, typer.Option(help="Severity that counts toward a streak.")] = "medium",
    runs: Annotated[int, typer.Option(help="Consecutive runs that make drift sustained.")] = 3,
    shift_window: Annotated[int, typer.Option(help="Runs searched for a level shift.")] = 30,
    shift_strength: Annotated[
        float, typer.Option(help="Level-shift strength (cost fall in noise variances) to show.")
    ] = 15.0,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sustained drift (a severity held for several runs), and results whose key metric moved towards
    worse: far from its rolling baseline or onto a new level (the baseline code the alert rules use)."""
    json_mode(as_json)
    monitor_name, database = _monitor(monitor, database)
    from driftline.tasks.history.trend import moved_results, sustained_drift

    frame, keys = _trend_inputs(database, monitor_name, check, max(window, shift_window, runs) + 1)
    if frame.empty:
        fail(f"no history for monitor {monitor_name!r}")
    if metric is not None:
        frame_for_streaks = frame[frame["metric"] == metric]
        keys = {result: key for result, key in keys.items() if key.metric == metric}
    else:
        frame_for_streaks = frame
    try:
        streaks = sustained_drift(frame_for_streaks, min_severity=min_severity, runs=runs)
        moved = moved_results(
            frame,
            keys,
            z=z,
            window=window,
            shift_window=shift_window,
            within=runs,
            min_strength=shift_strength,
        )
    except ValueError as exc:
        fail(str(exc))
    streaks = streaks[streaks["streak"] > 0].sort_values("streak", ascending=False)
    if as_json:
        print_json({"sustained": _records(streaks), "moved": _records(moved)})
        return
    console.print(
        _streak_table(
            f"{plain(monitor_name)}: runs at {min_severity} or above (sustained from {runs}; counted over "
            f"the newest {frame['batch_id'].nunique()} run(s))",
            streaks,
        )
    )
    earlier = min(window, frame["batch_id"].nunique() - 1)
    console.print(
        _moved_table(
            f"results whose key metric moved towards worse: ≥ {z:g} spreads from the median of up to "
            f"{earlier} earlier run(s), or a new level in the last {runs} runs "
            f"(strength > {shift_strength:g})",
            moved,
        )
    )


def _trend_inputs(
    database: str | None, monitor_name: str, check: str | None, last_runs: int
) -> tuple[Any, dict[Any, Any]]:
    """The monitor's newest `last_runs` runs of metric history and the key metric of every result, from
    its newest stored run: trend never reads further back than its windows look."""
    from driftline.tasks.history.query import latest_results, read_history
    from driftline.tasks.history.trend import declared_metrics, key_metrics

    engine = _open_history(database)
    try:
        frame = read_history(engine, monitor_name, check=check, last_runs=last_runs)
        newest = (
            frame.sort_values(["batch_time", "batch_id"], kind="stable")
            .groupby(["check", "target"], sort=False)["batch_id"]
            .last()
        )
        stored = [
            result
            for batch in sorted(set(newest))
            for result in latest_results(engine, monitor_name, batch)
            if newest.get((result["check"], result["target"])) == batch
        ]
    finally:
        engine.dispose()
    return frame, key_metrics(stored, declared_metrics(frame["check"].unique()))


def _streak_table(title: str, streaks: Any) -> Any:
    """One row per result with a streak at the chosen severity."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in ("check", "target", "streak", "since batch", "last severity", "sustained"):
        table.add_column(name)
    for r in streaks.itertuples():
        table.add_row(
            plain(r.check),
            plain(r.target),
            str(r.streak),
            plain(r.since_batch),
            r.last_severity,
            "yes" if r.sustained else "",
        )
    return table


def _moved_table(title: str, moved: Any) -> Any:
    """One row per result that moved: its key metric, newest batch and value, z, and what changed."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in ("check", "target", "key metric", "batch", "value", "robust z", "what changed"):
        table.add_column(name, overflow="fold")
    for r in moved.itertuples():
        table.add_row(
            plain(r.check),
            plain(r.target),
            plain(r.metric),
            plain(r.batch_id),
            format_number(float(r.value)),
            format_number(float(r.robust_z)),
            r.change,
        )
    return table


@app.command()
def spool(
    spec_path: Annotated[Path, typer.Argument(help="Monitor spec (YAML): its folder holds the spool.")],
    as_json: JsonOption = False,
) -> None:
    """Runs waiting in the spool for their history database to come back, and which database each is for."""
    json_mode(as_json)
    from rich.table import Table

    from driftline.tasks.config.spec import SpecError, load_spec
    from driftline.tasks.run.spool import pending

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
