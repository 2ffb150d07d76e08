"""`driftline run`, `backfill`, `serve`, `checks` and `evaluate`: run monitors and single checks.

Only the Prefect engine and `serve` import Prefect; everything else starts fast and runs without it.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from contextlib import ExitStack
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from driftline.flows.cli_common import (
    EXIT_FAILED,
    JsonOption,
    app,
    console,
    crash,
    errors,
    fail,
    json_mode,
    print_json,
)
from driftline.flows.render import print_summary, results_table
from driftline.tasks.tools.safe_text import first_line, printable


def _parse_params(pairs: list[str]) -> dict[str, Any]:
    """`key=value` pairs; values are read as YAML scalars or lists (`bins=20`, `features=[a, b]`)."""
    import yaml

    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--param {pair!r}: expected key=value")
        try:
            params[key.strip()] = yaml.safe_load(value)
        except (yaml.YAMLError, RecursionError):
            params[key.strip()] = value
    return params


@app.command("checks")
def list_checks(
    spec_path: Annotated[
        Path | None,
        typer.Option("--spec", help="Also list the custom checks this monitor spec names (module:Class)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the check catalog (with the checks installed packages publish): name, family, what it
    needs, default thresholds."""
    json_mode(as_json)
    from rich.table import Table

    from driftline.checks import registry
    from driftline.checks.custom import is_import_path

    entries = [registry.describe(n) for n in registry.names()]
    if spec_path is not None:
        spec = _load_spec_or_exit(spec_path)
        custom = {e.check for e in spec.checks if is_import_path(e.check)}
        entries += [registry.describe(path, spec.base_dir) for path in sorted(custom)]
    if as_json:
        print_json(entries)
        return
    table = Table(title=f"{len(entries)} checks", title_justify="left")
    for col in ("name", "family", "needs", "parameters", "thresholds", "summary"):
        table.add_column(col, overflow="fold")
    for e in entries:
        thresholds = ", ".join(f"{k} {'/'.join(map(str, v))}" for k, v in e["thresholds"].items())
        parameters = ", ".join(f"{k}={v!r}" for k, v in e["parameters"].items())
        table.add_row(e["name"], e["family"], ", ".join(e["needs"]), parameters, thresholds, e["summary"])
    console.print(table)


