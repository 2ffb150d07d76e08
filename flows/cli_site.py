"""`driftline site`: write a static overview of every monitor in a history store, and serve it locally.

The store is `--db`, else the one the `--spec` files name, else `$DRIFTLINE_DATABASE_URL` or
./driftline.db. Run reports are linked from the `.driftline/reports` folder beside each spec and from
every `--reports` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from driftline.flows.cli_common import JsonOption, app, console, fail, json_mode, print_json
from driftline.flows.cli_history import DatabaseOption
from driftline.flows.render import plain

DEFAULT_PORT = 8000


def _specs(paths: list[Path]) -> list[Any]:
    """The loaded specs; a bad one exits naming it."""
    from driftline.tasks.config.spec import SpecError, load_spec

    try:
        return [load_spec(path) for path in paths]
    except SpecError as exc:
        fail(str(exc))


def _database(database: str | None, specs: list[Any]) -> str:
    """`--db`, else the one store the specs name (specs naming different stores exit), else the default."""
    from driftline.tasks.config.spec import SpecError
    from driftline.tasks.history.db import masked_url, resolve_database_url

    if database is not None or not specs:
        return resolve_database_url(database)
    try:
        urls = {spec.database_url() for spec in specs}
    except SpecError as exc:
        fail(str(exc))
    if len(urls) > 1:
        named = ", ".join(sorted(masked_url(url) for url in urls))
        fail(f"the specs name different history stores ({named}): give one with --db")
    return urls.pop()


@app.command()
def site(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the site into.")] = Path(
        "driftline-site"
    ),
    spec: Annotated[
        list[Path] | None,
        typer.Option(
            "--spec",
            help="Monitor spec (repeatable): its store_url is the database and the reports beside it are "
            "linked.",
        ),
    ] = None,
    reports: Annotated[
        list[Path] | None,
        typer.Option(
            "--reports",
            help="A .driftline/reports folder (<monitor>/<batch>/report.html) to link; repeatable.",
        ),
    ] = None,
    runs: Annotated[int, typer.Option(min=1, help="Runs shown per monitor (the newest).")] = 30,
    serve: Annotated[bool, typer.Option("--serve", help="Then serve the site on 127.0.0.1.")] = False,
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port of --serve (0: any free port).")
    ] = DEFAULT_PORT,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write a static site of every monitor in the history store (open index.html, no server needed)."""
    json_mode(as_json)
    from driftline.tasks.history.db import StoreConfigError, StoreUnavailable, connected_store
    from driftline.tasks.site import write_site
    from driftline.tasks.site.serve import serve_site

    specs = _specs(spec or [])
    roots = [s.state_dir / "reports" for s in specs] + list(reports or [])
    missing = [str(root) for root in reports or [] if not root.is_dir()]
    if missing:
        fail(f"--reports {missing[0]}: no such folder")
    url = _database(database, specs)
    try:
        with connected_store(url, create=False) as engine:
            written = write_site(engine, out, runs=runs, report_roots=roots)
    except (StoreUnavailable, StoreConfigError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{out}: cannot write the site: {exc}")
    if as_json:
        print_json(written.to_dict())
    else:
        console.print(
            f"site of {len(written.pages)} monitor(s) written to {plain(written.index)} "
            f"({written.reports} run report(s) copied)",
            highlight=False,
            soft_wrap=True,
        )
    if serve:
        serve_site(
            out, port, announce=lambda line: console.print(plain(line), highlight=False, soft_wrap=True)
        )
