"""The site's two kinds of page as template contexts: the index row of each monitor and the page of
one monitor, with their pictures drawn and every value formatted (Jinja escapes the text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from driftline.checks.result import SEVERITIES, format_number
from driftline.tasks.report.figures import BATCH_COLOUR, SEVERITY_COLOURS
from driftline.tasks.site import svg
from driftline.tasks.site.gather import (
    GRADED_RUNS,
    NOTABLE,
    DriftShare,
    HeatCell,
    MonitorData,
    PerformanceSeries,
)

SHOWN_METRICS = 6  # metric values of a cell's worst target in its hover text
SHOWN_INCIDENTS = 5  # open incidents named in the index's hover text
REALISED_COLOUR = "#1f2933"
HEADLINE_COLOUR = "#7f8fa6"
UNKNOWN_COLOUR = "#9e9e9e"
SMALL_CHART_W = 540  # the estimate charts, two abreast


def when(moment: datetime | None) -> str:
    """A UTC time to the minute, or a dash."""
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment is not None else "–"


def percent(value: float) -> str:
    return f"{value:.0%}"


def describe_cell(cell: HeatCell) -> str:
    """The hover text of a heat-map cell: state, counts, and the worst target's values."""
    head = f"{cell.check} · {cell.batch_id}: {cell.state}"
    counts = [f"{cell.graded} graded", f"{cell.at_medium} at {NOTABLE} or worse"] if cell.graded else []
    counts += [f"{cell.skipped} skipped"] * bool(cell.skipped) + [f"{cell.errors} error(s)"] * bool(
        cell.errors
    )
    lines = [head, ", ".join(counts)]
    if cell.worst_target is not None:
        values = ", ".join(f"{m} {format_number(v)}" for m, v in list(cell.values.items())[:SHOWN_METRICS])
        lines.append(f"worst: {cell.worst_target}" + (f" ({values})" if values else ""))
    return "\n".join(lines)


def drift_text(share: DriftShare) -> str:
    if share.share is None:
        return "no graded drift result"
    return f"{share.drifted} of {share.results} ({percent(share.share)})"


def _colour(severity: str) -> str:
    return SEVERITY_COLOURS.get(severity, UNKNOWN_COLOUR)


def severity_sparkline(data: MonitorData) -> Any:
    """Worst severity of each run (none at the bottom, high at the top)."""
    titles = [
        f"{run['batch_id']}: {run['worst_severity'] if run['status'] in GRADED_RUNS else run['status']}"
        for run in data.runs
    ]
    return svg.sparkline(
        data.severity_points(),
        top=len(SEVERITIES) - 1,
        label=f"worst severity of the last {len(data.runs)} runs",
        titles=titles,
        colours=[_colour(run["worst_severity"]) for run in data.runs],
    )


def drift_sparkline(data: MonitorData) -> Any:
    """Share of drift results at medium or worse in each run."""
    return svg.sparkline(
        data.drift_points(),
        top=1.0,
        label=f"drift share of the last {len(data.runs)} runs",
        titles=[f"{s.batch_id}: {drift_text(s)} drift results at {NOTABLE} or worse" for s in data.drift],
    )


def headline(data: MonitorData) -> dict[str, Any]:
    """The facts of a monitor's latest run: batch, time, status, worst severity, incidents, drift."""
    latest = data.latest or {}
    return {
        "monitor": data.monitor,
        "batch": latest.get("batch_id", "–"),
        "batch_time": when(latest.get("batch_time")),
        "status": latest.get("status", "no run"),
        "worst": latest.get("worst_severity", "none") if latest.get("status") in GRADED_RUNS else "–",
        "incidents": len(data.incidents),
        "drift_latest": drift_text(data.drift[-1]) if data.drift else "–",
    }


