"""The attribution figures are well-formed SVG that show what a result's JSON details hold: one box per
tree node and one cell per cross, with the numbers pinned against scikit-learn and by hand."""

from __future__ import annotations

import re
import stat
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.tasks.views.attribution_plots import (
    attribution_colour,
    cross_matrix_svg,
    drawn_figures,
    segment_tree_svg,
    write_figures,
)

SVG = "{http://www.w3.org/2000/svg}"
COLUMNS = Columns(label="label", score="score", numeric=("age",), categorical=("grade",))
HOSTILE = '<script>alert("x")</script> & \x1b[31mred\u202e\x00 ' + "z" * 80


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 2000
    signal = rng.normal(size=n)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "grade": rng.choice(list("ABCD"), n),
            "label": (signal + rng.normal(size=n) > 0).astype(int),
            "score": signal,
            "other": signal + rng.normal(size=n),
        }
    )


def _results(name: str, frame: pd.DataFrame, **params) -> list:
    return run_check(registry.create(name, params), frame, COLUMNS, reference=frame, strict=True)


def _details(name: str, frame: pd.DataFrame, **params) -> dict:
    summary = _results(name, frame, **params)[0]
    return summary.to_dict()["details"]  # through JSON form, as the run report reads it


def _parsed(svg: str) -> ET.Element:
    """The SVG's root, checked to be sized: width, height and a viewBox of the same size."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    width, height = float(root.get("width")), float(root.get("height"))
    assert width > 100 and height > 100
    assert root.get("viewBox") == f"0 0 {width:.0f} {height:.0f}"
    for rect in root.iter(f"{SVG}rect"):  # every box and cell lies inside the picture
        x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
        assert x >= 0 and x + float(rect.get("width")) <= width + 0.5
        assert y >= 0 and y + float(rect.get("height")) <= height + 0.5
    return root


def _groups(root: ET.Element, kind: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == kind]


def _texts(element: ET.Element) -> list[str]:
    return [t.text or "" for t in element.iter(f"{SVG}text")]


def _fill(group: ET.Element) -> str:
    return group.find(f"{SVG}rect").get("fill")


def _hover(group: ET.Element) -> str:
    """The text a browser shows on hovering over a box or cell."""
    return group.find(f"{SVG}title").text


# --- the colour scale ---------------------------------------------------------------------------------


def test_the_colour_scale_runs_red_yellow_green_from_0_to_1() -> None:
    # ColorBrewer RdYlGn's ends and middle, and 0.04: 40% of the way from #a50026 to #d73027
    # (165 + 0.4 * 50 = 185, 0 + 0.4 * 48 = 19.2, 38 + 0.4 * 1 = 38.4).
    assert attribution_colour(0.0) == "#a50026"
    assert attribution_colour(0.5) == "#ffffbf"
    assert attribution_colour(1.0) == "#006837"
    assert attribution_colour(0.04) == "#b91326"
    assert attribution_colour(-0.3) == "#a50026" and attribution_colour(1.7) == "#006837"
    assert attribution_colour(None) == attribution_colour(float("nan")) == "#eeeeee"


# --- the cross matrix ---------------------------------------------------------------------------------


def test_each_cross_shows_sklearns_auc_and_its_pair_count(frame: pd.DataFrame) -> None:
    root = _parsed(cross_matrix_svg(_details("attribution.pairs", frame, features=["grade"])))
    cells = _groups(root, "cell")
    grades = sorted(frame["grade"].unique())
    assert len(cells) == len(grades) ** 2
    negatives, positives = frame[frame["label"] == 0], frame[frame["label"] == 1]
    crosses = [re.match(r"negative (\w+) × positive (\w+):", _hover(cell)).groups() for cell in cells]
    assert sorted(crosses) == [(n, p) for n in grades for p in grades]
    for cell, (negative, positive) in zip(cells, crosses, strict=True):
        both = pd.concat(
            [negatives[negatives["grade"] == negative], positives[positives["grade"] == positive]]
        )
        auc = roc_auc_score(both["label"], both["score"])
        pairs = (negatives["grade"] == negative).sum() * (positives["grade"] == positive).sum()
        assert _texts(cell) == [f"{auc:.2f}", f"{pairs:,}"]
        assert _fill(cell) == attribution_colour(auc)
    texts = _texts(root)
    assert f"AUC per cross (overall {roc_auc_score(frame['label'], frame['score']):.3f})" in texts
    assert {"negative slice", "positive slice", "mean pair attribution"} <= set(texts)
    assert texts.count("A") == 2  # a row label and a column label per slice
    assert {"0.0", "0.4", "1.0"} <= set(texts)  # the colour legend's ticks


def test_cells_are_coloured_by_value_and_a_missing_cross_is_marked() -> None:
    matrix = {
        "negative_slices": ["n1", "n2"],
        "positive_slices": ["p1", "p2"],
        "mean_attribution": [[0.0, 0.5], [1.0, None]],
        "pairs": [[12, 3456], [1234567, 0]],
        "auc": 0.25,
    }
    root = _parsed(cross_matrix_svg({"matrix": matrix}))
    cells = {
        re.match(r"negative (\w+) × positive (\w+)", _hover(c)).groups(): c for c in _groups(root, "cell")
    }
    assert {key: _fill(cell) for key, cell in cells.items()} == {
        ("n1", "p1"): "#a50026",
        ("n1", "p2"): "#ffffbf",
        ("n2", "p1"): "#006837",
        ("n2", "p2"): "#eeeeee",
    }
    assert {key: _texts(cell) for key, cell in cells.items()} == {
        ("n1", "p1"): ["0.00", "12"],
        ("n1", "p2"): ["0.50", "3,456"],
        ("n2", "p1"): ["1.00", "1,234,567"],
        ("n2", "p2"): ["—"],
    }
    assert "AUC per cross (overall 0.250)" in _texts(root)


def test_a_matrix_whose_shape_does_not_match_its_slices_is_refused() -> None:
    matrix = {
        "negative_slices": ["a", "b"],
        "positive_slices": ["c"],
        "mean_attribution": [[0.5], [0.5]],
        "pairs": [[1, 2], [3, 4]],
        "auc": 0.5,
    }
    with pytest.raises(ValueError, match=r"pairs must have 2 row\(s\) of 1 value\(s\)"):
        cross_matrix_svg(matrix)


# --- the segmentation tree ----------------------------------------------------------------------------


def _node(
    node: int, condition: str, children: tuple[int, int], rows: int, mean: float | None, fd: bool
) -> dict:
    return {
        "node": node,
        "condition": condition,
        "children": list(children),
        "rows": rows,
        "mean": mean,
        "false_discovery": fd,
    }


HAND_TREE = {
    "overall": 0.4321,
    "nodes": [
        _node(0, "all data", (1, 2), 6000, 0.43, False),
        _node(1, "age <= 30", (-1, -1), 1500, 0.61234, True),
        _node(2, "age > 30", (3, 4), 4500, 0.37, False),
        _node(3, "grade in {A, B}", (-1, -1), 2000, float("nan"), False),
        _node(4, "grade not in {A, B}", (-1, -1), 2500, 0.25, False),
    ],
}


def _centres(root: ET.Element) -> dict[str, tuple[float, float]]:
    """The centre of each node's box, by its condition."""
    centres = {}
    for group in _groups(root, "node"):
        rect = group.find(f"{SVG}rect")
        x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
        centres[_hover(group)] = (x + w / 2, y + h / 2)
    return centres


