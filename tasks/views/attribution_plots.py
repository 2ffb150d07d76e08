"""SVG figures for the AUC attribution results: the pair cross matrix and the segmentation tree.

Both take a result's `details` (or the part of it they draw) and return a self-contained SVG document
drawn here by hand: no plotting library, so a check's worker draws its figure in a millisecond instead
of importing and laying out one. Every text from data is made printable, clipped and XML-escaped.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from driftline.checks.result import CheckResult
from driftline.tasks.tools.drawing import escaped, svg
from driftline.tasks.tools.files import write_private_file
from driftline.tasks.tools.safe_text import printable

FONT = "Helvetica, Arial, sans-serif"
FONT_PX = 11
CHAR_PX = 6.2  # average width of a character at FONT_PX, to size margins
INK = "#222222"
MUTED = "#555555"
EDGE_COLOUR = "#999999"
MISSING_COLOUR = "#eeeeee"
# Node shades: inner nodes, leaves, and leaves that the held-out test calls false discoveries.
INNER_SHADE, LEAF_SHADE, FALSE_DISCOVERY_SHADE = "#eeeeee", "#cfe8cf", "#9e9e9e"
# The red-yellow-green scale of the cross matrix (ColorBrewer RdYlGn, 11 classes), from 0 to 1.
RED_YELLOW_GREEN = (
    "#a50026",
    "#d73027",
    "#f46d43",
    "#fdae61",
    "#fee08b",
    "#ffffbf",
    "#d9ef8b",
    "#a6d96a",
    "#66bd63",
    "#1a9850",
    "#006837",
)
# Characters XML cannot carry at all (lone surrogates, U+FFFE, U+FFFF); the terminal controls are shown
# as escapes by `printable` first.
NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
CONDITION_CHARS = 28  # a tree box's condition line
SLICE_CHARS = 24  # a matrix row or column label
HOVER_CHARS = 200  # the full text shown on hover


def clipped(value: object, limit: int) -> str:
    """`value` as text XML can carry, terminal controls shown as escapes, at most `limit` characters
    (`…` marks a cut)."""
    text = NOT_XML.sub("\ufffd", printable(str(value)))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: object, limit: int) -> str:
    """`value` clipped to `limit` characters and escaped for XML text or attributes."""
    return escaped(clipped(value, limit))


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _text(
    x: float, y: float, text: str, *, size: float = FONT_PX, anchor: str = "middle", **extra: str
) -> str:
    """A `<text>` element; `text` must already be escaped (see `shown`)."""
    attributes = "".join(f' {name.replace("_", "-")}="{value}"' for name, value in extra.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}"{attributes}>{text}</text>'
    )


def _document(width: float, height: float, title: str, parts: Sequence[str]) -> str:
    """A standalone SVG document of a fixed size with a white background; `title` is escaped."""
    return svg(
        width,
        height,
        parts,
        document=True,
        background="#ffffff",
        role="img",
        aria_label=title,
        font_family=FONT,
        fill=INK,
    )


def svg_data_uri(svg: str) -> str:
    """An SVG document as a base64 data URI (an `<img>` source or a markdown image)."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


# --- the pair cross matrix --------------------------------------------------------------------------

CELL_WIDTH, CELL_HEIGHT = 74.0, 36.0
LEGEND_STEPS = 20


def attribution_colour(value: float | None) -> str:
    """The colour of a mean pair attribution on the red (0) – yellow (0.5) – green (1) scale, linear
    between the scale's stops; missing values are light grey."""
    if value is None or not math.isfinite(value):
        return MISSING_COLOUR
    position = min(max(value, 0.0), 1.0) * (len(RED_YELLOW_GREEN) - 1)
    low = min(int(position), len(RED_YELLOW_GREEN) - 2)
    share = position - low
    start, end = (_rgb(RED_YELLOW_GREEN[low]), _rgb(RED_YELLOW_GREEN[low + 1]))
    return "#" + "".join(f"{round(a + (b - a) * share):02x}" for a, b in zip(start, end, strict=True))


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _ink_on(colour: str) -> str:
    """White text on a dark cell, else the usual ink (by the colour's luma)."""
    red, green, blue = (c / 255 for c in _rgb(colour))
    return "#ffffff" if 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.45 else INK


