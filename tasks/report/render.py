"""Render the report page with Jinja2 (the template ships as package data) and write it to the run's
report folder."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from driftline.tasks.report.gather import ReportData
from driftline.tasks.report.page import page_context
from driftline.tasks.tools.files import write_private_file
from driftline.tasks.tools.safe_text import page_value

TEMPLATE = "report.html.j2"
REPORT_FILE = "report.html"


@cache
def _template() -> Any:
    """The compiled page template (autoescaped: targets and reasons are data, never markup; their
    invisible characters shown as escapes)."""
    import jinja2

    source = resources.files("driftline.tasks.report").joinpath("templates", TEMPLATE).read_text("utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, finalize=page_value)
    return environment.from_string(source)


def render_html(data: ReportData, *, window: int = 10, k: float = 3.0) -> str:
    """The report of `data` as one self-contained HTML page."""
    return _template().render(**page_context(data, window=window, k=k))


def write_report_file(data: ReportData, folder: Path, **options: Any) -> Path:
    """Write the page to `folder/report.html`, whole and owner-only (see `driftline.tasks.tools.files`);
    returns its path."""
    path = folder / REPORT_FILE
    write_private_file(path, render_html(data, **options).encode("utf-8"))
    return path
