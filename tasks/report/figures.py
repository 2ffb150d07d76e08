"""The report's pictures, drawn from result details and metric trends (never from raw rows).

Which picture a result gets is the figure its check declares for its metric (`Metric.figure`), and a
subset picture's direction is the one its check declares for the subset value, never inferred from
the numbers.

Each `*_data` function turns a result's details into the numbers a picture shows (tested against
independent computations); each `*_svg` function draws them as hand-written SVG on a `Chart` (no
plotting library: a report costs milliseconds, not the import and layout of one) and returns an SVG
data URI, so the page needs no file and no network. Every text from data is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from driftline.tasks.report.trends import Trend
from driftline.tasks.tools.drawing import escaped, nice_ticks, svg
from driftline.tasks.views.attribution_plots import FIGURES as ATTRIBUTION_FIGURES
from driftline.tasks.views.attribution_plots import svg_data_uri

if TYPE_CHECKING:
    from driftline.checks.base import Metric

REFERENCE_COLOUR = "#7f8fa6"
BATCH_COLOUR = "#e4572e"
BAND_COLOUR = "#4c78a8"
SEVERITY_COLOURS = {
    "none": "#2e7d32",
    "low": "#f2b300",
    "medium": "#ef6c00",
    "high": "#c62828",
    "skipped": "#9e9e9e",
    "error": "#6a1b9a",
}
THRESHOLD_COLOURS = ("#f2b300", "#ef6c00", "#c62828")
MAX_CATEGORIES = 10
MAX_SUBSETS = 12
INK = "#222222"
AXIS_COLOUR = "#555555"
GRID_COLOUR = "#e6e6e6"
FONT = "Helvetica, Arial, sans-serif"
FONT_PX = 11  # tick labels, legends and axis labels; titles are a pixel larger
CHAR_PX = 6.2  # average width of a character at FONT_PX, to size margins and legends
PX_PER_INCH = 100  # the figure sizes below are in inches, as the report's layout was designed
TICKS = 5


@dataclass(frozen=True)
class Picture:
    """One drawn figure: a caption and an SVG image data URI."""

    caption: str
    uri: str


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """A tick's label with as many decimals as the ticks' step needs."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(value) or 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{value:.{decimals}f}"


def percent_label(value: float, ticks: Sequence[float]) -> str:
    """A share's tick label in percent (no decimals, as the shares differ by whole percents)."""
    return f"{value:.0%}"


def padded(low: float, high: float, share: float = 0.05) -> tuple[float, float]:
    """[low, high] widened by `share` of its span on each side (one unit when it is a point)."""
    if high - low < 1e-12:
        return low - 1.0, high + 1.0
    margin = (high - low) * share
    return low - margin, high + margin


def finite_span(*values: Iterable[float]) -> tuple[float, float]:
    """The smallest and largest finite value of all `values` ((0, 1) when there is none)."""
    finite = [float(v) for seq in values for v in seq if v is not None and math.isfinite(v)]
    return (min(finite), max(finite)) if finite else (0.0, 1.0)