def _matrix_values(
    matrix: Mapping[str, Any],
) -> tuple[list[str], list[str], list[list[float]], list[list[int]]]:
    """Row and column labels, means (NaN where missing) and pair counts, their shapes checked."""
    rows, cols = [str(r) for r in matrix["negative_slices"]], [str(c) for c in matrix["positive_slices"]]
    means = [[math.nan if v is None else float(v) for v in row] for row in matrix["mean_attribution"]]
    pairs = [[int(v or 0) for v in row] for row in matrix["pairs"]]
    for name, table in (("mean_attribution", means), ("pairs", pairs)):
        if len(table) != len(rows) or any(len(row) != len(cols) for row in table):
            raise ValueError(
                f"cross matrix: {name} must have {len(rows)} row(s) of {len(cols)} value(s), "
                f"one per negative and positive slice"
            )
    return rows, cols, means, pairs


def cross_matrix_svg(details: Mapping[str, Any]) -> str:
    """Heat map of mean pair attribution (the AUC of each cross), negatives as rows, positives as columns.

    Each cell shows its AUC and its number of pairs. `details` is an `attribution.pairs` summary
    result's details, or its `matrix` entry.
    """
    matrix = details.get("matrix", details)
    rows, cols, means, pairs = _matrix_values(matrix)
    row_reach = max((len(clipped(r, SLICE_CHARS)) for r in rows), default=1) * CHAR_PX
    col_reach = max((len(clipped(c, SLICE_CHARS)) for c in cols), default=1) * CHAR_PX
    # Column labels are turned 35 degrees and end under their column.
    left = max(42 + row_reach, col_reach * math.cos(math.radians(35)) - CELL_WIDTH / 2 + 8)
    top = 34.0
    grid_width, grid_height = CELL_WIDTH * len(cols), CELL_HEIGHT * len(rows)
    legend_height = max(grid_height, 120.0)
    label_y = top + grid_height + 14
    axis_y = label_y + col_reach * math.sin(math.radians(35)) + 20
    width = left + grid_width + 100
    height = max(top + legend_height + 12, axis_y + 8)
    title = shown(f"AUC per cross (overall {_number(matrix.get('auc'), 3)})", HOVER_CHARS)
    parts = [_text(left, 18, title, size=FONT_PX + 1, anchor="start")]
    for i, row in enumerate(rows):
        y = top + i * CELL_HEIGHT
        parts.append(_text(left - 6, y + CELL_HEIGHT / 2 + 4, shown(row, SLICE_CHARS), anchor="end"))
        for j, col in enumerate(cols):
            parts.append(_cell(left + j * CELL_WIDTH, y, row, col, means[i][j], pairs[i][j]))
    for j, col in enumerate(cols):
        x = left + (j + 0.5) * CELL_WIDTH
        parts.append(
            _text(
                x,
                label_y,
                shown(col, SLICE_CHARS),
                anchor="end",
                transform=f"rotate(-35 {x:.1f} {label_y:.1f})",
            )
        )
    parts.append(_text(left + grid_width / 2, axis_y, "positive slice"))
    middle = top + grid_height / 2
    parts.append(_text(14, middle, "negative slice", transform=f"rotate(-90 14 {middle:.1f})"))
    parts.extend(_colour_legend(left + grid_width + 18, top, legend_height))
    return _document(width, height, title, parts)


