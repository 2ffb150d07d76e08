"""The run report: one self-contained HTML page per run (header, a section per failing check with the
picture that explains it, metric trends with baseline bands, every result in a table).

`write_html_report` writes it for a run that just finished or, from the history store, for any stored
batch; it lands in the run's report folder as `report.html`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.tasks.report.gather import DEFAULT_RUNS, ReportData, ReportDataError, from_store, from_summary
from driftline.tasks.report.render import REPORT_FILE, render_html, write_report_file

__all__ = [
    "DEFAULT_RUNS",
    "REPORT_FILE",
    "ReportData",
    "ReportDataError",
    "render_html",
    "report_links",
    "write_html_report",
]

log = logging.getLogger(__name__)


def report_links(spec: Any, batch_id: str, run_url: str | None = None) -> dict[str, str]:
    """Header links: the run in the orchestrator (or the spec's `alerts.run_url`)."""
    url = spec.alerts.format_run_url(spec.name, batch_id) or run_url
    return {"open the run": url} if url else {}


def write_html_report(
    spec: Any,
    run: Any = None,
    *,
    batch_id: str | None = None,
    runs: int = DEFAULT_RUNS,
    run_url: str | None = None,
    database_url: str | None = None,
) -> Path:
    """Write the HTML report of a run into its report folder and return the file's path.

    `run` is a finished run (a `RunSummary` or its dict): its results are shown, with the stored
    history of the previous runs when the store can be read. Without `run`, the stored batch
    `batch_id` (the newest when None) is read back from the history store (`ReportDataError` when
    there is none).
    """
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.run.pipeline import report_dir

    url = database_url or spec.database_url()
    min_severity = spec.alerts.min_severity
    if run is None:
        with connected_store(url, create=False) as engine:
            data = from_store(engine, spec.name, batch_id, runs=runs, min_severity=min_severity)
    else:
        summary: Mapping[str, Any] = run if isinstance(run, Mapping) else run.to_dict()
        data = _from_summary_with_history(summary, url, runs, min_severity)
    data.links = report_links(spec, data.batch_id, run_url)
    return write_report_file(data, report_dir(spec, data.batch_id))


def _from_summary_with_history(
    summary: Mapping[str, Any], url: str, runs: int, min_severity: str
) -> ReportData:
    """Report data of a finished run; a history store that cannot be read leaves its trends to this run."""
    from driftline.tasks.history.db import connected_store

    try:
        with connected_store(url, create=False) as engine:
            return from_summary(summary, engine=engine, runs=runs, min_severity=min_severity)
    except Exception as exc:
        log.warning("report without history (%s: %s)", type(exc).__name__, exc)
        return from_summary(summary, runs=runs, min_severity=min_severity)