def test_each_node_is_a_box_with_its_condition_mean_size_and_shade() -> None:
    root = _parsed(segment_tree_svg({"tree": HAND_TREE}))
    boxes = {_hover(g): g for g in _groups(root, "node")}
    assert {name: _texts(g) for name, g in boxes.items()} == {
        "all data": ["all data", "mean 0.430", "n = 6,000"],
        "age <= 30": ["age <= 30", "mean 0.612", "n = 1,500  *"],
        "age > 30": ["age > 30", "mean 0.370", "n = 4,500"],
        "grade in {A, B}": ["grade in {A, B}", "mean n/a", "n = 2,000"],
        "grade not in {A, B}": ["grade not in {A, B}", "mean 0.250", "n = 2,500"],
    }
    shades = {name: _fill(g) for name, g in boxes.items()}
    assert shades["age <= 30"] == "#9e9e9e"  # the false discovery, darker than the other leaves
    assert shades["grade in {A, B}"] == shades["grade not in {A, B}"] == "#cfe8cf"
    assert shades["all data"] == shades["age > 30"] == "#eeeeee"
    assert "slices (overall mean 0.432; * false discovery)" in _texts(root)


def test_the_tree_is_laid_out_leaves_evenly_parents_over_their_children() -> None:
    root = _parsed(segment_tree_svg(HAND_TREE))
    centre = _centres(root)
    leaves = [centre[c] for c in ("age <= 30", "grade in {A, B}", "grade not in {A, B}")]
    steps = np.diff([x for x, _ in leaves])
    assert steps[0] > 0 and steps[0] == pytest.approx(steps[1])
    assert centre["age > 30"][0] == pytest.approx((leaves[1][0] + leaves[2][0]) / 2)
    assert centre["all data"][0] == pytest.approx((leaves[0][0] + centre["age > 30"][0]) / 2)
    depth = {name: y for name, (_, y) in centre.items()}
    assert depth["all data"] < depth["age > 30"] == depth["age <= 30"] < depth["grade in {A, B}"]
    edges = [(float(e.get("x1")), float(e.get("x2"))) for e in root.iter(f"{SVG}line")]
    parent_child = [
        ("all data", "age <= 30"),
        ("all data", "age > 30"),
        ("age > 30", "grade in {A, B}"),
        ("age > 30", "grade not in {A, B}"),
    ]
    assert sorted(edges) == sorted((centre[p][0], centre[c][0]) for p, c in parent_child)