def _cell(x: float, y: float, row: str, col: str, mean: float, pairs: int) -> str:
    """One cross: its colour, its AUC and pair count, and both on hover with the slices' names."""
    colour = attribution_colour(mean)
    ink = _ink_on(colour)
    hover = shown(
        f"negative {row} × positive {col}: AUC {_number(mean, 3)} over {pairs:,} pairs", HOVER_CHARS
    )
    centre = x + CELL_WIDTH / 2
    if math.isnan(mean):
        labels = [_text(centre, y + CELL_HEIGHT / 2 + 4, "—", fill=ink)]
    else:
        labels = [
            _text(centre, y + CELL_HEIGHT / 2 - 2, f"{mean:.2f}", size=FONT_PX - 1, fill=ink),
            _text(centre, y + CELL_HEIGHT / 2 + 11, f"{pairs:,}", size=FONT_PX - 2, fill=ink),
        ]
    return (
        f'<g class="cell"><title>{hover}</title><rect x="{x:.1f}" y="{y:.1f}" width="{CELL_WIDTH:g}" '
        f'height="{CELL_HEIGHT:g}" fill="{colour}" stroke="#ffffff" stroke-width="1"/>'
        + "".join(labels)
        + "</g>"
    )


def _colour_legend(x: float, top: float, height: float) -> list[str]:
    """A vertical bar of the scale from 0 (bottom) to 1 (top), ticks every 0.2, and its label."""
    step = height / LEGEND_STEPS
    parts = [
        f'<rect x="{x:.1f}" y="{top + height - (k + 1) * step:.1f}" width="14" height="{step + 0.3:.1f}" '
        f'fill="{attribution_colour((k + 0.5) / LEGEND_STEPS)}"/>'
        for k in range(LEGEND_STEPS)
    ]
    parts.append(
        f'<rect x="{x:.1f}" y="{top:.1f}" width="14" height="{height:.1f}" fill="none" stroke="{MUTED}"/>'
    )
    for tick in range(6):
        y = top + height * (1 - tick / 5)
        parts.append(
            f'<line x1="{x + 14:.1f}" y1="{y:.1f}" x2="{x + 18:.1f}" y2="{y:.1f}" stroke="{MUTED}"/>'
        )
        parts.append(_text(x + 21, y + 4, f"{tick / 5:.1f}", size=FONT_PX - 1, anchor="start"))
    middle, label_x = top + height / 2, x + 58
    parts.append(
        _text(label_x, middle, "mean pair attribution", transform=f"rotate(90 {label_x:.1f} {middle:.1f})")
    )
    return parts


# --- the segmentation tree --------------------------------------------------------------------------

BOX_WIDTH, BOX_HEIGHT = 170.0, 50.0
LEAF_STEP, LEVEL_STEP = 190.0, 90.0
MARGIN, TITLE_HEIGHT = 15.0, 40.0


def _layout(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, tuple[float, int]]:
    """x (leaves spaced evenly, parents centred over their children) and depth of every node."""
    positions: dict[int, tuple[float, int]] = {}
    next_leaf = [0.0]

    def place(node: int, depth: int) -> float:
        left, right = nodes[node]["children"]
        if left < 0:
            x = next_leaf[0]
            next_leaf[0] += 1.0
        else:
            x = (place(left, depth + 1) + place(right, depth + 1)) / 2.0
        positions[node] = (x, depth)
        return x

    place(0, 0)
    return positions


