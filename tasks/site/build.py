"""Writing the site: `index.html`, one page per monitor under `monitors/`, and a copy of each shown
run's HTML report under `reports/`, so the folder is whole (open it from disk, serve it, publish it).

Files are written whole and owner-only (`driftline.tasks.tools.files`): the pages show production values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from driftline.tasks.tools.files import private_folder, write_private_file
from driftline.tasks.history.models import utcnow
from driftline.tasks.report.figures import SEVERITY_COLOURS
from driftline.tasks.tools.safe_text import page_value
from driftline.tasks.site.gather import GRADED_RUNS, MonitorData, monitor_data, overview_order, rank_of
from driftline.tasks.site.names import href, page_stems, stored_report
from driftline.tasks.site.pages import index_page, monitor_page, when
from driftline.tasks.site.reads import monitor_names, open_incidents

INDEX_FILE = "index.html"
PAGES_DIR = "monitors"
REPORTS_DIR = "reports"
DEFAULT_RUNS = 30


@dataclass(frozen=True)
class SiteWritten:
    """Where the site went: its index, each monitor's page and the run reports copied in."""

    folder: Path
    index: Path
    pages: dict[str, Path] = field(default_factory=dict)
    reports: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "index": str(self.index),
            "pages": {monitor: str(path) for monitor, path in self.pages.items()},
            "reports": self.reports,
        }


@cache
def _environment() -> Any:
    """The page templates (package data), autoescaped: every name and id on a page is data, its
    invisible characters shown as escapes."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("driftline.tasks.site", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=page_value,
    )


def _render(template: str, **context: Any) -> bytes:
    from driftline import __version__

    shared = {"colours": SEVERITY_COLOURS, "generated": when(utcnow()), "version": __version__}
    return _environment().get_template(template).render(**shared, **context).encode("utf-8")


def write_site(
    engine: Engine, folder: Path, *, runs: int = DEFAULT_RUNS, report_roots: Sequence[Path] = ()
) -> SiteWritten:
    """Write the site of every monitor in the store into `folder`, showing each monitor's newest `runs`
    runs; a run's report is linked (and copied in) when one of `report_roots` (folders laid out as
    `.driftline/reports`: `<monitor>/<batch>/report.html`) holds it."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    names = monitor_names(engine)
    incidents = open_incidents(engine)
    monitors = overview_order([monitor_data(engine, name, runs=runs, incidents=incidents) for name in names])
    stems = page_stems(names)
    private_folder(folder)
    pages, copied = {}, 0
    for data in monitors:
        reports = _copy_reports(data, folder, stems[data.monitor], report_roots)
        copied += len(reports)
        page = folder / PAGES_DIR / f"{stems[data.monitor]}.html"
        write_private_file(
            page, _render("monitor.html.j2", **monitor_page(data, reports, f"../{INDEX_FILE}"))
        )
        pages[data.monitor] = page
    links = [(data, href(PAGES_DIR, f"{stems[data.monitor]}.html")) for data in monitors]
    index = folder / INDEX_FILE
    write_private_file(index, _render("index.html.j2", worst=_worst_latest(monitors), **index_page(links)))
    return SiteWritten(folder, index, pages, copied)


def _copy_reports(data: MonitorData, folder: Path, stem: str, roots: Sequence[Path]) -> dict[str, str]:
    """Copy the stored reports of the monitor's shown runs to `reports/<stem>/<batch>.html`; returns
    each copied batch's link relative to the monitor's page."""
    links = {}
    for batch_id in data.batches:
        source = stored_report(roots, data.monitor, batch_id)
        if source is None:
            continue
        write_private_file(folder / REPORTS_DIR / stem / f"{batch_id}.html", source.read_bytes())
        links[batch_id] = f"../{href(REPORTS_DIR, stem, f'{batch_id}.html')}"
    return links


def _worst_latest(monitors: Sequence[MonitorData]) -> str:
    """The worst severity among the monitors' latest verdicts (colours the index's header)."""
    graded = [m.latest["worst_severity"] for m in monitors if m.latest and m.latest["status"] in GRADED_RUNS]
    return max(graded, key=rank_of, default="none")