@pytest.mark.parametrize(
    ("name", "params"), [("attribution.auc", {}), ("attribution.compare", {"candidate_score": "other"})]
)
def test_a_checks_tree_gets_a_box_per_node(frame: pd.DataFrame, name: str, params: dict) -> None:
    tree = _details(name, frame, max_depth=2, **params)["tree"]
    root = _parsed(segment_tree_svg({"tree": tree}))
    boxes = _groups(root, "node")
    assert len(boxes) == len(tree["nodes"]) >= 3
    assert [_texts(b)[2].split("  ")[0] for b in boxes] == [f"n = {n['rows']:,}" for n in tree["nodes"]]
    assert _texts(boxes[0])[:3:2] == ["all data", f"n = {len(frame):,}"]


def test_a_single_slice_is_one_box() -> None:
    tree = {"overall": 0.4, "nodes": [_node(0, "all data", (-1, -1), 3, None, True)]}
    root = _parsed(segment_tree_svg({"tree": tree}))
    [box] = _groups(root, "node")
    assert _texts(box) == ["all data", "mean n/a", "n = 3  *"]


def test_a_tree_naming_a_missing_child_is_refused() -> None:
    tree = {"overall": 0.4, "nodes": [_node(0, "all data", (1, 2), 3, 0.4, False)]}
    with pytest.raises(ValueError, match=r"child node\(s\) \[1, 2\] are not in the tree"):
        segment_tree_svg(tree)


# --- text from data -----------------------------------------------------------------------------------


def test_hostile_and_long_text_is_escaped_shown_and_clipped() -> None:
    tree = {"overall": 0.5, "nodes": [_node(0, HOSTILE, (-1, -1), 10, 0.5, False)]}
    matrix = {
        "negative_slices": [HOSTILE],
        "positive_slices": [HOSTILE],
        "mean_attribution": [[0.5]],
        "pairs": [[1]],
        "auc": 0.5,
    }
    for svg in (segment_tree_svg(tree), cross_matrix_svg(matrix)):
        assert "<script" not in svg and "\x1b" not in svg and "\u202e" not in svg and "\x00" not in svg
        root = _parsed(svg)
        assert not [e for e in root.iter() if e.tag.endswith("script")]
        labels = [t for t in _texts(root) if t.startswith("<script>")]
        assert labels and all(len(t) <= 28 and t.endswith("…") for t in labels)
        hovers = [t.text for t in root.iter(f"{SVG}title")]
        assert any('<script>alert("x")</script> & \\x1b[31mred\\u202e\\x00 z' in h for h in hovers)


# --- the figure files ---------------------------------------------------------------------------------


def test_figures_are_written_as_private_svg_files_and_found_again(frame: pd.DataFrame, tmp_path) -> None:
    results = _results("attribution.pairs", frame, features=["grade"]) + _results("attribution.auc", frame)
    paths = write_figures(results, tmp_path / "report")
    assert [p.name for p in paths] == ["attribution-pairs-matrix.svg", "attribution-auc-tree.svg"]
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        _parsed(path.read_text(encoding="utf-8"))
    assert drawn_figures(results, tmp_path / "report") == paths
    assert drawn_figures(results, tmp_path / "elsewhere") == []