@dataclass
class Chart:
    """An SVG picture with a rectangular plot area and linear scales from data to pixels: marks are
    given in data units, labels and legends in pixels. Sizes are in inches (`PX_PER_INCH`)."""

    width: float
    height: float
    left: float
    bottom: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    top: float = 0.55
    right: float = 0.15
    parts: list[str] = field(default_factory=list)

    @property
    def area(self) -> tuple[float, float, float, float]:
        """The plot area in pixels: left, top, right and bottom edges."""
        return (
            self.left * PX_PER_INCH,
            self.top * PX_PER_INCH,
            (self.width - self.right) * PX_PER_INCH,
            (self.height - self.bottom) * PX_PER_INCH,
        )

    def x(self, value: float) -> float:
        """The pixel column of a data value on the x axis."""
        x0, _, x1, _ = self.area
        low, high = self.x_range
        return x0 + (x1 - x0) * (value - low) / (high - low)

    def y(self, value: float) -> float:
        """The pixel row of a data value on the y axis (up is larger)."""
        _, y0, _, y1 = self.area
        low, high = self.y_range
        return y1 - (y1 - y0) * (value - low) / (high - low)

    def add(self, element: str) -> None:
        self.parts.append(element)

    def box(self, x0: float, x1: float, y0: float, y1: float, colour: str, opacity: float = 1.0) -> None:
        """A filled rectangle between two data values on each axis."""
        left, right = sorted((self.x(x0), self.x(x1)))
        top, bottom = sorted((self.y(y0), self.y(y1)))
        fade = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
        self.add(
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" '
            f'fill="{colour}"{fade}/>'
        )

    def line(
        self, points: Iterable[tuple[float, float]], colour: str, width: float = 1.0, dash: str = ""
    ) -> None:
        """A polyline through data points (non-finite points break it into runs)."""
        for run in _runs(points):
            coordinates = " ".join(f"{self.x(x):.1f},{self.y(y):.1f}" for x, y in run)
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            self.add(
                f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="{width:g}" '
                f'stroke-linejoin="round"{dashes}/>'
            )

    def dot(self, x: float, y: float, colour: str, radius: float = 2.5, outline: str = "") -> None:
        """A filled circle at a data point (none at a non-finite one)."""
        if not (math.isfinite(x) and math.isfinite(y)):
            return
        ring = f' stroke="{outline}" stroke-width="0.8"' if outline else ""
        self.add(f'<circle cx="{self.x(x):.1f}" cy="{self.y(y):.1f}" r="{radius:g}" fill="{colour}"{ring}/>')

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        anchor: str = "start",
        size: float = FONT_PX,
        colour: str = INK,
        rotate: float = 0.0,
    ) -> None:
        """Text at a pixel position (escaped)."""
        turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
        self.add(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" fill="{colour}" '
            f'text-anchor="{anchor}"{turn}>{escaped(text)}</text>'
        )

    def x_axis(
        self,
        ticks: Sequence[tuple[float, str]],
        label: str,
        rotate: float = 0.0,
    ) -> None:
        """Vertical grid lines and labels at the x ticks, the axis line and its label (a line each)."""
        x0, y0, x1, y1 = self.area
        for value, text in ticks:
            px = self.x(value)
            self.add(
                f'<line x1="{px:.1f}" y1="{y0:.1f}" x2="{px:.1f}" y2="{y1:.1f}" stroke="{GRID_COLOUR}"/>'
            )
            if rotate:
                self.text(px, y1 + 14, text, anchor="end", rotate=rotate)
            else:
                self.text(px, y1 + 14, text, anchor="middle")
        self.add(f'<line x1="{x0:.1f}" y1="{y1:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{AXIS_COLOUR}"/>')
        bottom = self.height * PX_PER_INCH
        lines = label.split("\n") if label else []
        for i, text in enumerate(lines):
            self.text((x0 + x1) / 2, bottom - 6 - 14 * (len(lines) - 1 - i), text, anchor="middle")

    def y_axis(self, ticks: Sequence[tuple[float, str]], label: str = "", grid: bool = True) -> None:
        """Horizontal grid lines (or none, for category rows) and labels at the y ticks, the axis line
        and its label, turned along the axis."""
        x0, y0, x1, y1 = self.area
        for value, text in ticks:
            py = self.y(value)
            if grid:
                self.add(
                    f'<line x1="{x0:.1f}" y1="{py:.1f}" x2="{x1:.1f}" y2="{py:.1f}" stroke="{GRID_COLOUR}"/>'
                )
            self.text(x0 - 5, py + 4, text, anchor="end")
        self.add(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x0:.1f}" y2="{y1:.1f}" stroke="{AXIS_COLOUR}"/>')
        if label:
            self.text(12, (y0 + y1) / 2, label, anchor="middle", rotate=-90)

    def titles(self, title: str, right: str = "") -> None:
        """The title on the first line above the plot area, an optional note at its right."""
        x0, _, x1, _ = self.area
        self.text(x0, 16, title, size=FONT_PX + 1)
        if right:
            self.text(x1, 16, right, anchor="end", size=FONT_PX - 1, colour=AXIS_COLOUR)

    def legend(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """One row of (label, colour, kind) entries under the title; kind is `box`, `line`,
        `dashed`, `dotted` or `marker` (a line with a dot)."""
        x, y = self.area[0], 34.0
        for text, colour, kind in entries:
            if kind == "box":
                self.add(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="14" height="9" fill="{colour}"/>')
            else:
                dash = {"dashed": ' stroke-dasharray="5 3"', "dotted": ' stroke-dasharray="1.5 2"'}.get(
                    kind, ""
                )
                self.add(
                    f'<line x1="{x:.1f}" y1="{y - 3.5:.1f}" x2="{x + 14:.1f}" y2="{y - 3.5:.1f}" '
                    f'stroke="{colour}" stroke-width="1.8"{dash}/>'
                )
                if kind == "marker":
                    self.add(f'<circle cx="{x + 7:.1f}" cy="{y - 3.5:.1f}" r="2.5" fill="{colour}"/>')
            self.text(x + 18, y, text)
            x += 30 + CHAR_PX * len(text)

    def uri(self) -> str:
        """The picture as a base64 SVG data URI."""
        width, height = self.width * PX_PER_INCH, self.height * PX_PER_INCH
        document = svg(width, height, self.parts, document=True, background="#ffffff", font_family=FONT)
        return svg_data_uri(document)


def _runs(points: Iterable[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """Runs of consecutive finite points."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if math.isfinite(x) and math.isfinite(y):
            runs[-1].append((x, y))
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def value_ticks(
    low: float, high: float, label: Callable[[float, Sequence[float]], str] = tick_label
) -> list[tuple[float, str]]:
    """Round ticks within [low, high] with their labels."""
    ticks = nice_ticks(low, high)
    return [(t, label(t, ticks)) for t in ticks]


# --- numeric drift: reference vs batch histogram ------------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    """Counts of the reference and the batch in the check's bins, with finite outer edges for drawing."""

    edges: np.ndarray
    reference_counts: np.ndarray
    current_counts: np.ndarray

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self.edges)

    def density(self, counts: np.ndarray) -> np.ndarray:
        """Share of rows per unit of the axis (the area of each bar is its share)."""
        total = counts.sum()
        return counts / (total * self.widths) if total > 0 else np.zeros(len(counts))


def histogram_data(details: Mapping[str, Any], rows: int | None) -> Histogram:
    """Reference and batch counts per bin from a numeric drift result's details.

    The interior edges are the check's; the outer (open) bins are drawn from the smaller of the two
    minima to the larger of the two maxima (`reference_range`, `current_range`), or one neighbouring
    bin width beyond the outer edges when the details predate those fields.
    """
    interior = np.asarray(details["edges"], dtype=float)
    ref_shares = np.asarray(details["reference_shares"], dtype=float)
    cur_shares = np.asarray(details["current_shares"], dtype=float)
    if len(ref_shares) != len(interior) + 1 or len(cur_shares) != len(ref_shares):
        raise ValueError(
            f"histogram: {len(interior)} edges need {len(interior) + 1} shares, got "
            f"{len(ref_shares)} reference and {len(cur_shares)} batch shares"
        )
    ranges = [details.get("reference_range"), details.get("current_range")]
    known = [r for r in ranges if r]
    if known:
        low = min(r[0] for r in known)
        high = max(r[1] for r in known)
    elif len(interior) >= 2:
        low, high = interior[0] - (interior[1] - interior[0]), interior[-1] + (interior[-1] - interior[-2])
    elif len(interior) == 1:
        low, high = interior[0] - 1.0, interior[0] + 1.0
    else:
        low, high = 0.0, 1.0
    low = min(low, interior[0]) if len(interior) else low
    high = max(high, interior[-1]) if len(interior) else high
    if high <= low:
        high = low + 1.0
    edges = np.r_[low, interior, high]
    # Zero-width outer bins (a minimum equal to the first edge) are widened a little so they draw.
    span = high - low
    edges[0] = min(edges[0], edges[1] - span * 1e-3)
    edges[-1] = max(edges[-1], edges[-2] + span * 1e-3)
    batch_rows = (rows or 0) - int(details.get("dropped_rows") or 0)
    reference_rows = int(details.get("reference_rows") or 0)
    return Histogram(
        edges=edges,
        reference_counts=np.rint(ref_shares * reference_rows).astype(np.int64),
        current_counts=np.rint(cur_shares * max(batch_rows, 0)).astype(np.int64),
    )


def drift_histogram_svg(result: Mapping[str, Any]) -> str:
    """Reference vs batch histogram (densities on the check's own bins) of a numeric drift result."""
    hist = histogram_data(result["details"], result.get("rows"))
    reference, current = hist.density(hist.reference_counts), hist.density(hist.current_counts)
    top = max(float(reference.max(initial=0.0)), float(current.max(initial=0.0))) * 1.05 or 1.0
    chart = Chart(
        5.4, 2.9, left=0.65, bottom=0.5, x_range=(hist.edges[0], hist.edges[-1]), y_range=(0.0, top)
    )
    chart.y_axis(value_ticks(0.0, top), "share per unit")
    chart.x_axis(value_ticks(hist.edges[0], hist.edges[-1]), str(result["target"]))
    for low, high, density in zip(hist.edges[:-1], hist.edges[1:], reference, strict=True):
        chart.box(low, high, 0.0, density, REFERENCE_COLOUR, opacity=0.55)
    steps = [(hist.edges[0], 0.0)]
    for low, high, density in zip(hist.edges[:-1], hist.edges[1:], current, strict=True):
        steps += [(low, density), (high, density)]
    chart.line([*steps, (hist.edges[-1], 0.0)], BATCH_COLOUR, width=1.8)
    outside = result["details"].get("out_of_range_share")
    chart.titles(
        _metric_title(result), f"{outside:.1%} of the batch outside the reference range" if outside else ""
    )
    chart.legend(
        [
            (f"reference ({hist.reference_counts.sum():,} rows)", REFERENCE_COLOUR, "box"),
            (f"batch ({hist.current_counts.sum():,} rows)", BATCH_COLOUR, "line"),
        ]
    )
    return chart.uri()


# --- categorical drift: category bars -----------------------------------------------------------------


def category_data(details: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(category, reference share, batch share) of the categories whose share moved most."""
    changes = details["largest_changes"]
    return [(str(name), float(s["reference"]), float(s["current"])) for name, s in changes.items()][
        :MAX_CATEGORIES
    ]


def category_bars_svg(result: Mapping[str, Any]) -> str:
    """Reference vs batch share of the categories that moved most (largest change on top)."""
    rows = category_data(result["details"])
    top = max((max(r, c) for _, r, c in rows), default=0.0) * 1.05 or 1.0
    chart = Chart(
        5.4,
        max(2.2, 1.3 + 0.26 * len(rows)),
        left=_label_margin(n for n, _, _ in rows),
        bottom=0.5,
        x_range=(0.0, top),
        y_range=(-0.5, len(rows) - 0.5),
    )
    chart.x_axis(value_ticks(0.0, top, percent_label), "share of rows")
    slots = range(len(rows))[::-1]  # the first row on top
    for y, (_, reference, current) in zip(slots, rows, strict=True):
        chart.box(0.0, reference, y, y + 0.4, REFERENCE_COLOUR)
        chart.box(0.0, current, y - 0.4, y, BATCH_COLOUR)
    chart.y_axis(
        [(y, name) for y, (name, _, _) in zip(slots, rows, strict=True)], str(result["target"]), grid=False
    )
    chart.titles(_metric_title(result))
    chart.legend([("reference", REFERENCE_COLOUR, "box"), ("batch", BATCH_COLOUR, "box")])
    return chart.uri()


# --- subsets: worst subsets with the overall line -----------------------------------------------------


def higher_is_better(check: str) -> bool:
    """Whether higher values of a subset check's metric are better, as the check declares the
    direction of its subset value."""
    from driftline.checks.subset import SUBSET_VALUE

    return not declared_metrics(check)[SUBSET_VALUE].higher_is_worse


def subset_data(result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], float | None, bool]:
    """The subsets, worst first, the whole-batch value they were compared with (only for the audit
    comparison, `compare_to: batch`; None when each subset is compared with itself in the reference),
    and whether higher values are better."""
    details = result["details"]
    better_high = higher_is_better(result["check"])
    subsets = [s for s in details["subsets"] if s.get("value") is not None and math.isfinite(s["value"])]
    if details.get("compare_to", "reference") == "reference":
        subsets.sort(key=lambda s: -math.inf if s.get("change") is None else s["change"], reverse=True)
        return subsets[:MAX_SUBSETS], None, better_high
    subsets.sort(key=lambda s: s["value"], reverse=not better_high)
    return subsets[:MAX_SUBSETS], float(result["metrics"]["overall_value"]), better_high


def subset_bars_svg(result: Mapping[str, Any]) -> str:
    """The worst subsets' batch values (95% intervals, graded ones coloured) with each subset's
    reference value as a tick, or with the whole batch's value as a line in the audit comparison; the
    axis says which way is better."""
    subsets, overall, better_high = subset_data(result)
    metric = result["details"].get("metric", "value")
    better = "higher is better" if better_high else "lower is better"
    labels = [f"{s['subset']}  (n={s['rows']:,})" for s in subsets]
    values = [float(s["value"]) for s in subsets]
    errors = [_interval(s) for s in subsets]
    references = [float(s["reference_value"]) if _has_reference_value(s) else math.nan for s in subsets]
    span = finite_span(
        [0.0],
        [v - e for v, e in zip(values, errors, strict=True)],
        [v + e for v, e in zip(values, errors, strict=True)],
        references if overall is None else [overall],
    )
    low, high = padded(*span)
    chart = Chart(
        5.4,
        max(2.4, 1.3 + 0.26 * len(subsets)),
        left=_label_margin(labels),
        bottom=0.65,
        top=0.4,
        x_range=(0.0 if span[0] >= 0 else low, high),
        y_range=(-0.5, len(subsets) - 0.5),
    )
    if overall is None:
        label = (
            f"{metric} per subset in the batch ({better})\n95% intervals; |: the same subset in the reference"
        )
    else:
        label = f"{metric} per subset (95% interval; {better})"
    chart.x_axis(value_ticks(*chart.x_range), label)
    slots = range(len(subsets))[::-1]  # the worst subset on top
    for y, subset, value, error, reference in zip(slots, subsets, values, errors, references, strict=True):
        chart.box(
            0.0, value, y - 0.3, y + 0.3, REFERENCE_COLOUR if subset.get("not_graded") else BATCH_COLOUR
        )
        if error > 0:
            chart.line([(value - error, y), (value + error, y)], "#333333", width=0.8)
        if overall is None:
            chart.line([(reference, y - 0.4), (reference, y + 0.4)], INK, width=1.5)
    if overall is not None:
        chart.line([(overall, -0.5), (overall, len(subsets) - 0.5)], INK, width=1.2, dash="5 3")
        chart.text(chart.x(overall) + 3, chart.area[1] - 3, f"whole batch {overall:.3f}", size=FONT_PX - 1)
    chart.y_axis(list(zip(slots, labels, strict=True)), grid=False)
    chart.titles(_metric_title(result))
    return chart.uri()


def _interval(subset: Mapping[str, Any]) -> float:
    """Half the width of a subset value's 95% interval (0 when its standard error is unknown)."""
    error = subset.get("std_error") or 0.0
    return 1.96 * error if math.isfinite(error) else 0.0


def _has_reference_value(subset: Mapping[str, Any]) -> bool:
    value = subset.get("reference_value")
    return value is not None and math.isfinite(value)


# --- calibration ------------------------------------------------------------------------------------


def calibration_data(details: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin centres of the uniform score bins and the reference and batch positive rates (NaN if empty)."""
    ref = np.array([np.nan if v is None else v for v in details["reference_curve"]], dtype=float)
    cur = np.array([np.nan if v is None else v for v in details["current_curve"]], dtype=float)
    centres = (np.arange(len(ref)) + 0.5) / len(ref)
    return centres, ref, cur


def calibration_svg(result: Mapping[str, Any]) -> str:
    """Calibration curves: observed positive rate per score bin, reference vs batch, and the diagonal."""
    centres, ref, cur = calibration_data(result["details"])
    chart = Chart(5.4, 2.9, left=0.65, bottom=0.5, x_range=(0.0, 1.0), y_range=(0.0, 1.0))
    chart.y_axis(value_ticks(0.0, 1.0), "observed positive rate")
    chart.x_axis(value_ticks(0.0, 1.0), f"score ({result['target']}) bin")
    chart.line([(0.0, 0.0), (1.0, 1.0)], "#bbbbbb", dash="1.5 2")
    for rates, colour in ((ref, REFERENCE_COLOUR), (cur, BATCH_COLOUR)):
        chart.line(zip(centres, rates, strict=True), colour, width=1.5)
        for x, y in zip(centres, rates, strict=True):
            chart.dot(x, y, colour)
    chart.titles(_metric_title(result))
    chart.legend(
        [
            ("perfectly calibrated", "#bbbbbb", "dotted"),
            ("reference", REFERENCE_COLOUR, "marker"),
            ("batch", BATCH_COLOUR, "marker"),
        ]
    )
    return chart.uri()


# --- trends -----------------------------------------------------------------------------------------


def trend_svg(trend: Trend, thresholds: Sequence[float] | None = None) -> str:
    """A metric over the last runs: points coloured by severity, the baseline band, the thresholds."""
    count = len(trend.values)
    shown = list(thresholds or ())
    low, high = padded(*finite_span(trend.values, trend.lower, trend.upper, shown))
    chart = Chart(
        5.4, 2.6, left=0.65, bottom=0.75, top=0.35, x_range=(-0.5, count - 0.5), y_range=(low, high)
    )
    chart.y_axis(value_ticks(low, high), trend.metric)
    step = max(1, math.ceil(count / 12))
    chart.x_axis([(i, trend.batches[i]) for i in range(0, count, step)], "", rotate=-30)
    for i, (lower, upper) in enumerate(zip(trend.lower, trend.upper, strict=True)):
        if math.isfinite(lower) and math.isfinite(upper):
            chart.box(i - 0.5, i + 0.5, lower, upper, BAND_COLOUR, opacity=0.18)
    for value, colour in zip(shown, THRESHOLD_COLOURS[-len(shown) :], strict=False):
        chart.line([(-0.5, value), (count - 0.5, value)], colour, width=0.8, dash="5 3")
    chart.line(enumerate(trend.values), "#444444", width=1.2)
    for i, (value, severity) in enumerate(zip(trend.values, trend.severities, strict=True)):
        chart.dot(i, value, SEVERITY_COLOURS.get(severity, "#444444"), radius=3.0, outline="#ffffff")
    chart.titles(f"{trend.metric} over the last {count} run(s)")
    return chart.uri()


def sparkline_svg(trend: Trend, width: int = 120, height: int = 26) -> str:
    """A tiny inline SVG of a series with its band for the newest run (table cells); no ids, no script."""
    values = trend.values
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return ""
    band = [v for v in (trend.lower[-1], trend.upper[-1]) if np.isfinite(v)]
    low, high = float(min([finite.min(), *band])), float(max([finite.max(), *band]))
    if high - low < 1e-12:
        low, high = low - 1.0, high + 1.0
    pad = 3.0

    def xy(i: int, v: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * (i / max(len(values) - 1, 1))
        y = pad + (height - 2 * pad) * (1 - (v - low) / (high - low))
        return round(x, 1), round(y, 1)

    parts = []
    if len(band) == 2:
        _, top = xy(0, band[1])
        _, bottom = xy(0, band[0])
        parts.append(
            f'<rect x="0" y="{top}" width="{width}" height="{max(bottom - top, 0.5)}" fill="{BAND_COLOUR}" '
            'fill-opacity="0.15"/>'
        )
    points = " ".join(f"{x},{y}" for x, y in (xy(i, v) for i, v in enumerate(values) if np.isfinite(v)))
    parts.append(f'<polyline points="{points}" fill="none" stroke="#555555" stroke-width="1.2"/>')
    last = len(values) - 1
    if np.isfinite(values[last]):
        x, y = xy(last, float(values[last]))
        colour = SEVERITY_COLOURS.get(trend.severities[last], "#444444")
        parts.append(f'<circle cx="{x}" cy="{y}" r="2.6" fill="{colour}"/>')
    parts.append(f"<title>{escaped(trend.metric)}: " + ", ".join(_short(v) for v in values) + "</title>")
    return svg(width, height, parts, css_class="spark", namespace=False, role="img")


# --- attribution (drawn by driftline.tasks.views.attribution_plots) -----------------------------------------

ATTRIBUTION_CAPTIONS = {"tree": "slices of the AUC attribution", "matrix": "AUC per cross of slices"}


def check_pictures(check: str, results: Sequence[Mapping[str, Any]]) -> list[Picture]:
    """The pictures of a whole check that its metrics declare (the attribution's slice tree and pair
    cross matrix), as SVG data URIs, drawn from each of its `ok` results that carries one."""
    kinds = [kind for kind in declared_figures(check) if kind in ATTRIBUTION_FIGURES]
    pictures = []
    for r in results:
        details = r.get("details") or {}
        if r["check"] != check or r["status"] != "ok":
            continue
        for kind in kinds:
            if kind in details:
                svg = ATTRIBUTION_FIGURES[kind](details)
                pictures.append(Picture(ATTRIBUTION_CAPTIONS[kind], svg_data_uri(svg)))
    return pictures


# --- which picture: the figure a result's metrics declare ---------------------------------------------


def declared_metrics(check: str) -> Mapping[str, Metric]:
    """The metrics a check declares (none for a check the catalog does not know; a stored name is never
    imported)."""
    from driftline.checks import registry

    known = registry.known(check)
    return known.declared_metrics if known is not None else {}


def declared_figures(check: str) -> list[str]:
    """The figures a check's metrics declare, each once, in declaration order."""
    return list(dict.fromkeys(m.figure for m in declared_metrics(check).values() if m.figure))


def figure_of(result: Mapping[str, Any]) -> str | None:
    """The figure its check declares for a result: that of the first of its metrics declaring one."""
    declared = declared_metrics(result["check"])
    figures = (declared[m].figure for m in result.get("metrics") or {} if m in declared)
    return next((f for f in figures if f), None)


def distribution_picture(result: Mapping[str, Any]) -> Picture:
    """Reference vs batch: a histogram on a numeric target's bins, else bars of the categories (or
    terms) whose share moved most."""
    if "edges" in result["details"]:
        return Picture("reference vs batch distribution", drift_histogram_svg(result))
    return Picture("categories whose share moved most", category_bars_svg(result))


def subsets_picture(result: Mapping[str, Any]) -> Picture:
    """The subsets against the whole batch (audit) or against themselves in the reference."""
    if result["details"]["compare_to"] == "batch":
        return Picture("worst subsets against the whole batch", subset_bars_svg(result))
    return Picture("subsets against the same subsets in the reference", subset_bars_svg(result))


def calibration_picture(result: Mapping[str, Any]) -> Picture:
    """The batch's and the reference's calibration curves."""
    return Picture("calibration curves", calibration_svg(result))


# The picture of one result, per figure its metric declares (`Metric.figure`); the attribution's
# figures picture a whole check (`check_pictures`).
RESULT_PICTURES: dict[str, Callable[[Mapping[str, Any]], Picture]] = {
    "distribution": distribution_picture,
    "subsets": subsets_picture,
    "calibration": calibration_picture,
}


def explaining_picture(result: Mapping[str, Any]) -> Picture | None:
    """The picture that explains one failing result, as its check declares it (None: no picture)."""
    draw = RESULT_PICTURES.get(figure_of(result) or "")
    return draw(result) if draw else None


def _label_margin(labels: Iterable[object]) -> float:
    """Left margin (inches) that fits the longest tick label at the report's font size."""
    return 0.3 + CHAR_PX * max((len(str(label)) for label in labels), default=4) / PX_PER_INCH


def _metric_title(result: Mapping[str, Any], metric: str | None = None) -> str:
    metrics = result.get("metrics") or {}
    name = metric or next(iter(result.get("thresholds") or metrics), None)
    value = metrics.get(name) if name else None
    shown = f"{name} {_short(value)}" if name else ""
    return f"{result['target']}: {shown} ({result['severity']})"


def _short(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
