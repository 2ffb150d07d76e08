"""The `driftline` command line: run, serve and backfill monitors, list and evaluate checks, read history.

`checks` and `evaluate` never import Prefect, so they start fast and run anywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from driftline.checks.result import format_number
from driftline.flows.render import history_table, make_console, print_summary, results_table

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Continuous monitoring of deployed ML models."
)
console = make_console()
errors = make_console(stderr=True)

EXIT_FAILED = 1  # a check reached the spec's `fail_on` severity
EXIT_USAGE = 2  # bad spec, bad arguments, unreadable data
EXIT_INTERNAL = 3  # an unexpected failure (a bug or an environment problem), never a verdict on the model


def _fail(message: str) -> None:
    errors.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(EXIT_USAGE)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")


def _parse_params(pairs: list[str]) -> dict[str, Any]:
    """`key=value` pairs; values are read as YAML scalars or lists (`bins=20`, `features=[a, b]`)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            _fail(f"--param {pair!r}: expected key=value")
        try:
            params[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            params[key.strip()] = value
    return params


@app.command("checks")
def list_checks(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the check catalog: name, family, what it needs, default thresholds."""
    from rich.table import Table

    from driftline.checks import registry

    entries = [registry.describe(n) for n in registry.names()]
    if as_json:
        _print_json(entries)
        return
    table = Table(title=f"{len(entries)} checks", title_justify="left")
    for col in ("name", "family", "needs", "thresholds", "summary"):
        table.add_column(col, overflow="fold")
    for e in entries:
        thresholds = ", ".join(f"{k} {'/'.join(map(str, v))}" for k, v in e["thresholds"].items())
        table.add_row(e["name"], e["family"], ", ".join(e["needs"]), thresholds, e["summary"])
    console.print(table)


@app.command()
def evaluate(
    check: Annotated[str, typer.Option("--check", "-c", help="Check name, e.g. drift.numeric.")],
    reference: Annotated[Path, typer.Option("--reference", "-r", help="Reference CSV or Parquet file.")],
    current: Annotated[Path, typer.Option("--current", help="Current batch CSV or Parquet file.")],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", help="key=value: a check parameter or a column role (label=COL, numeric=[a,b])."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Run one check on two files, without Prefect, and print its results."""
    from driftline.checks import registry
    from driftline.checks.columns import LIST_ROLES, SINGLE_ROLES, infer_columns
    from driftline.checks.errors import CheckInputError
    from driftline.checks.runner import run_check
    from driftline.tasks.sources import SourceError, read_table

    params = _parse_params(param or [])
    roles = {k: params.pop(k) for k in list(params) if k in (*SINGLE_ROLES, *LIST_ROLES, "task")}
    try:
        check_obj = registry.create(check, params)
        ref_frame, cur_frame = read_table(reference), read_table(current)
        columns = infer_columns(ref_frame, roles)
    except (CheckInputError, SourceError) as exc:
        _fail(str(exc))
    results = [r.to_dict() for r in run_check(check_obj, cur_frame, columns, reference=ref_frame)]
    if as_json:
        _print_json(results)
    else:
        console.print(results_table(results, title=f"{check} on {current.name} against {reference.name}"))


def _load_spec_or_exit(spec_path: Path) -> Any:
    from driftline.flows.spec import SpecError, load_spec

    try:
        return load_spec(spec_path)
    except SpecError as exc:
        _fail(str(exc))


QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Show only results with a severity.")]


def _run_monitor_flow(spec_path: Path, batch: str | None, **flags: bool) -> dict[str, Any]:
    """One monitor flow run; bad input exits 2, an unexpected failure exits 3 (never 1, which means drift)."""
    from driftline.flows.monitor import monitor
    from driftline.flows.spec import SpecError
    from driftline.tasks.model import ModelError
    from driftline.tasks.sources import SourceError

    try:
        return monitor(str(spec_path.resolve()), batch, **flags)
    except (SourceError, SpecError, ModelError) as exc:
        _fail(str(exc))
    except Exception as exc:
        errors.print(f"[bold red]internal error:[/] {type(exc).__name__}: {exc}", highlight=False)
        raise typer.Exit(EXIT_INTERNAL) from exc


def _gate(summaries: list[dict[str, Any]]) -> None:
    """Exit 1 when a batch failed or was empty, so the command can gate a pipeline."""
    bad = [s["batch_id"] for s in summaries if s["status"] in ("failed", "empty")]
    if bad:
        errors.print(f"failed or empty batch(es): {', '.join(bad)}")
        raise typer.Exit(EXIT_FAILED)


@app.command()
def run(
    spec_path: Annotated[Path, typer.Argument(help="Monitor spec (YAML).")],
    batch: Annotated[
        str | None, typer.Option("--batch", "-b", help="Batch id (default: the newest).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")] = False,
    quiet: QuietOption = False,
) -> None:
    """Run a monitor over one batch; exit 1 when a check reaches `fail_on` or the batch is empty."""
    _load_spec_or_exit(spec_path)
    summary = _run_monitor_flow(spec_path, batch)
    if as_json:
        _print_json(summary)
    else:
        print_summary(console, summary, show_ok=not quiet)
    _gate([summary])


@app.command()
def backfill(
    spec_path: Annotated[
        Path, typer.Argument(help="Monitor spec (YAML) whose batch source is a file template.")
    ],
    batch: Annotated[
        list[str] | None, typer.Option("--batch", "-b", help="Batch id (repeat; default: every batch file).")
    ] = None,
    alerts: Annotated[
        bool, typer.Option("--alerts/--no-alerts", help="Alert on these past batches.")
    ] = False,
    retrain: Annotated[bool, typer.Option("--retrain/--no-retrain", help="Trigger retraining.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summaries as JSON.")] = False,
    quiet: QuietOption = False,
) -> None:
    """Run a monitor over past batches, oldest first, printing each as it finishes; exit 1 if any failed."""
    from driftline.flows.spec import SpecError, past_batch_ids

    spec = _load_spec_or_exit(spec_path)
    try:
        batch_ids = past_batch_ids(spec, batch)
    except SpecError as exc:
        _fail(str(exc))
    summaries = []
    for i, batch_id in enumerate(batch_ids, 1):
        errors.print(f"[{i}/{len(batch_ids)}] batch {batch_id}", highlight=False)
        summary = _run_monitor_flow(spec_path, batch_id, alerts=alerts, retrain=retrain)
        summaries.append(summary)
        if not as_json:
            print_summary(console, summary, show_ok=not quiet)
    if as_json:
        _print_json(summaries)
    _gate(summaries)


@app.command()
def serve(spec_path: Annotated[Path, typer.Argument(help="Monitor spec (YAML).")]) -> None:
    """Serve the monitor as a Prefect deployment on the spec's cron schedule (runs until stopped)."""
    spec = _load_spec_or_exit(spec_path)
    from prefect import serve as prefect_serve

    from driftline.flows.monitor import monitor_deployment

    console.print(
        f"serving {spec.name} on cron {spec.schedule.cron!r} ({spec.schedule.timezone}); Ctrl-C stops"
    )
    prefect_serve(monitor_deployment(spec, spec_path))


DatabaseOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $DRIFTLINE_DATABASE_URL or ./driftline.db)."),
]
CheckOption = Annotated[str | None, typer.Option("--check", help="Only this check.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _open_history(database: str | None) -> Any:
    """The history database, read-only use: a missing or unreachable one exits naming its (masked) URL."""
    from driftline.tasks.history.db import StoreUnavailable, open_store, resolve_database_url

    try:
        return open_store(resolve_database_url(database), create=False)
    except StoreUnavailable as exc:
        _fail(str(exc))


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
    monitor_name: Annotated[str, typer.Argument(metavar="MONITOR", help="Monitor name.")],
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
    from datetime import UTC, datetime

    try:
        since_time = datetime.fromisoformat(since).replace(tzinfo=UTC) if since else None
    except ValueError:
        _fail(f"--since {since!r}: expected a date such as 2024-05-01")
    records = _records(
        _read_history(database, monitor_name, check=check, target=target, metric=metric, since=since_time)
    )
    if as_json:
        _print_json(records)
    elif not records:
        errors.print(f"no history for monitor {monitor_name!r} with these filters")
    else:
        console.print(history_table(records, title=f"{monitor_name}: {len(records)} values"))


@app.command()
def runs(
    monitor_name: Annotated[str, typer.Argument(metavar="MONITOR", help="Monitor name.")],
    batch: Annotated[
        str | None,
        typer.Option("--batch", "-b", help="Show this stored batch's results ('latest' for the newest)."),
    ] = None,
    limit: Annotated[int, typer.Option(help="How many runs to list.")] = 20,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a monitor's recent runs, or show the stored results of one batch."""
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
            _fail(f"no stored results for monitor {monitor_name!r}, batch {batch!r}")
        if as_json:
            _print_json(results)
        else:
            console.print(results_table(results, title=f"{monitor_name} · batch {batch} (stored)"))
        return
    if as_json:
        _print_json(json.loads(json.dumps(recent, default=str)))
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
    monitor_name: Annotated[str, typer.Argument(metavar="MONITOR", help="Monitor name.")],
    check: CheckOption = None,
    metric: Annotated[str | None, typer.Option("--metric", help="Only this metric (e.g. psi).")] = None,
    window: Annotated[int, typer.Option(help="Runs in the rolling baseline.")] = 10,
    z: Annotated[float, typer.Option(help="Show series whose latest robust z-score reaches this.")] = 3.0,
    min_severity: Annotated[str, typer.Option(help="Severity that counts toward a streak.")] = "medium",
    runs: Annotated[int, typer.Option(help="Consecutive runs that make drift sustained.")] = 3,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sustained drift (a severity held for several runs) and values far from their rolling baseline."""
    from rich.table import Table

    from driftline.tasks.history.trend import latest_zscores, sustained_drift

    frame = _read_history(database, monitor_name, check=check, metric=metric)
    if frame.empty:
        _fail(f"no history for monitor {monitor_name!r}")
    try:
        streaks = sustained_drift(frame, min_severity=min_severity, runs=runs)
        latest = latest_zscores(frame, window=window)
    except ValueError as exc:
        _fail(str(exc))
    streaks = streaks[streaks["streak"] > 0].sort_values("streak", ascending=False)
    outliers = latest[latest["robust_z"].abs() >= z].sort_values("robust_z", key=abs, ascending=False)
    if as_json:
        _print_json({"sustained": _records(streaks), "outliers": _records(outliers)})
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
    table = Table(title=f"latest values with |robust z| >= {z:g} against the previous {window} runs")
    for name in ("check", "target", "metric", "batch", "value", "baseline median", "robust z"):
        table.add_column(name)
    for r in outliers.itertuples():
        values = (r.value, r.baseline_median, r.robust_z)
        table.add_row(
            r.check, r.target, r.metric, str(r.batch_id), *(format_number(float(v)) for v in values)
        )
    console.print(table)


def main() -> None:
    """Console-script entry point."""
    app()
