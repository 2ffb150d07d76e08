"""The report's pictures, drawn from result details and metric trends (never from raw rows).

Which picture a result gets is the figure its check declares for its metric (`Metric.figure`), and a
subset picture's direction is the one its check declares for the subset value, never inferred from
the numbers.

Each `*_data` function turns a result's details into the numbers a picture shows (tested against
independent computations); each `*_svg` function draws them with matplotlib (a figure object of its
own, no pyplot state) and returns an SVG data URI, so the page needs no file and no network.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from driftline.tasks.attribution_plots import FIGURES as ATTRIBUTION_FIGURES
from driftline.tasks.report.trends import Trend

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
STYLE = {
    "svg.fonttype": "none",
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#555555",
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}


@dataclass(frozen=True)
class Picture:
    """One drawn figure: a caption and an image data URI (SVG or PNG)."""

    caption: str
    uri: str


def _figure(width: float = 5.4, height: float = 2.9, left: float = 0.65, bottom: float = 0.5) -> Any:
    """A figure with fixed margins in inches (a layout engine would cost a second draw per figure)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(
        left=left / width, right=1 - 0.15 / width, bottom=bottom / height, top=1 - 0.35 / height
    )
    return figure


def _svg_uri(figure: Any) -> str:
    """The figure as a base64 SVG data URI (text kept as text, no timestamp)."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(figure)
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "driftline"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


def _styled(draw: Any) -> Any:
    """Run a drawing function under the report's matplotlib style."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    wrapped.__doc__ = draw.__doc__
    wrapped.__name__ = draw.__name__
    return wrapped


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


@_styled
def drift_histogram_svg(result: Mapping[str, Any]) -> str:
    """Reference vs batch histogram (densities on the check's own bins) of a numeric drift result."""
    hist = histogram_data(result["details"], result.get("rows"))
    figure = _figure()
    axes = figure.add_subplot()
    left, widths = hist.edges[:-1], hist.widths
    axes.bar(
        left,
        hist.density(hist.reference_counts),
        widths,
        align="edge",
        color=REFERENCE_COLOUR,
        alpha=0.55,
        label=f"reference ({hist.reference_counts.sum():,} rows)",
    )
    axes.stairs(
        hist.density(hist.current_counts),
        hist.edges,
        color=BATCH_COLOUR,
        linewidth=1.8,
        label=f"batch ({hist.current_counts.sum():,} rows)",
    )
    axes.set_xlabel(result["target"])
    axes.set_ylabel("share per unit")
    axes.set_title(_metric_title(result), loc="left")
    axes.legend(loc="best")
    outside = result["details"].get("out_of_range_share")
    if outside:
        axes.set_title(
            f"{outside:.1%} of the batch outside the reference range",
            loc="right",
            fontsize=7,
            color="#555555",
        )
    return _svg_uri(figure)


# --- categorical drift: category bars -----------------------------------------------------------------


