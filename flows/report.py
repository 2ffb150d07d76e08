"""The run report in Prefect: a table artifact of every result and the attribution figures."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.flows.render import format_metrics

# Result details that carry a figure, and the function that draws it.
FIGURES = {"tree": "segment_tree_png", "matrix": "cross_matrix_png"}


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes) from free text."""
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")


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


def write_figures(results: list[Mapping[str, Any]], directory: Path) -> list[Path]:
    """PNG files of every result that carries a segmentation tree or a pair cross matrix."""
    from driftline.tasks import attribution_plots

    paths = []
    for r in results:
        for key, draw in FIGURES.items():
            if r["status"] == "ok" and key in (r.get("details") or {}):
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / f"{artifact_key(r['check'], key)}.png"
                path.write_bytes(getattr(attribution_plots, draw)(r["details"]))
                paths.append(path)
    return paths


def publish(summary: Mapping[str, Any], report_dir: Path) -> list[Path]:
    """Create the run's artifacts: the results table, and a markdown artifact per figure."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    monitor, batch = summary["monitor"], summary["batch_id"]
    create_table_artifact(
        table=result_rows(summary["results"]),
        key=artifact_key("driftline", monitor),
        description=f"{monitor} batch {batch}: {summary['status']}, worst {summary['worst_severity']}",
    )
    figures = write_figures(summary["results"], report_dir / monitor / batch)
    for path in figures:
        image = f"data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"
        create_markdown_artifact(
            markdown=f"### {path.stem} ({monitor}, {batch})\n\n![{path.stem}]({image})\n\nFile: `{path}`",
            key=artifact_key("driftline", monitor, path.stem),
        )
    return figures
