"""The run report in Prefect: a table artifact of every result and a markdown artifact per figure."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.flows.render import format_metrics
from driftline.tasks.attribution_plots import figure_name


def result_rows(results: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One table row per result, metrics shown with their thresholds."""
    return [
        {
            "check": r["check"],
            "target": r["target"],
            "status": r["status"],
            "severity": r["severity"],
            "metrics": format_metrics(r["metrics"], r["thresholds"], limit=6),
            "failing_rows": r["failing_rows"],
            "reason": r["reason"] or "",
        }
        for r in results
    ]


def publish_artifacts(summary: Mapping[str, Any], figures: list[Path]) -> None:
    """Create the run's artifacts: the results table, and a markdown artifact per figure."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    monitor, batch = summary["monitor"], summary["batch_id"]
    create_table_artifact(
        table=result_rows(summary["results"]),
        key=figure_name("driftline", monitor),
        description=f"{monitor} batch {batch}: {summary['status']}, worst {summary['worst_severity']}",
    )
    for path in figures:
        image = f"data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"
        create_markdown_artifact(
            markdown=f"### {path.stem} ({monitor}, {batch})\n\n![{path.stem}]({image})\n\nFile: `{path}`",
            key=figure_name("driftline", monitor, path.stem),
        )
