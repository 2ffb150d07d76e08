"""The site's SVG: coordinates pinned by hand, well-formed XML whatever the data's text, and a title on
every mark."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from driftline.tasks.tools.drawing import nice_ticks
from driftline.tasks.report.figures import SEVERITY_COLOURS
from driftline.tasks.site import svg
from driftline.tasks.site.gather import HeatCell, HeatMap

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = '</title><script>alert("x")</script>&amp;'


def parsed(markup: str) -> ET.Element:
    """The SVG as XML (a text that broke out of its element would not parse)."""
    return ET.fromstring(str(markup))


def test_sparkline_points_on_zero_to_top_with_gaps() -> None:
    root = parsed(
        svg.sparkline(
            [1, 3, 0, None], top=3, label="worst", titles=["a", "b", "c", "d"], width=132, height=30
        )
    )
    assert (root.get("width"), root.get("height")) == ("132", "30")
    # x: 4 … 128 in three equal steps; y: 30 - 4 - v / 3 · 22.
    (line,) = root.findall("s:polyline", NS)
    assert line.get("points") == "4.0,18.7 45.3,4.0 86.7,26.0"
    dots = root.findall("s:circle", NS)
    assert [(d.get("cx"), d.get("cy"), d.find("s:title", NS).text) for d in dots] == [
        ("4.0", "18.7", "a"),
        ("45.3", "4.0", "b"),
        ("86.7", "26.0", "c"),
    ]


def test_a_gap_splits_the_line_and_values_above_top_are_clipped() -> None:
    root = parsed(svg.sparkline([0.5, None, 2.0, 1.0], top=1.0, label="share", titles=list("abcd")))
    lines = root.findall("s:polyline", NS)
    assert [len(line.get("points").split()) for line in lines] == [1, 2]
    assert lines[1].get("points").split()[0].endswith(",4.0")  # 2.0 drawn at the top


def test_line_chart_maps_values_and_draws_the_band() -> None:
    chart = svg.line_chart(
        ["b1", "b2", "b3"],
        [svg.Series("estimated", [0.5, None, 1.0], "#000")],
        band=svg.Band("band", [0.25, 0.5, None], [0.75, 1.0, None]),
        label="chart",
        y_range=(0.0, 1.0),
        y_format=lambda v: f"{v:.2f}",
    )
    root = parsed(chart)
    # Plot: x from 56 + 10 to 760 - 16 - 10 (66 … 734, middle 400); y from 30 + 158 (0) up to 30 (1).
    dots = [(d.get("cx"), d.get("cy"), d.find("s:title", NS).text) for d in root.findall("s:circle", NS)]
    assert dots == [("66.0", "109.0", "b1 · estimated: 0.50"), ("734.0", "30.0", "b3 · estimated: 1.00")]
    (band,) = root.findall("s:polygon", NS)
    # Upper edge left to right, then lower edge back: 0.75 → 69.5, 1.0 → 30, 0.5 → 109, 0.25 → 148.5.
    assert band.get("points") == "66.0,69.5 400.0,30.0 400.0,109.0 66.0,148.5"


def test_value_range_pads_a_tenth_and_clips() -> None:
    assert svg.value_range([0.2, 0.6], [None, float("nan")]) == pytest.approx((0.16, 0.64))
    assert svg.value_range([0.0, 1.0], floor=0.0, ceiling=1.0) == (0.0, 1.0)
    assert svg.value_range([None]) == (0.0, 1.0)


def test_heat_map_cells_states_titles_and_escaped_names() -> None:
    cells = {
        ("b1", HOSTILE): HeatCell("b1", HOSTILE, "high", 1, 1, 0, 0, HOSTILE, {"psi": 1.0}),
        ("b2", HOSTILE): HeatCell("b2", HOSTILE, "error", 0, 0, 0, 1, None, {}),
        ("b1", "drift.numeric"): HeatCell("b1", "drift.numeric", "skipped", 0, 0, 2, 0, None, {}),
    }
    heat = HeatMap(["b1", "b2"], [HOSTILE, "drift.numeric"], cells)
    root = parsed(
        svg.heat_map(heat, describe=lambda c: f"{c.check}: {c.state}", batch_links={"b2": "../r/b2.html?<"})
    )
    rects = root.findall("s:rect", NS)
    assert len(rects) == 4  # 2 checks × 2 batches, the missing one outlined
    fills = [r.get("fill") for r in rects]
    assert fills == [
        SEVERITY_COLOURS["high"],
        SEVERITY_COLOURS["error"],
        SEVERITY_COLOURS["skipped"],
        "#ffffff",
    ]
    assert rects[0].find("s:title", NS).text == f"{HOSTILE}: high"
    assert rects[3].find("s:title", NS).text == "not run in this batch"
    marks = [t.text for t in root.findall("s:text", NS) if t.get("font-weight") == "700"]
    assert marks == ["!", "–"]
    (link,) = root.findall("s:a", NS)
    assert link.get("href") == "../r/b2.html?<"
    assert "<script>" not in str(svg.heat_map(heat, describe=str, batch_links={}))


@pytest.mark.parametrize(
    ("low", "high", "ticks"),
    [
        (0.0, 1.0, [0.0, 0.25, 0.5, 0.75, 1.0]),  # step 0.25 = 2.5 · 0.1
        (0.7796, 0.8413, [0.76, 0.78, 0.8, 0.82, 0.84, 0.86]),  # span/4 = 0.0154 → step 0.02
        (-0.1, 0.05, [-0.1, -0.05, 0.0, 0.05]),  # span/4 = 0.0375 → step 0.05
        (10.0, 12000.0, [0.0, 5000.0, 10000.0, 15000.0]),  # span/4 = 2997.5 → step 5000
        (3.0, 3.0, [3.0, 3.25, 3.5, 3.75, 4.0]),  # an empty span becomes [3, 4]
    ],
)
def test_gridlines_fall_on_round_numbers(low: float, high: float, ticks: list[float]) -> None:
    assert nice_ticks(low, high, cover=True) == pytest.approx(ticks)
