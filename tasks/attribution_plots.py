"""PNG figures for the AUC attribution results: the pair cross matrix and the segmentation tree.

Both take a result's `details` (or the part of it they draw) and return PNG bytes. matplotlib is
imported inside the functions, with a figure object of its own (no pyplot state), so importing this
module costs nothing and concurrent tasks do not share a figure.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driftline.checks.result import CheckResult
from driftline.tasks.files import write_private_file


def _png(figure: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def cross_matrix_png(details: Mapping[str, Any]) -> bytes:
    """Heat map of mean pair attribution (the AUC of each cross), negatives as rows, positives as columns.

    Each cell is annotated with its AUC and its number of pairs. `details` is an `attribution.pairs`
    summary result's details, or its `matrix` entry.
    """
    from matplotlib.figure import Figure

    matrix = details.get("matrix", details)
    means = [[math.nan if v is None else float(v) for v in row] for row in matrix["mean_attribution"]]
    pairs = matrix["pairs"]
    rows, cols = matrix["negative_slices"], matrix["positive_slices"]
    figure = Figure(figsize=(1.2 + 1.1 * len(cols), 1.0 + 0.6 * len(rows)))
    axes = figure.add_subplot()
    image = axes.imshow(means, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
    for i, row in enumerate(means):
        for j, value in enumerate(row):
            label = "—" if math.isnan(value) else f"{value:.2f}\n{int(pairs[i][j]):,}"
            axes.text(j, i, label, ha="center", va="center", fontsize=7)
    axes.set_xticks(range(len(cols)), [str(c) for c in cols], rotation=35, ha="right", fontsize=8)
    axes.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=8)
    axes.set_xlabel("positive slice")
    axes.set_ylabel("negative slice")
    axes.set_title(f"AUC per cross (overall {matrix['auc']:.3f})", fontsize=9)
    figure.colorbar(image, ax=axes, label="mean pair attribution")
    return _png(figure)


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


def segment_tree_png(details: Mapping[str, Any]) -> bytes:
    """The honest segmentation tree: each box shows its condition, held-out mean and size.

    Leaves flagged as false discoveries are drawn in a darker shade. `details` is an
    `attribution.auc` / `attribution.compare` summary result's details, or its `tree` entry.
    """
    from matplotlib.figure import Figure

    tree = details.get("tree", details)
    nodes = {int(n["node"]): n for n in tree["nodes"]}
    positions = _layout(nodes)
    width = max(x for x, _ in positions.values()) + 1
    depth = max(d for _, d in positions.values()) + 1
    figure = Figure(figsize=(2.4 * width + 0.5, 1.5 * depth + 0.5))
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.set_xlim(-0.6, width - 0.4)
    axes.set_ylim(-depth + 0.4, 0.6)
    for node, (x, level) in positions.items():
        for child in nodes[node]["children"]:
            if child >= 0:
                cx, clevel = positions[child]
                axes.plot([x, cx], [-level, -clevel], color="0.6", linewidth=1, zorder=1)
    for node, (x, level) in positions.items():
        info = nodes[node]
        leaf = info["children"][0] < 0
        shade = "#9e9e9e" if leaf and info["false_discovery"] else ("#cfe8cf" if leaf else "#eeeeee")
        mean = info["mean"]
        shown = "n/a" if mean is None or math.isnan(mean) else f"{mean:.3f}"
        flag = "  *" if leaf and info["false_discovery"] else ""
        text = f"{info['condition']}\nmean {shown}\nn = {info['rows']:,}{flag}"
        axes.text(
            x,
            -level,
            text,
            ha="center",
            va="center",
            fontsize=7,
            zorder=2,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": shade, "edgecolor": "0.4"},
        )
    axes.set_title(f"slices (overall mean {tree['overall']:.3f}; * false discovery)", fontsize=9)
    return _png(figure)


# Result details that carry a figure, and the function that draws it.
FIGURES = {"tree": segment_tree_png, "matrix": cross_matrix_png}


def figure_name(*parts: str) -> str:
    """A file and artifact name (lowercase letters, digits and dashes) from free text."""
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")


def _figures(results: list[CheckResult], directory: Path) -> list[tuple[Path, Any, Mapping[str, Any]]]:
    """(file, drawing function, details) of every result that carries a segmentation tree or a
    pair cross matrix."""
    return [
        (directory / f"{figure_name(r.check, key)}.png", draw, r.details)
        for r in results
        for key, draw in FIGURES.items()
        if r.status == "ok" and key in (r.details or {})
    ]


def write_figures(results: list[CheckResult], directory: Path) -> list[Path]:
    """Draw the PNG figures of `results` into `directory`; returns their paths."""
    paths = []
    for path, draw, details in _figures(results, directory):
        write_private_file(path, draw(details))
        paths.append(path)
    return paths


def drawn_figures(results: list[CheckResult], directory: Path) -> list[Path]:
    """The figures of `results` that were drawn into `directory`."""
    return [path for path, _, _ in _figures(results, directory) if path.exists()]
