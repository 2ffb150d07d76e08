"""`driftline report`: (re)render a stored run's HTML report from the history store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from driftline.flows.cli_common import JsonOption, app, console, fail, json_mode, print_json


@app.command()
def report(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.yaml", help="Monitor spec (YAML).")],
    batch: Annotated[
        str | None, typer.Option("--batch", "-b", help="Stored batch to report (default: the newest).")
    ] = None,
    runs: Annotated[int, typer.Option(help="Runs shown in the trends (this one included).", min=1)] = 30,
    database: Annotated[
        str | None, typer.Option("--db", help="History database URL (default: the spec's).")
    ] = None,
    open_page: Annotated[bool, typer.Option("--open", help="Open the report in a web browser.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Write the HTML report of a stored run (the newest, or --batch) and print its path."""
    json_mode(as_json)
    from driftline.tasks.config.spec import SpecError, load_spec
    from driftline.tasks.history.db import StoreConfigError, StoreUnavailable
    from driftline.tasks.report import ReportDataError, write_html_report
    from driftline.tasks.sources import SourceError, valid_batch_id

    try:
        batch = None if batch is None else valid_batch_id(batch)
        spec = load_spec(spec_path)
        path = write_html_report(spec, batch_id=batch, runs=runs, database_url=database)
    except (SpecError, SourceError, ReportDataError, StoreUnavailable, StoreConfigError) as exc:
        fail(str(exc.args[0]) if isinstance(exc, ReportDataError) else str(exc))
    if as_json:
        print_json({"report": str(path), "bytes": path.stat().st_size})
    else:
        console.print(str(path), highlight=False, soft_wrap=True)
    if open_page:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