def index_row(data: MonitorData, page: str) -> dict[str, Any]:
    """One monitor's line of the index: its headline, link, sparklines and open incidents named."""
    titles = [f"{i['check']} / {i['target']}: {i['severity']}" for i in data.incidents[:SHOWN_INCIDENTS]]
    more = len(data.incidents) - SHOWN_INCIDENTS
    return {
        **headline(data),
        "href": page,
        "incident_titles": "\n".join(titles + ([f"and {more} more"] if more > 0 else [])),
        "severity_line": severity_sparkline(data),
        "drift_line": drift_sparkline(data),
    }


def drift_chart(data: MonitorData) -> Any:
    """The drift share per batch, with the stored headline share when the runs wrote one."""
    lines = [svg.Series(f"drift results at {NOTABLE} or worse", data.drift_points(), BATCH_COLOUR)]
    headline = [s.headline for s in data.drift]
    if any(h is not None for h in headline):
        lines.append(
            svg.Series("features drifted (run headline, low or worse)", headline, HEADLINE_COLOUR, True)
        )
    return svg.line_chart(
        data.batches, lines, label="drift share per batch", y_range=(0.0, 1.0), y_format=percent
    )


def performance_chart(series: PerformanceSeries) -> dict[str, Any]:
    """One estimated metric with its band, against the realised value where labels gave one."""
    y_range = svg.value_range(series.estimated, series.lower, series.upper, series.realised)
    chart = svg.line_chart(
        series.batches,
        [
            svg.Series("estimated", _values(series.estimated), svg.BAND_COLOUR),
            svg.Series("realised", _values(series.realised), REALISED_COLOUR, dashed=True),
        ],
        band=svg.Band("band", _values(series.lower), _values(series.upper)),
        label=f"{series.check} {series.target}: estimated against realised",
        y_range=y_range,
        y_format=lambda v: format_number(float(v)),
        width=SMALL_CHART_W,
    )
    realised = int(np.isfinite(series.realised).sum())
    outside = _outside(series)
    return {
        "title": f"{series.target}",
        "check": series.check,
        "svg": chart,
        "note": (
            f"realised in {realised} of {len(series.batches)} batches; {outside} outside the band"
            if realised
            else f"no realised {series.target} stored: labels not joined yet, or {series.realised_check} "
            "does not measure it"
        ),
    }


def _values(array: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in array]


def _outside(series: PerformanceSeries) -> int:
    """Batches whose realised value lies outside the estimate's band."""
    known = np.isfinite(series.realised) & np.isfinite(series.lower) & np.isfinite(series.upper)
    realised = series.realised[known]
    return int(np.count_nonzero((realised < series.lower[known]) | (realised > series.upper[known])))


def run_rows(data: MonitorData, reports: Mapping[str, str]) -> list[dict[str, Any]]:
    """The runs table, newest first, each with its report link when it has one."""
    return [
        {
            "batch": run["batch_id"],
            "batch_time": when(run["batch_time"]),
            "status": run["status"],
            "worst": run["worst_severity"] if run["status"] in GRADED_RUNS else "–",
            "rows": format_number(run["rows"]),
            "drift": drift_text(share),
            "finished": when(run["finished_at"]),
            "report": reports.get(run["batch_id"]),
        }
        for run, share in reversed(list(zip(data.runs, data.drift, strict=True)))
    ]


def monitor_page(data: MonitorData, reports: Mapping[str, str], index_href: str) -> dict[str, Any]:
    """The context of one monitor's page."""
    return {
        "monitor": data.monitor,
        "index": index_href,
        "row": headline(data),
        "incidents": [{**incident, "opened_at": when(incident["opened_at"])} for incident in data.incidents],
        "runs": run_rows(data, reports),
        "heat": svg.heat_map(data.heat, describe=describe_cell, batch_links=reports)
        if data.heat.checks
        else None,
        "states": [*SEVERITIES, "skipped", "error"],
        "drift": drift_chart(data) if data.runs else None,
        "performance": [performance_chart(series) for series in data.performance],
    }


def index_page(monitors: Sequence[tuple[MonitorData, str]]) -> dict[str, Any]:
    """The context of the index: one row per monitor (already in order) with its page's link."""
    return {"rows": [index_row(data, page) for data, page in monitors]}