def _tree_nodes(tree: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """The tree's nodes by number, checked to form a tree under node 0 (every child present, no node
    the child of two parents or of itself through the root)."""
    nodes = {int(n["node"]): n for n in tree["nodes"]}
    children = [int(c) for n in nodes.values() for c in n["children"] if int(c) >= 0]
    if 0 not in nodes:
        raise ValueError("segmentation tree: no root (node 0)")
    missing = sorted(set(children) - set(nodes))
    if missing:
        raise ValueError(f"segmentation tree: child node(s) {missing} are not in the tree")
    if 0 in children or len(children) != len(set(children)):
        raise ValueError("segmentation tree: a node is the child of more than one parent")
    return nodes


def segment_tree_svg(details: Mapping[str, Any]) -> str:
    """The honest segmentation tree: each box shows its condition, held-out mean and size.

    Leaves flagged as false discoveries are drawn in a darker shade and marked `*`. `details` is an
    `attribution.auc` / `attribution.compare` summary result's details, or its `tree` entry.
    """
    tree = details.get("tree", details)
    nodes = _tree_nodes(tree)
    positions = _layout(nodes)
    leaves = max(x for x, _ in positions.values()) + 1
    levels = max(d for _, d in positions.values()) + 1
    title = shown(f"slices (overall mean {_number(tree.get('overall'), 3)}; * false discovery)", HOVER_CHARS)
    width = max(2 * MARGIN + BOX_WIDTH + (leaves - 1) * LEAF_STEP, 2 * MARGIN + CHAR_PX * 1.1 * len(title))
    height = TITLE_HEIGHT + BOX_HEIGHT + (levels - 1) * LEVEL_STEP + MARGIN
    offset = (width - (BOX_WIDTH + (leaves - 1) * LEAF_STEP)) / 2  # centres a tree narrower than its title

    def centre(node: int) -> tuple[float, float]:
        x, level = positions[node]
        return offset + BOX_WIDTH / 2 + x * LEAF_STEP, TITLE_HEIGHT + BOX_HEIGHT / 2 + level * LEVEL_STEP

    parts = [_text(width / 2, 20, title, size=FONT_PX + 1)]
    for node in sorted(positions):
        x, y = centre(node)
        for child in nodes[node]["children"]:
            if child >= 0:
                cx, cy = centre(int(child))
                parts.append(
                    f'<line x1="{x:.1f}" y1="{y + BOX_HEIGHT / 2:.1f}" x2="{cx:.1f}" '
                    f'y2="{cy - BOX_HEIGHT / 2:.1f}" stroke="{EDGE_COLOUR}"/>'
                )
    parts.extend(_node_box(nodes[node], *centre(node)) for node in sorted(positions))
    return _document(width, height, title, parts)


def _node_box(info: Mapping[str, Any], x: float, y: float) -> str:
    """One node: a rounded box shaded by kind, its condition, held-out mean and size (the full
    condition on hover)."""
    leaf = info["children"][0] < 0
    false_discovery = leaf and bool(info.get("false_discovery"))
    shade = FALSE_DISCOVERY_SHADE if false_discovery else (LEAF_SHADE if leaf else INNER_SHADE)
    mean = info.get("mean")
    lines = [
        shown(info["condition"], CONDITION_CHARS),
        f"mean {_number(None if mean is None else float(mean), 3)}",
        f"n = {int(info['rows']):,}" + ("  *" if false_discovery else ""),
    ]
    texts = [_text(x, y - 9 + 13 * i, line, size=FONT_PX - 1) for i, line in enumerate(lines)]
    return (
        f'<g class="node"><title>{shown(info["condition"], HOVER_CHARS)}</title>'
        f'<rect x="{x - BOX_WIDTH / 2:.1f}" y="{y - BOX_HEIGHT / 2:.1f}" width="{BOX_WIDTH:g}" '
        f'height="{BOX_HEIGHT:g}" rx="5" fill="{shade}" stroke="#666666"/>' + "".join(texts) + "</g>"
    )


# --- the figure files of a run ------------------------------------------------------------------------

# Result details that carry a figure, and the function that draws it.
FIGURES = {"tree": segment_tree_svg, "matrix": cross_matrix_svg}


def figure_name(*parts: str) -> str:
    """A file and artifact name (lowercase letters, digits and dashes) from free text."""
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")


def _figures(results: list[CheckResult], directory: Path) -> list[tuple[Path, Any, Mapping[str, Any]]]:
    """(file, drawing function, details) of every result that carries a segmentation tree or a
    pair cross matrix."""
    return [
        (directory / f"{figure_name(r.check, key)}.svg", draw, r.details)
        for r in results
        for key, draw in FIGURES.items()
        if r.status == "ok" and key in (r.details or {})
    ]


def write_figures(results: list[CheckResult], directory: Path) -> list[Path]:
    """Draw the SVG figures of `results` into `directory`; returns their paths."""
    paths = []
    for path, draw, details in _figures(results, directory):
        write_private_file(path, draw(details).encode("utf-8"))
        paths.append(path)
    return paths


def drawn_figures(results: list[CheckResult], directory: Path) -> list[Path]:
    """The figures of `results` that were drawn into `directory`."""
    return [path for path, _, _ in _figures(results, directory) if path.exists()]
