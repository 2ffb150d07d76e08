"""The run report under Airflow: a Markdown table and the full summary as JSON, beside the figures.

Prefect shows a run's results as artifacts; under Airflow the same content goes to files in the
monitor's report folder (`.driftline/reports/<monitor>/<batch>/` next to the spec), and the XCom
summary points at them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.tasks.result_rows import result_rows

REPORT_JSON = "summary.json"
REPORT_MARKDOWN = "report.md"


def markdown_report(summary: Mapping[str, Any], figures: list[Path]) -> str:
    """A Markdown page: the verdict, one table row per result, then the figures."""
    lines = [
        f"# {summary['monitor']}, batch {summary['batch_id']}",
        "",
        f"Status **{summary['status']}**, worst severity **{summary['worst_severity']}**, "
        f"{summary['rows']} rows; {summary['stored']}.",
        "",
        "| check | target | status | severity | metrics | failing rows | reason |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result_rows(list(summary["results"])):
        cells = [str("" if row[k] is None else row[k]).replace("|", "\\|") for k in row]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [f"\n![{path.stem}]({path.name})" for path in figures]
    return "\n".join(lines) + "\n"


def write_report(summary: Mapping[str, Any], figures: list[Path], folder: Path) -> Path:
    """Write `summary.json` and `report.md` into `folder`; returns the Markdown file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / REPORT_JSON).write_text(json.dumps(summary, indent=2, default=str))
    path = folder / REPORT_MARKDOWN
    path.write_text(markdown_report(summary, figures))
    return path
