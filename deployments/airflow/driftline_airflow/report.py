"""The run report under Airflow: a Markdown table and the full summary as JSON, beside the figures.

Prefect shows a run's results as artifacts; under Airflow the same content goes to files in the
monitor's report folder (`.driftline/reports/<monitor>/<batch>/` next to the spec), and the XCom
summary points at them. Both files are private to their owner and written whole (the core's file
writer); the JSON is strict (non-finite numbers are null) and every Markdown cell is escaped, since
column names, categories and reasons come from the data.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from driftline.tasks.tools.files import write_private_file
from driftline.tasks.tools.safe_text import printable
from driftline.tasks.views.result_rows import result_rows
from driftline_airflow.xcom import strict_json

REPORT_JSON = "summary.json"
REPORT_MARKDOWN = "report.md"
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")


def markdown_text(value: Any) -> str:
    """`value` as one line of Markdown table text: HTML escaped, pipes escaped, line breaks as `<br>`,
    other control and invisible characters (a bidi override) shown as escapes."""
    text = html.escape("" if value is None else str(value), quote=False).replace("|", "\\|")
    return printable(_LINE_BREAKS.sub("<br>", text))


def markdown_report(summary: Mapping[str, Any], figures: list[Path]) -> str:
    """A Markdown page: the verdict, one table row per result, then the figures."""
    text = {key: markdown_text(summary[key]) for key in ("monitor", "batch_id", "status", "worst_severity")}
    lines = [
        f"# {text['monitor']}, batch {text['batch_id']}",
        "",
        f"Status **{text['status']}**, worst severity **{text['worst_severity']}**, "
        f"{markdown_text(summary['rows'])} rows; {markdown_text(summary['stored'])}.",
        "",
        "| check | target | status | severity | metrics | failing rows | reason |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result_rows(list(summary["results"])):
        lines.append("| " + " | ".join(markdown_text(value) for value in row.values()) + " |")
    lines += [f"\n![{markdown_text(path.stem)}]({quote(path.name)})" for path in figures]
    return "\n".join(lines) + "\n"


def write_report(summary: Mapping[str, Any], figures: list[Path], folder: Path) -> Path:
    """Write `summary.json` and `report.md` into `folder` (each whole, mode 0600); returns the Markdown
    file's path."""
    document = json.dumps(strict_json(summary), indent=2, allow_nan=False, default=str)
    write_private_file(folder / REPORT_JSON, document.encode())
    path = folder / REPORT_MARKDOWN
    write_private_file(path, markdown_report(summary, figures).encode())
    return path
