"""The run report in Prefect: a table artifact of every result, a link artifact to the HTML report and a
markdown artifact per figure."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.tasks.attribution_plots import figure_name
from driftline.tasks.result_rows import result_rows


def publish_artifacts(summary: Mapping[str, Any], figures: list[Path]) -> None:
    """Create the run's artifacts: the results table, a link to the HTML report, a markdown artifact
    per figure."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    monitor, batch = summary["monitor"], summary["batch_id"]
    create_table_artifact(
        table=result_rows(summary["results"]),
        key=figure_name("driftline", monitor),
        description=f"{monitor} batch {batch}: {summary['status']}, worst {summary['worst_severity']}",
    )
    if summary.get("report"):
        report = Path(summary["report"])
        create_link_artifact(
            link=report.resolve().as_uri(),
            link_text=f"{monitor} batch {batch}: HTML report",
            key=figure_name("driftline", monitor, "report"),
            description=f"Run report (self-contained HTML): `{report}`",
        )
    for path in figures:
        image = f"data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"
        create_markdown_artifact(
            markdown=f"### {path.stem} ({monitor}, {batch})\n\n![{path.stem}]({image})\n\nFile: `{path}`",
            key=figure_name("driftline", monitor, path.stem),
        )
