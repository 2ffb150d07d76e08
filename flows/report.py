"""The run report in Prefect: a table artifact of every result, a link artifact to the served HTML
report and a markdown artifact per figure."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.checks.result import severity_rank
from driftline.tasks.views.attribution_plots import figure_name, svg_data_uri
from driftline.tasks.views.result_rows import result_rows


def by_severity(results: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Worst first: severities high to none, then errors, then the skipped; the run's order otherwise."""
    order = {"error": 1, "skipped": 2}
    return sorted(results, key=lambda r: (-severity_rank(r["severity"]), order.get(r["status"], 0)))


def publish_artifacts(summary: Mapping[str, Any], figures: list[Path], report_url: str | None = None) -> None:
    """Create the run's artifacts: the results table (worst first), a link artifact to the report at
    `report_url` (else a note naming the report file on the worker), a markdown artifact per figure
    (its SVG file as a data URI image)."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    monitor, batch = summary["monitor"], summary["batch_id"]
    create_table_artifact(
        table=result_rows(by_severity(summary["results"])),
        key=figure_name("driftline", monitor),
        description=f"{monitor} batch {batch}: {summary['status']}, worst {summary['worst_severity']}",
    )
    report_key = figure_name("driftline", monitor, "report")
    if report_url:
        create_link_artifact(
            link=report_url,
            link_text=f"{monitor} batch {batch}: HTML report",
            key=report_key,
            description="Run report (alerts.report_url)",
        )
    elif summary.get("report"):
        create_markdown_artifact(
            markdown=f"HTML report of {monitor} batch {batch}, on the worker: `{summary['report']}`\n\n"
            "Set `alerts.report_url` to where reports are served to get a link here.",
            key=report_key,
        )
    for path in figures:
        image = svg_data_uri(path.read_text(encoding="utf-8"))
        create_markdown_artifact(
            markdown=f"### {path.stem} ({monitor}, {batch})\n\n![{path.stem}]({image})\n\nFile: `{path}`",
            key=figure_name("driftline", monitor, path.stem),
        )