def category_data(details: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(category, reference share, batch share) of the categories whose share moved most."""
    changes = details["largest_changes"]
    return [(str(name), float(s["reference"]), float(s["current"])) for name, s in changes.items()][
        :MAX_CATEGORIES
    ]


@_styled
def category_bars_svg(result: Mapping[str, Any]) -> str:
    """Reference vs batch share of the categories that moved most (largest change on top)."""
    rows = category_data(result["details"])
    figure = _figure(height=max(2.2, 1.1 + 0.26 * len(rows)), left=_label_margin(n for n, _, _ in rows))
    axes = figure.add_subplot()
    y = np.arange(len(rows))[::-1]
    ref = [r for _, r, _ in rows]
    cur = [c for _, _, c in rows]
    axes.barh(y + 0.2, ref, 0.4, color=REFERENCE_COLOUR, label="reference")
    axes.barh(y - 0.2, cur, 0.4, color=BATCH_COLOUR, label="batch")
    axes.set_yticks(y, [name for name, _, _ in rows])
    axes.xaxis.set_major_formatter(_percent())
    axes.set_xlabel("share of rows")
    axes.set_ylabel(result["target"])
    axes.set_title(_metric_title(result))
    axes.legend(loc="lower right")
    return _svg_uri(figure)


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


@_styled
def subset_bars_svg(result: Mapping[str, Any]) -> str:
    """The worst subsets' batch values (95% intervals, graded ones coloured) with each subset's
    reference value as a tick, or with the whole batch's value as a line in the audit comparison; the
    axis says which way is better."""
    subsets, overall, better_high = subset_data(result)
    metric = result["details"].get("metric", "value")
    better = "higher is better" if better_high else "lower is better"
    labels = [f"{s['subset']}  (n={s['rows']:,})" for s in subsets]
    figure = _figure(height=max(2.4, 1.25 + 0.26 * len(subsets)), left=_label_margin(labels), bottom=0.65)
    axes = figure.add_subplot()
    y = np.arange(len(subsets))[::-1]
    values = [s["value"] for s in subsets]
    errors = [
        1.96 * (s.get("std_error") or 0.0) if math.isfinite(s.get("std_error") or 0.0) else 0.0
        for s in subsets
    ]
    colours = [REFERENCE_COLOUR if s.get("not_graded") else BATCH_COLOUR for s in subsets]
    axes.barh(y, values, 0.6, xerr=errors, color=colours, error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
    if overall is None:
        pairs = zip(y, subsets, strict=True)
        ticks = [(yi, s["reference_value"]) for yi, s in pairs if _has_reference_value(s)]
        axes.scatter([v for _, v in ticks], [yi for yi, _ in ticks], marker="|", s=180, color="#222222")
        axes.set_xlabel(
            f"{metric} per subset in the batch ({better})\n95% intervals; |: the same subset in the reference"
        )
    else:
        axes.axvline(overall, color="#222222", linestyle="--", linewidth=1.2)
        axes.annotate(
            f"whole batch {overall:.3f}",
            (overall, 1.0),
            xycoords=("data", "axes fraction"),
            ha="left",
            va="bottom",
            fontsize=7,
        )
        axes.set_xlabel(f"{metric} per subset (95% interval; {better})")
    axes.set_yticks(y, labels)
    axes.set_title(_metric_title(result))
    return _svg_uri(figure)


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


@_styled
def calibration_svg(result: Mapping[str, Any]) -> str:
    """Calibration curves: observed positive rate per score bin, reference vs batch, and the diagonal."""
    centres, ref, cur = calibration_data(result["details"])
    figure = _figure(height=2.9)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color="#bbbbbb", linestyle=":", linewidth=1, label="perfectly calibrated")
    axes.plot(centres, ref, "o-", color=REFERENCE_COLOUR, markersize=3, label="reference")
    axes.plot(centres, cur, "o-", color=BATCH_COLOUR, markersize=3, label="batch")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel(f"score ({result['target']}) bin")
    axes.set_ylabel("observed positive rate")
    axes.set_title(_metric_title(result))
    axes.legend(loc="upper left")
    return _svg_uri(figure)


# --- trends -----------------------------------------------------------------------------------------


@_styled
def trend_svg(trend: Trend, thresholds: Sequence[float] | None = None) -> str:
    """A metric over the last runs: points coloured by severity, the baseline band, the thresholds."""
    figure = _figure(height=2.6, bottom=0.75)
    axes = figure.add_subplot()
    x = np.arange(len(trend.values))
    axes.fill_between(x, trend.lower, trend.upper, color=BAND_COLOUR, alpha=0.18, linewidth=0, step="mid")
    axes.plot(x, trend.values, color="#444444", linewidth=1.2)
    colours = [SEVERITY_COLOURS.get(s, "#444444") for s in trend.severities]
    axes.scatter(x, trend.values, c=colours, s=22, zorder=3, edgecolors="white", linewidths=0.6)
    for value, colour in zip(thresholds or (), THRESHOLD_COLOURS[-len(thresholds or ()) :], strict=False):
        axes.axhline(value, color=colour, linestyle="--", linewidth=0.8)
    step = max(1, math.ceil(len(x) / 12))
    axes.set_xticks(x[::step], trend.batches[::step], rotation=30, ha="right")
    axes.set_ylabel(trend.metric)
    axes.set_title(f"{trend.metric} over the last {len(x)} run(s)")
    return _svg_uri(figure)


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

    parts = [
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
    ]
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
    parts.append(f"<title>{trend.metric}: " + ", ".join(_short(v) for v in values) + "</title></svg>")
    return "".join(parts)


# --- attribution (drawn by driftline.tasks.attribution_plots) -----------------------------------------

ATTRIBUTION_CAPTIONS = {"tree": "slices of the AUC attribution", "matrix": "AUC per cross of slices"}


def check_pictures(check: str, results: Sequence[Mapping[str, Any]]) -> list[Picture]:
    """The pictures of a whole check that its metrics declare (the attribution's slice tree and pair
    cross matrix), as PNG data URIs, drawn from each of its `ok` results that carries one."""
    kinds = [kind for kind in declared_figures(check) if kind in ATTRIBUTION_FIGURES]
    pictures = []
    for r in results:
        details = r.get("details") or {}
        if r["check"] != check or r["status"] != "ok":
            continue
        for kind in kinds:
            if kind in details:
                png = base64.b64encode(ATTRIBUTION_FIGURES[kind](details)).decode()
                pictures.append(Picture(ATTRIBUTION_CAPTIONS[kind], f"data:image/png;base64,{png}"))
    return pictures


# --- which picture: the figure a result's metrics declare ---------------------------------------------


def declared_metrics(check: str) -> Mapping[str, Metric]:
    """The metrics a check declares (none for a check no longer in the catalog)."""
    from driftline.checks import registry
    from driftline.checks.errors import CheckInputError

    try:
        return registry.get(check).declared_metrics
    except CheckInputError:
        return {}


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


def _label_margin(labels: Any) -> float:
    """Left margin (inches) that fits the longest tick label at the report's font size."""
    return 0.45 + 0.06 * max((len(str(label)) for label in labels), default=4)


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


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)
