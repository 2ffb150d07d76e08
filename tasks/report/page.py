"""The report page's content: sections per failing check with their pictures and trends, and the table
of every result, both in rank order (`tasks.views.ranking`: what matters first); each finding says its
comparison against the reference (`tasks.views.comparison`) and its feature's importance. Plain dicts for
the template; all drawing happens here, none in the template."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driftline.checks.result import format_number
from driftline.tasks.hindsight.premises import warning_lines
from driftline.tasks.report.figures import (
    Picture,
    check_pictures,
    explaining_picture,
    sparkline_svg,
    trend_svg,
)
from driftline.tasks.report.gather import ReportData
from driftline.tasks.report.summary import summary_section
from driftline.tasks.report.trends import Trend, band_floors, baseline_bands, graded_metrics, key_metric
from driftline.tasks.views.comparison import comparison_line
from driftline.tasks.views.diagnosis import diagnose
from driftline.tasks.views.ranking import importance_text, ranked

log = logging.getLogger(__name__)
MAX_TRENDS_PER_RESULT = 2


@dataclass
class Finding:
    """One failing result: its metrics, the picture that explains it and its trends."""

    target: str
    severity: str
    metrics: list[tuple[str, str, str]]
    pictures: list[Picture] = field(default_factory=list)
    trends: list[Picture] = field(default_factory=list)
    rows: str = ""
    failing_rows: str = ""
    model_impact: str = ""
    grade: str = ""  # the grade in words: the bound and the threshold it crossed
    outside_band: bool = False
    comparison: str = ""  # reference and batch values, the change, its bound and threshold
    importance: str = ""  # the feature's importance to the model and its rank


@dataclass
class Section:
    """A failing check: its summary line, check-wide pictures and its failing targets."""

    check: str
    anchor: str
    severity: str
    summary: str
    pictures: list[Picture]
    findings: list[Finding]


def _summary_line(check: str) -> str:
    """The check's one-line description from the catalog (empty for a check it does not know; a stored
    name is never imported)."""
    from driftline.checks import registry

    known = registry.known(check)
    return known.summary() if known is not None else ""


def _safely(what: str, draw: Any, *args: Any) -> Any:
    """A drawing that fails is left out of the page (logged), never fatal for the report."""
    try:
        return draw(*args)
    except Exception as exc:
        log.warning("report figure %s not drawn: %s: %s", what, type(exc).__name__, exc)
        return None


def _thresholds(result: Mapping[str, Any], metric: str) -> list[float] | None:
    values = (result.get("thresholds") or {}).get(metric)
    return [float(v) for v in values] if values else None


def _metric_rows(result: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    thresholds = result.get("thresholds") or {}
    return [
        (name, format_number(value), " / ".join(format_number(t) for t in thresholds.get(name, [])))
        for name, value in (result.get("metrics") or {}).items()
    ]


def sections(data: ReportData, trends: Mapping[tuple[str, str, str], Trend]) -> list[Section]:
    """One section per failing check, in the rank of its first finding; each failing target (in rank
    order) with its comparison, importance, picture and trends."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for result in data.failing():
        grouped.setdefault(result["check"], []).append(result)
    out = []
    for check, results in grouped.items():
        pictures = _safely(f"{check} pictures", check_pictures, check, data.results) or []
        findings = []
        for result in results:
            finding = Finding(
                target=str(result["target"]),
                severity=result["severity"],
                metrics=_metric_rows(result),
                rows=format_number(result.get("rows")),
                failing_rows=format_number(result.get("failing_rows")),
                model_impact=format_number(result.get("model_impact")),
                grade=result.get("reason") or "",
                comparison=comparison_line(result) or "",
                importance=importance_text(result),
            )
            picture = _safely(f"{check}/{result['target']}", explaining_picture, result)
            if picture is not None:
                finding.pictures.append(picture)
            for metric in graded_metrics(result)[:MAX_TRENDS_PER_RESULT]:
                trend = trends.get((check, str(result["target"]), metric))
                if trend is None:
                    continue
                uri = _safely(
                    f"{check}/{result['target']} trend", trend_svg, trend, _thresholds(result, metric)
                )
                if uri:
                    caption = f"{metric} over the last {len(trend.values)} run(s); shaded: the baseline band"
                    finding.trends.append(Picture(caption, uri))
                finding.outside_band = finding.outside_band or trend.latest_outside
            findings.append(finding)
        out.append(
            Section(
                check=check,
                anchor="check-" + check.replace(".", "-"),
                severity=results[0]["severity"],
                summary=_summary_line(check),
                pictures=pictures,
                findings=findings,
            )
        )
    return out


def table_rows(data: ReportData, trends: Mapping[tuple[str, str, str], Trend]) -> list[dict[str, Any]]:
    """Every result in rank order (those that did not run last), with its key metric and that metric's
    sparkline."""
    rows = []
    for result in ranked(data.verdicts()):
        metric = key_metric(result)
        trend = trends.get((result["check"], str(result["target"]), metric)) if metric else None
        value = (result.get("metrics") or {}).get(metric) if metric else None
        rows.append(
            {
                "check": result["check"],
                "target": str(result["target"]),
                "status": result["status"],
                "severity": result["severity"] if result["status"] == "ok" else result["status"],
                "metric": metric or "",
                "value": format_number(value) if metric else "",
                "sparkline": sparkline_svg(trend) if trend is not None and len(trend.values) > 1 else "",
                "outside_band": bool(trend and trend.latest_outside),
                "rows": format_number(result.get("rows")),
                "failing_rows": format_number(result.get("failing_rows")),
                "reason": result.get("reason") or "",
                "importance": importance_text(result),
            }
        )
    return rows


def page_context(data: ReportData, *, window: int = 10, k: float = 3.0) -> dict[str, Any]:
    """Everything the template shows."""
    wanted = {(r["check"], str(r["target"]), m) for r in data.results for m in (key_metric(r),) if m}
    wanted |= {(r["check"], str(r["target"]), m) for r in data.failing() for m in graded_metrics(r)}
    history = data.history.assign(target=data.history["target"].astype(str))
    trends = baseline_bands(history, wanted, window=window, k=k, floors=band_floors(data.results))
    before, after = data.neighbours()
    runs_shown = int(history["batch_id"].nunique()) if not history.empty else 0
    return {
        "data": data,
        "batch_time": data.batch_time.strftime("%Y-%m-%d %H:%M UTC") if data.batch_time else "",
        "counts": data.severity_counts(),
        "sections": sections(data, trends),
        "diagnoses": diagnose(data.results),
        "warnings": warning_lines(data.results),
        "summary": summary_section(data.results),
        "table": table_rows(data, trends),
        "previous": before,
        "next": after,
        "runs_shown": runs_shown,
        "window": window,
        "k": k,
        "rows": format_number(data.rows),
        "reference_rows": format_number(data.reference_rows),
    }