@app.command()
def evaluate(
    check: Annotated[
        list[str],
        typer.Option(
            "--check",
            "-c",
            help="Check name, e.g. drift.numeric, or module:Class of a custom check (repeat for several).",
        ),
    ],
    reference: Annotated[Path, typer.Option("--reference", "-r", help="Reference CSV or Parquet file.")],
    current: Annotated[Path, typer.Option("--current", help="Current batch CSV or Parquet file.")],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", help="key=value: a check parameter or a column role (label=COL, numeric=[a,b])."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="MODULE:ATTR",
            help="The model that scores both files first (a fitted estimator, or a callable returning one; "
            "the module is looked up in the working directory, then among installed packages).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run checks on two files, without Prefect, and print their results. Two Parquet files are read a
    group of columns at a time (progress on standard error); a CSV file is read whole. With --model,
    both files are scored first, as a monitor run scores its reference and batch (docs/model.md)."""
    json_mode(as_json)
    from driftline.checks.columns import split_roles
    from driftline.checks.errors import CheckInputError
    from driftline.tasks.references.model import ModelError
    from driftline.tasks.run.evaluate import evaluate as evaluate_tables
    from driftline.tasks.run.evaluate import evaluate_files
    from driftline.tasks.sources import PARQUET_SUFFIXES, SourceError, read_table

    def groups_done(done: int, total: int) -> None:
        errors.print(f"column groups evaluated: {done}/{total}", highlight=False)

    params, roles = split_roles(_parse_params(param or []))
    options: dict[str, Any] = {"params": params, "columns": roles, "base_dir": Path.cwd(), "model": model}
    try:
        if all(p.suffix.lower() in PARQUET_SUFFIXES for p in (reference, current)):
            progress = None if as_json else groups_done
            found = evaluate_files(check, reference, current, progress=progress, **options)
        else:
            found = evaluate_tables(check, read_table(reference), read_table(current), **options)
    except (CheckInputError, SourceError, ModelError) as exc:
        fail(str(exc))
    results = [r.to_dict() for r in found]
    if as_json:
        print_json(results)
    else:
        title = f"{', '.join(check)} on {current.name} against {reference.name}"
        console.print(results_table(results, title=title))


def _load_spec_or_exit(spec_path: Path) -> Any:
    from driftline.tasks.config.spec import SpecError, load_spec

    try:
        return load_spec(spec_path)
    except SpecError as exc:
        fail(str(exc))


VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show every result, also those ok at severity none.")
]
# Showing only results with a severity is the default; `--quiet` stays accepted for existing scripts.
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", hidden=True)]


class Engine(StrEnum):
    """Where a run executes."""

    auto = "auto"
    local = "local"
    prefect = "prefect"


EngineOption = Annotated[
    Engine,
    typer.Option(
        "--engine",
        "-e",
        help="local: this process; prefect: a Prefect flow run; auto: prefect when PREFECT_API_URL is set.",
    ),
]


def _prefect_flows(purpose: str, module: str = "monitor", extra: str = "prefect") -> Any:
    """A Prefect flows module (`monitor`, `partitioned`); without Prefect (or prefect-dask, for the
    `dask` extra) installed, exit naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(f"driftline.flows.{module}")
    except ImportError as exc:
        fail(f"{purpose} needs Prefect: pip install 'driftline[{extra}]' ({exc})")


PartitionedOption = Annotated[
    bool,
    typer.Option(
        "--partitioned",
        help="Evaluate the batch partition by partition (Parquet partitions, or SQL pages of "
        "batches.sql.page_by) and merge: in a pool of execution.workers processes, or one Prefect task "
        "per partition under the Prefect engine.",
    ),
]
DaskOption = Annotated[
    str | None,
    typer.Option(
        "--dask-address",
        metavar="ADDRESS",
        help="Run the partitions as tasks on the Dask scheduler at ADDRESS (implies --partitioned); "
        "under the Prefect engine through prefect-dask, whose workers must reach the same Prefect API.",
    ),
]
# How long to wait for the Dask scheduler of --dask-address before giving up.
DASK_CONNECT_S = 15


def _engine(choice: Engine) -> Engine:
    """The engine a run uses: the one asked for, or Prefect only when a Prefect API is configured."""
    if choice is not Engine.auto:
        return choice
    return Engine.prefect if os.environ.get("PREFECT_API_URL") else Engine.local


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at the time of the record, never to a stale stream."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        """The stream is always the current standard error."""


class _LineFormatter(logging.Formatter):
    """One line a record: a driver's multi-line error keeps its first line, control characters from the
    data are shown as escapes."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(first_line(record.message))
        return super().formatMessage(record)


def _show_progress() -> None:
    """Progress of local runs on standard error (Prefect shows its own logs)."""
    driftline_log = logging.getLogger("driftline")
    if not any(isinstance(h, _StderrHandler) for h in driftline_log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_LineFormatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        driftline_log.addHandler(handler)
    driftline_log.setLevel(logging.INFO)


class BatchRunner:
    """Runs one batch at a time on the chosen engine, sharing the profile cache between batches;
    `partitioned` (or a `dask_address`) evaluates each batch partition by partition.

    A context manager: under the Prefect engine with no API configured, it starts a temporary Prefect
    server for the command and stops it at the end (the server also dies if the command is killed);
    a local run on Dask holds its client to the scheduler for the command.
    """

    def __init__(
        self,
        spec_path: Path,
        spec: Any,
        engine: Engine,
        partitioned: bool = False,
        dask_address: str | None = None,
    ) -> None:
        from driftline.tasks.references.profiles import ProfileCache

        self.spec_path, self.spec, self.engine = spec_path, spec, _engine(engine)
        self.partitioned, self.dask_address = partitioned or dask_address is not None, dask_address
        self.cache = ProfileCache(spec.state_dir / "profiles")
        self._stack = ExitStack()
        self.driver: Any = None

    def __enter__(self) -> BatchRunner:
        if self.partitioned:
            self._require_partitions()
        if self.engine is Engine.prefect:
            self.flow = self._prefect_flow()
            from driftline.flows.temporary_server import prefect_api

            try:
                self._stack.enter_context(prefect_api())
            except RuntimeError as exc:
                crash(exc)
        else:
            _show_progress()
            if self.partitioned:
                self.driver = self._local_driver()
        return self

    def _require_partitions(self) -> None:
        """A batch source that cannot be partitioned is named before any server or cluster starts."""
        from driftline.tasks.config.spec import SpecError
        from driftline.tasks.run.partitioned import require_partitionable

        try:
            require_partitionable(self.spec)
        except SpecError as exc:
            fail(f"--partitioned: {exc}")

    def _prefect_flow(self) -> Any:
        """The flow a batch runs as: the monitor, the partitioned monitor, or that on a Dask cluster."""
        if not self.partitioned:
            return _prefect_flows("the Prefect engine").monitor
        if self.dask_address is None:
            return _prefect_flows("--partitioned", "partitioned").partitioned_monitor
        flows = _prefect_flows("--dask-address", "partitioned", extra="dask")
        try:
            import prefect_dask  # noqa: F401
        except ImportError as exc:
            fail(f"--dask-address needs prefect-dask: pip install 'driftline[dask]' ({exc})")
        return functools.partial(flows.run_on_dask, address=self.dask_address)

    def _local_driver(self) -> Any:
        """The plain driver: partitions in a process pool, or as tasks on the Dask scheduler at
        `dask_address`."""
        from driftline.tasks.run.driver import Driver

        if self.dask_address is None:
            return Driver()
        try:
            from distributed import Client
        except ImportError as exc:
            fail(f"--dask-address needs Dask: pip install 'driftline[dask]' ({exc})")
        try:
            client = self._stack.enter_context(Client(self.dask_address, timeout=DASK_CONNECT_S))
        except (OSError, ValueError) as exc:
            self._stack.close()
            fail(f"--dask-address {self.dask_address}: cannot reach the Dask scheduler ({exc})")
        return Driver(dask_client=client)

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def run(self, batch: str | None, **flags: Any) -> dict[str, Any]:
        """One batch; bad input exits 2, an unexpected failure exits 3 (never 1, which means drift)."""
        from driftline.tasks.config.spec import SpecError
        from driftline.tasks.references.model import ModelError
        from driftline.tasks.run.partitioned import run_partitioned
        from driftline.tasks.run.pipeline import run_monitor
        from driftline.tasks.sources import SourceError

        try:
            if self.engine is Engine.prefect:
                return self.flow(str(self.spec_path.resolve()), batch, **flags)
            if self.partitioned:
                summary = run_partitioned(self.spec, batch, driver=self.driver, cache=self.cache, **flags)
                return summary.to_dict()
            return run_monitor(self.spec, batch, cache=self.cache, **flags).to_dict()
        except (SourceError, SpecError, ModelError) as exc:
            fail(str(exc))
        except Exception as exc:
            crash(exc)


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
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
    quiet: QuietOption = False,
    engine: EngineOption = Engine.auto,
    partitioned: PartitionedOption = False,
    dask_address: DaskOption = None,
) -> None:
    """Run a monitor over one batch; exit 1 when a check reaches `fail_on` or the batch is empty.
    Prints the verdict, the results with a severity and the report's path (`--verbose`: every result)."""
    json_mode(as_json)
    from driftline.tasks.sources import SourceError, valid_batch_id

    try:
        batch = None if batch is None else valid_batch_id(batch)
    except SourceError as exc:
        fail(str(exc))
    spec = _load_spec_or_exit(spec_path)
    with BatchRunner(spec_path, spec, engine, partitioned, dask_address) as runner:
        summary = runner.run(batch)
    if as_json:
        print_json(summary)
    else:
        print_summary(console, summary, show_ok=verbose and not quiet)
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
    retrain: Annotated[
        bool,
        typer.Option(
            "--retrain/--no-retrain",
            help="Retrain every failing batch, also one older than the newest stored batch.",
        ),
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
    quiet: QuietOption = False,
    engine: EngineOption = Engine.auto,
    partitioned: PartitionedOption = False,
    dask_address: DaskOption = None,
) -> None:
    """Run a monitor over past batches, oldest first, printing each as it finishes; exit 1 if any failed."""
    json_mode(as_json)
    from driftline.tasks.config.spec import SpecError, past_batch_ids
    from driftline.tasks.retraining.actions import RETRAIN_ALWAYS
    from driftline.tasks.sources import SourceError

    spec = _load_spec_or_exit(spec_path)
    try:
        batch_ids = past_batch_ids(spec, batch)
    except (SpecError, SourceError) as exc:
        fail(str(exc))
    summaries = []
    with BatchRunner(spec_path, spec, engine, partitioned, dask_address) as runner:
        for i, batch_id in enumerate(batch_ids, 1):
            errors.print(f"[{i}/{len(batch_ids)}] batch {batch_id}", highlight=False)
            summary = runner.run(batch_id, alerts=alerts, retrain=RETRAIN_ALWAYS if retrain else False)
            summaries.append(summary)
            if not as_json:
                print_summary(console, summary, show_ok=verbose and not quiet)
    if as_json:
        print_json(summaries)
    _gate(summaries)


@app.command()
def serve(spec_path: Annotated[Path, typer.Argument(help="Monitor spec (YAML).")]) -> None:
    """Serve the monitor as a Prefect deployment on the spec's cron schedule (runs until stopped)."""
    spec = _load_spec_or_exit(spec_path)
    flows = _prefect_flows("serve")
    console.print(
        f"serving {spec.name} on cron {spec.schedule.cron!r} ({spec.schedule.timezone}); Ctrl-C or "
        "SIGTERM stops it, cancelling the run in flight"
    )
    flows.serve_deployment(flows.monitor_deployment(spec, spec_path))
