"""The report's data summary: every column of the batch beside the reference, from the stored
`data.summary` results (never from raw rows). Numbers get a min–max strip with their quantiles,
categories small bars of their top values' shares; both are inline SVG drawn here, so the page needs
no plotting library. Everything from the data (column names, categories, reasons) is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.result import format_number
from driftline.tasks.tools.drawing import escaped, svg
from driftline.tasks.tools.safe_text import printable

STRIP_WIDTH = 220.0
STRIP_PAD = 4.0
BAR_WIDTH = 120.0
MAX_LABEL = 40
TOP_SHOWN = 5
BATCH_COLOUR = "#e4572e"
REFERENCE_COLOUR = "#7f8fa6"
STRIP_POINTS = ("min", "q05", "q25", "q50", "q75", "q95", "max")
NUMERIC_COLUMNS = ("mean", "std", "min", "q05", "q25", "q50", "q75", "q95", "max")
NUMBER_HEADINGS = frozenset({"count", "missing", "distinct", *NUMERIC_COLUMNS})

STYLE = """<style>
.dsum table { margin-bottom:14px; }
.dsum td.num { white-space:nowrap; }
.dsum .ref { display:block; color:#7f8fa6; font-size:11px; }
.dsum .muted { color:#7f8fa6; font-size:11px; }
.dsum .cat { display:flex; align-items:center; gap:6px; font-size:12px; }
.dsum .cat .name { min-width:90px; max-width:220px; overflow:hidden; text-overflow:ellipsis;
                   white-space:nowrap; }
.dsum .key { color:#616e7c; font-size:12px; }
.dsum .key i { display:inline-block; width:10px; height:8px; margin:0 4px 0 10px; }
.dsum ul { margin:4px 0 12px; color:#616e7c; font-size:12.5px; }
</style>"""


def text(value: Any) -> str:
    """Data shown as HTML text: invisible and reordering characters made visible, markup escaped."""
    return escaped(printable(str(value)))


def label(value: Any) -> str:
    """A category or column name cut to `MAX_LABEL` characters, escaped."""
    raw = str(value)
    return text(raw if len(raw) <= MAX_LABEL else raw[: MAX_LABEL - 1] + "…")


def share(value: Any) -> str:
    """A share in [0, 1] as a percentage for people ('–' when unknown)."""
    return "–" if value is None else f"{100 * float(value):.1f}%"


def whole(value: Any) -> str:
    """A count for people, with thousands separators ('–' when unknown)."""
    return "–" if value is None else f"{round(float(value)):,}"


def strip_positions(metrics: Mapping[str, Any], low: float, high: float) -> dict[str, float]:
    """The x coordinate of each of min, quantiles and max on a strip spanning `low`..`high`."""
    span = high - low
    usable = STRIP_WIDTH - 2 * STRIP_PAD

    def x(value: float) -> float:
        return STRIP_PAD + (usable * (value - low) / span if span > 0 else usable / 2)

    return {name: x(float(metrics[name])) for name in STRIP_POINTS if metrics.get(name) is not None}


def quantile_strip_svg(batch: Mapping[str, Any], reference: Mapping[str, Any] | None) -> str:
    """Reference (top) and batch (bottom) on one scale: a line from min to max, a light band from 5%
    to 95%, a box from 25% to 75% and a tick at the median."""
    shown = [m for m in (reference, batch) if m and all(m.get(p) is not None for p in STRIP_POINTS)]
    if not shown:
        return ""
    low, high = min(float(m["min"]) for m in shown), max(float(m["max"]) for m in shown)
    rows = [(reference, REFERENCE_COLOUR, 4.0), (batch, BATCH_COLOUR, 18.0)]
    parts = []
    for metrics, colour, top in rows:
        if metrics not in shown:
            continue
        x = strip_positions(metrics, low, high)
        middle = top + 5
        parts.append(
            f'<line x1="{x["min"]:.1f}" y1="{middle}" x2="{x["max"]:.1f}" y2="{middle}" stroke="{colour}"/>'
            f'<rect x="{x["q05"]:.1f}" y="{top + 2}" width="{x["q95"] - x["q05"]:.1f}" height="6" '
            f'fill="{colour}" fill-opacity="0.3"/>'
            f'<rect x="{x["q25"]:.1f}" y="{top}" width="{x["q75"] - x["q25"]:.1f}" height="10" '
            f'fill="{colour}"/>'
            f'<line x1="{x["q50"]:.1f}" y1="{top - 1}" x2="{x["q50"]:.1f}" y2="{top + 11}" '
            f'stroke="#1f2933" stroke-width="2"/>'
        )
    caption = f"{format_number(low)} to {format_number(high)}"
    body = [f"<title>{text(caption)}</title>", *parts]
    return svg(STRIP_WIDTH, 32, body, css_class="strip", namespace=False, role="img")


def share_bars_svg(batch_share: float | None, reference_share: float | None) -> str:
    """Two bars of `BAR_WIDTH` at most: the reference's share of a category above the batch's."""
    bars = []
    for value, colour, top in ((reference_share, REFERENCE_COLOUR, 1), (batch_share, BATCH_COLOUR, 7)):
        if value is not None:
            bars.append(
                f'<rect x="0" y="{top}" width="{BAR_WIDTH * float(value):.1f}" height="5" fill="{colour}"/>'
            )
    return svg(BAR_WIDTH, 13, bars, css_class="bars", namespace=False, role="img")


def category_rows(top: Sequence[Sequence[Any]], reference: Mapping[str, Any] | None) -> str:
    """The batch's most frequent values, each with its share beside the reference's (when the value
    is among the reference's top ones)."""
    known = {str(v): s for v, _, s in (reference or {}).get("top") or []}
    rows = []
    for value, _, batch_share in list(top)[:TOP_SHOWN]:
        reference_share = known.get(str(value))
        rows.append(
            f'<div class="cat"><span class="name" title="{text(value)}">{label(value)}</span>'
            f"{share_bars_svg(batch_share, reference_share)}"
            f'<span>{share(batch_share)} <span class="muted">ref {share(reference_share)}</span></span></div>'
        )
    return "".join(rows)


def _reference_metrics(result: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((result.get("details") or {}).get("reference") or {}).get("metrics") or {}


def _cell(result: Mapping[str, Any], name: str, formatter: Any = format_number) -> str:
    """A batch number with the reference's below it."""
    batch_value = formatter((result.get("metrics") or {}).get(name))
    reference_value = formatter(_reference_metrics(result).get(name))
    return f'<td class="num">{batch_value}<span class="ref">{reference_value}</span></td>'


def _table(head: Sequence[str], rows: Iterable[str]) -> str:
    """A table under column headings (numeric ones right-aligned) holding `rows` (`<td>` cells)."""
    cells = "".join(f'<th class="num">{h}</th>' if h in NUMBER_HEADINGS else f"<th>{h}</th>" for h in head)
    body = "".join(f'<tr class="column">{row}</tr>' for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _numeric_row(r: Mapping[str, Any]) -> str:
    strip = quantile_strip_svg(r.get("metrics") or {}, _reference_metrics(r) or None)
    cells = "".join(_cell(r, n) for n in NUMERIC_COLUMNS)
    return f"<td>{label(r['target'])}</td>{_presence(r)}{cells}<td>{strip}</td>"


def _categorical_row(r: Mapping[str, Any]) -> str:
    details = r.get("details") or {}
    bars = category_rows(details.get("top") or [], details.get("reference"))
    return f"<td>{label(r['target'])}</td>{_presence(r)}{_cell(r, 'distinct', whole)}<td>{bars}</td>"


def _date_row(r: Mapping[str, Any]) -> str:
    details = r.get("details") or {}
    span = " – ".join(text(details[k]) for k in ("first", "last") if details.get(k) is not None)
    return f"<td>{label(r['target'])}</td>{_presence(r)}<td>{span}</td>"


def _presence(result: Mapping[str, Any]) -> str:
    return _cell(result, "count", whole) + _cell(result, "missing_share", share)


# Per kind: the heading, the table's column headings and how a result becomes a row.
TABLES = {
    "numeric": ("Numeric columns", ("column", "count", "missing", *NUMERIC_COLUMNS, "range"), _numeric_row),
    "categorical": (
        "Categorical columns",
        ("column", "count", "missing", "distinct", "top values (share of present values)"),
        _categorical_row,
    ),
    "datetime": ("Dates and times", ("column", "count", "missing", "first – last"), _date_row),
}


def summary_section(results: Iterable[Mapping[str, Any]]) -> str:
    """The HTML of the data-summary section of a run's results (its `data.summary` ones), or "" when
    the run has none. Numbers show the batch's value with the reference's below it."""
    own = [r for r in results if r.get("check") == DATA_SUMMARY]
    if not own:
        return ""
    by_kind: dict[str | None, list[Mapping[str, Any]]] = {}
    notes = []
    for r in own:
        if r.get("status") == "ok":
            by_kind.setdefault((r.get("details") or {}).get("kind"), []).append(r)
        else:
            notes.append(f"<li>{label(r['target'])}: {text(r.get('reason') or r.get('status'))}</li>")
    key = (
        f'<p class="key"><i style="background:{BATCH_COLOUR}"></i>batch (first number)'
        f'<i style="background:{REFERENCE_COLOUR}"></i>reference (below it) · range: line min–max, '
        "band 5–95%, box 25–75%, tick at the median · ref –: not among the reference's top values</p>"
    )
    parts = [STYLE, '<section class="dsum" id="data-summary"><h2>Data summary</h2>', key]
    for kind, (heading, head, row) in TABLES.items():
        if by_kind.get(kind):
            parts += [f"<h3>{heading}</h3>", _table(head, map(row, by_kind[kind]))]
    if notes:
        parts.append(f"<ul>{''.join(notes)}</ul>")
    parts.append("</section>")
    return "".join(parts)
