"""`driftline export-expectations`: a monitor's reference profile as a Great Expectations 1.x suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from driftline.flows.cli_common import JsonOption, app, console, fail, json_mode, print_json


@app.command("export-expectations")
def export_expectations(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.yaml", help="The monitor spec.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the suite here (default: standard output).")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Suite name (default: <monitor>.reference).")
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Load the suite with Great Expectations and validate the reference (scored by the "
            "monitor's model, if any, as the suite describes it).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Export the reference's ranges, categories, null rates and required characters as a GX suite."""
    json_mode(as_json)
    from driftline.checks.errors import CheckInputError
    from driftline.tasks.config.spec import SpecError, load_spec
    from driftline.tasks.references.expectations_export import export_from_spec, validate_suite
    from driftline.tasks.references.model import ModelError
    from driftline.tasks.sources import SourceError

    try:
        exported = export_from_spec(load_spec(spec_path), name)
    except (SpecError, SourceError, CheckInputError, ModelError) as exc:
        fail(str(exc))
    suite = exported.suite
    text = json.dumps(suite, indent=2, allow_nan=False) + "\n"
    summary = {"suite": suite["name"], "expectations": len(suite["expectations"]), "output": None}
    if verify:
        summary["reference_validation"] = validate_suite(suite, exported.reference)
    if output is None:
        if as_json:
            print_json({**summary, "suite_json": suite})
        else:
            typer.echo(text, nl=False)
        if verify:
            _report_validation(summary, stderr=True)
        _exit_on_failed_validation(summary)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        fail(f"{output}: cannot write the suite ({exc.strerror})")
    summary["output"] = str(output)
    if as_json:
        print_json(summary)
        _exit_on_failed_validation(summary)
        return
    console.print(f"wrote {summary['expectations']} expectations ({summary['suite']}) to {output}")
    if verify:
        _report_validation(summary, stderr=False)
    _exit_on_failed_validation(summary)


def _exit_on_failed_validation(summary: dict) -> None:
    """Exit 1 when `--verify` found an expectation the reference does not meet."""
    from driftline.flows.cli_common import EXIT_FAILED

    if not summary.get("reference_validation", {"success": True})["success"]:
        raise typer.Exit(EXIT_FAILED)


def _report_validation(summary: dict, stderr: bool) -> None:
    """One line on how the reference validates; the failed expectations, if any."""
    from driftline.flows.cli_common import errors
    from driftline.flows.render import plain

    outcome = summary["reference_validation"]
    out = errors if stderr else console
    out.print(f"reference: {outcome['successful']}/{outcome['evaluated']} expectations pass")
    for failed in outcome["failed"]:
        share = failed["unexpected_percent"]
        unexpected = "" if share is None else f" ({share}% unexpected)"
        out.print(f"  failed: {failed['type']} on {plain(failed['column'])}{unexpected}", highlight=False)
