"""The site's pictures as inline SVG drawn here (no plotting library, no script): sparklines, the batch ×
check heat map and line charts with a band. Every text from data is escaped, and every mark carries a
`<title>` with its values, which browsers show on hover."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard, TypeVar

from markupsafe import Markup

from driftline.tasks.tools.drawing import escaped, nice_ticks, svg
from driftline.tasks.report.figures import BAND_COLOUR, SEVERITY_COLOURS
from driftline.tasks.site.gather import HeatCell, HeatMap

INK = "#1f2933"
MUTED = "#616e7c"
GRID = "#e4e7eb"
EMPTY_CELL = "#ffffff"
# A mark drawn on cells whose colour alone says skipped or error.
STATE_MARKS = {"skipped": "–", "error": "!"}
FONT = "-apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"

Number = float | int | None
Point = TypeVar("Point", tuple[float, float], tuple[float, float, float])


def _finite(value: Number) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def _svg(width: float, height: float, label: str, body: Sequence[str], css_class: str = "") -> Markup:
    """An `<svg>` element of a fixed size (a `chart` scales down with its page) with an accessible label."""
    return Markup(
        svg(width, height, body, css_class=css_class, role="img", aria_label=escaped(label), font_family=FONT)
    )


def _segments(points: Sequence[Point | None]) -> list[list[Point]]:
    """Runs of consecutive points, split where a point is missing."""
    runs: list[list[Point]] = [[]]
    for point in points:
        if point is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def _polyline(points: Sequence[tuple[float, float]], colour: str, width: float, dashed: bool = False) -> str:
    coordinates = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    return (
        f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="{width}"'
        f' stroke-linejoin="round"{dash}/>'
    )


def _dot(x: float, y: float, colour: str, radius: float, title: str) -> str:
    title_element = f"<title>{escaped(title)}</title>"
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{colour}">{title_element}</circle>'


def spread(count: int, start: float, end: float) -> list[float]:
    """`count` evenly spaced positions from `start` to `end` (the middle when there is one)."""
    if count == 1:
        return [(start + end) / 2]
    step = (end - start) / (count - 1)
    return [start + i * step for i in range(count)]


def sparkline(
    values: Sequence[Number],
    *,
    top: float,
    label: str,
    titles: Sequence[str],
    colours: Sequence[str] | None = None,
    width: int = 132,
    height: int = 30,
) -> Markup:
    """A small line of `values` on [0, `top`] (None leaves a gap), each point a dot with its title,
    coloured by `colours` (else the band colour)."""
    pad = 4.0
    xs = spread(len(values), pad, width - pad)
    points = [
        (x, height - pad - (min(max(v, 0.0), top) / top) * (height - 2 * pad)) if _finite(v) else None
        for x, v in zip(xs, values, strict=True)
    ]
    body = [f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="{GRID}"/>']
    body += [_polyline(run, MUTED, 1.2) for run in _segments(points)]
    for i, point in enumerate(points):
        if point is not None:
            body.append(_dot(*point, colours[i] if colours else BAND_COLOUR, 2.2, titles[i]))
    return _svg(width, height, label, body)


CELL_W, CELL_H, CELL_GAP = 22, 18, 2
LABEL_CHARS = 44
BATCH_CHARS = 22
CHAR_W = 6.6  # px per character of the 11px labels, to size the margins


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def heat_map(heat: HeatMap, *, describe: Callable[[HeatCell], str], batch_links: Mapping[str, str]) -> Markup:
    """The batch × check grid: one row per check, one column per batch (oldest left), each cell
    coloured by its state with its description as title; a batch label links to its run report
    when `batch_links` has one."""
    left = min(LABEL_CHARS, max((len(c) for c in heat.checks), default=8)) * CHAR_W + 12
    top = min(BATCH_CHARS, max((len(b) for b in heat.batches), default=4)) * CHAR_W * 0.8 + 18
    width = left + len(heat.batches) * (CELL_W + CELL_GAP) + 40
    height = top + max(len(heat.checks), 1) * (CELL_H + CELL_GAP) + 8
    body = []
    for j, batch_id in enumerate(heat.batches):
        x = left + j * (CELL_W + CELL_GAP) + CELL_W / 2
        text = (
            f'<text x="{x:.1f}" y="{top - 6:.1f}" font-size="11" fill="{INK}" '
            f'transform="rotate(-50 {x:.1f} {top - 6:.1f})">{escaped(_short(batch_id, BATCH_CHARS))}'
            f"<title>{escaped(batch_id)}</title></text>"
        )
        link = batch_links.get(batch_id)
        body.append(f'<a href="{escaped(link)}">{text}</a>' if link else text)
    for i, check in enumerate(heat.checks):
        y = top + i * (CELL_H + CELL_GAP)
        body.append(
            f'<text x="{left - 8:.1f}" y="{y + CELL_H - 5:.1f}" font-size="11" fill="{INK}" '
            f'text-anchor="end">{escaped(_short(check, LABEL_CHARS))}<title>{escaped(check)}</title></text>'
        )
        for j, batch_id in enumerate(heat.batches):
            body.append(_cell(heat.cell(batch_id, check), left + j * (CELL_W + CELL_GAP), y, describe))
    return _svg(width, height, "checks by batch, coloured by worst severity", body)


def _cell(cell: HeatCell | None, x: float, y: float, describe: Callable[[HeatCell], str]) -> str:
    """One heat-map cell: an outlined blank when the check did not run in the batch."""
    size = f'x="{x:.1f}" y="{y:.1f}" width="{CELL_W}" height="{CELL_H}" rx="3"'
    if cell is None:
        return f'<rect {size} fill="{EMPTY_CELL}" stroke="{GRID}"><title>not run in this batch</title></rect>'
    mark = STATE_MARKS.get(cell.state)
    text = (
        f'<text x="{x + CELL_W / 2:.1f}" y="{y + CELL_H - 5:.1f}" font-size="12" font-weight="700" '
        f'fill="#fff" text-anchor="middle" pointer-events="none">{mark}</text>'
        if mark
        else ""
    )
    colour = SEVERITY_COLOURS[cell.state]
    title = f"<title>{escaped(describe(cell))}</title>"
    return f'<rect {size} fill="{colour}" class="cell {cell.state}">{title}</rect>{text}'


@dataclass(frozen=True)
class Series:
    """One line of a chart: its name (legend and titles), values aligned on the batches (None or NaN
    leave a gap), colour and style."""

    name: str
    values: Sequence[Number]
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Band:
    """A shaded band between two value sequences aligned on the batches."""

    name: str
    lower: Sequence[Number]
    upper: Sequence[Number]
    colour: str = BAND_COLOUR


CHART_W, CHART_H = 760, 250
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 56, 16, 30, 62
Y_TICKS = 5  # about this many gridlines
X_LABELS = 16


def value_range(
    *sequences: Iterable[Number], floor: float | None = None, ceiling: float | None = None
) -> tuple[float, float]:
    """The span of the finite values, padded by a tenth on each side (and clipped to `floor` and
    `ceiling`); (0, 1) when there is none."""
    finite = [float(v) for seq in sequences for v in seq if _finite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    pad = (high - low) * 0.1 or max(abs(high) * 0.05, 0.01)
    low, high = low - pad, high + pad
    return (low if floor is None else max(low, floor)), (high if ceiling is None else min(high, ceiling))


def line_chart(
    batches: Sequence[str],
    series: Sequence[Series],
    *,
    label: str,
    y_range: tuple[float, float],
    y_format: Callable[[float], str],
    band: Band | None = None,
    width: int = CHART_W,
) -> Markup:
    """Lines over the batches (oldest left) on `y_range` widened to nice gridlines, with an optional
    band behind them, a legend on top, and a titled dot at every value."""
    ticks = nice_ticks(*y_range, Y_TICKS, cover=True)
    y_min, y_max = ticks[0], ticks[-1]
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = CHART_H - MARGIN_TOP - MARGIN_BOTTOM
    xs = spread(len(batches), MARGIN_LEFT + 10, MARGIN_LEFT + plot_w - 10)

    def y_of(value: float) -> float:
        return MARGIN_TOP + plot_h - (value - y_min) / (y_max - y_min) * plot_h

    body = []
    for tick in ticks:
        y = y_of(tick)
        body.append(
            f'<line x1="{MARGIN_LEFT}" y1="{y:.1f}" x2="{MARGIN_LEFT + plot_w}" y2="{y:.1f}" '
            f'stroke="{GRID}"/>'
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" font-size="11" fill="{MUTED}" '
            f'text-anchor="end">{escaped(y_format(tick))}</text>'
        )
    step = max(1, math.ceil(len(batches) / X_LABELS))
    base = MARGIN_TOP + plot_h + 14
    for x, batch_id in list(zip(xs, batches, strict=True))[::step]:
        body.append(
            f'<text x="{x:.1f}" y="{base}" font-size="11" fill="{INK}" text-anchor="end" '
            f'transform="rotate(-40 {x:.1f} {base})">{escaped(_short(batch_id, BATCH_CHARS))}</text>'
        )
    if band is not None:
        body += _band(xs, band, y_of)
    for line in series:
        points = [(x, y_of(float(v))) if _finite(v) else None for x, v in zip(xs, line.values, strict=True)]
        body += [_polyline(run, line.colour, 1.8, line.dashed) for run in _segments(points)]
        for batch_id, point, value in zip(batches, points, line.values, strict=True):
            if point is not None and value is not None:
                body.append(
                    _dot(*point, line.colour, 3, f"{batch_id} · {line.name}: {y_format(float(value))}")
                )
    body += _legend(
        [(s.name, s.colour, s.dashed) for s in series] + ([(band.name, band.colour, None)] if band else [])
    )
    return _svg(width, CHART_H, label, body, css_class="chart")


def _band(xs: Sequence[float], band: Band, y_of: Callable[[float], float]) -> list[str]:
    """One shaded polygon per run of batches where both bounds are known."""
    edges = [
        (x, y_of(float(lo)), y_of(float(hi))) if _finite(lo) and _finite(hi) else None
        for x, lo, hi in zip(xs, band.lower, band.upper, strict=True)
    ]
    return [_band_polygon(run, band.colour) for run in _segments(edges)]


def _band_polygon(run: Sequence[tuple[float, float, float]], colour: str) -> str:
    if len(run) == 1:  # a lone batch: a short bar
        x, low, high = run[0]
        return (
            f'<rect x="{x - 4:.1f}" y="{high:.1f}" width="8" height="{max(low - high, 1):.1f}" '
            f'fill="{colour}" fill-opacity="0.22"/>'
        )
    outline = [(x, high) for x, _, high in run] + [(x, low) for x, low, _ in reversed(run)]
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in outline)
    return f'<polygon points="{points}" fill="{colour}" fill-opacity="0.22" stroke="none"/>'


def _legend(items: Sequence[tuple[str, str, bool | None]]) -> list[str]:
    """Legend entries left to right above the plot: a line (a swatch for a band) and the name."""
    body, x = [], float(MARGIN_LEFT)
    for name, colour, dashed in items:
        if dashed is None:
            body.append(
                f'<rect x="{x:.1f}" y="9" width="18" height="10" fill="{colour}" fill-opacity="0.22"/>'
            )
        else:
            body.append(_polyline([(x, 14), (x + 18, 14)], colour, 2, dashed))
        body.append(f'<text x="{x + 24:.1f}" y="18" font-size="11" fill="{INK}">{escaped(name)}</text>')
        x += 24 + len(name) * CHAR_W + 18
    return body
