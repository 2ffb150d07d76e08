"""The report's data-summary section: strips and bars at the positions numpy and pandas give for the
data, every string from the data escaped, and well-formed markup from stored (JSON) results."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import Columns
from driftline.checks.data_summary import DataSummary
from driftline.tasks.report.summary import (
    BAR_WIDTH,
    BATCH_COLOUR,
    REFERENCE_COLOUR,
    STRIP_PAD,
    STRIP_WIDTH,
    summary_section,
)

HOSTILE_COLUMN = "<script>alert(1)</script>"
HOSTILE_VALUE = '"><img src=x onerror=alert(1)>\u202e'


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(3)

    def one(n: int, shift: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "x": rng.normal(shift, 2.0, n),
                "colour": rng.choice(["red", "green", HOSTILE_VALUE], n, p=[0.5, 0.3, 0.2]),
                HOSTILE_COLUMN: rng.integers(0, 5, n),
                "when": pd.to_datetime("2024-03-01") + pd.to_timedelta(rng.integers(0, 30, n), unit="D"),
            }
        )

    return one(5000, 0.0), one(3000, 1.5)


def stored(reference: pd.DataFrame, batch: pd.DataFrame) -> list[dict]:
    """The results as the history gives them back: plain JSON."""
    results = DataSummary().run(reference, batch, Columns())
    return json.loads(json.dumps([r.to_dict() for r in results]))


def column_row(html: str, name: str) -> str:
    """The table row of one column."""
    match = re.search(rf'<tr class="column"><td>{re.escape(name)}</td>.*?</tr>', html)
    assert match, name
    return match.group()


def test_the_strip_places_quantiles_where_numpy_puts_them() -> None:
    reference, batch = frames()
    row = column_row(summary_section(stored(reference, batch)), "x")
    low = min(reference["x"].min(), batch["x"].min())
    high = max(reference["x"].max(), batch["x"].max())

    def x(value: float) -> float:
        return STRIP_PAD + (STRIP_WIDTH - 2 * STRIP_PAD) * (value - low) / (high - low)

    for frame, colour in ((reference, REFERENCE_COLOUR), (batch, BATCH_COLOUR)):
        q05, q25, q50, q75, q95 = np.quantile(frame["x"], [0.05, 0.25, 0.5, 0.75, 0.95])
        box = re.search(rf'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="10" fill="{colour}"/>', row)
        band = re.search(rf'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="6" fill="{colour}"', row)
        line = re.search(
            rf'<line x1="([\d.]+)" y1="[\d.]+" x2="([\d.]+)" y2="[\d.]+" stroke="{colour}"/>', row
        )
        assert box and band and line
        assert [float(v) for v in box.groups()] == pytest.approx([x(q25), x(q75) - x(q25)], abs=0.051)
        assert [float(v) for v in band.groups()] == pytest.approx([x(q05), x(q95) - x(q05)], abs=0.051)
        assert [float(v) for v in line.groups()] == pytest.approx(
            [x(frame["x"].min()), x(frame["x"].max())], abs=0.051
        )
        ticks = [
            float(t)
            for t in re.findall(r'<line x1="([\d.]+)" y1="[\d.]+" x2="\1" [^>]*stroke="#1f2933"', row)
        ]
        assert min(ticks, key=lambda t: abs(t - x(q50))) == pytest.approx(x(q50), abs=0.051)


def test_bars_are_the_shares_pandas_counts() -> None:
    reference, batch = frames()
    row = column_row(summary_section(stored(reference, batch)), "colour")
    for frame, colour in ((batch, BATCH_COLOUR), (reference, REFERENCE_COLOUR)):
        widths = [
            float(w)
            for w in re.findall(rf'<rect x="0" y="\d+" width="([\d.]+)" height="5" fill="{colour}"/>', row)
        ]
        shares = frame["colour"].value_counts(normalize=True)
        batch_order = batch["colour"].value_counts().index  # rows follow the batch's ranking
        assert widths == pytest.approx([BAR_WIDTH * shares[v] for v in batch_order], abs=0.051)
    shown = batch["colour"].value_counts(normalize=True)
    assert f"{100 * shown['red']:.1f}%" in row


def test_data_is_escaped_and_the_markup_well_formed() -> None:
    reference, batch = frames()
    html = summary_section(stored(reference, batch))
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert (
        "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\\u202e" in html
    )  # the bidi override shown, not obeyed
    root = ET.fromstring(f"<div>{html}</div>")  # every tag closed, every ampersand an entity
    assert root.find(".//section").get("id") == "data-summary"


def test_counts_dates_and_columns_the_batch_lacks() -> None:
    reference, batch = frames()
    html = summary_section(stored(reference.assign(gone=1.0), batch))
    assert '<td class="num">3,000<span class="ref">5,000</span></td>' in column_row(html, "x")
    when = column_row(html, "when")
    assert f"{batch['when'].min().isoformat()} – {batch['when'].max().isoformat()}" in when
    assert "<li>gone: column &#x27;gone&#x27; is in the reference, not in the batch</li>" in html


def test_a_run_without_a_summary_has_no_section() -> None:
    assert summary_section([{"check": "drift.numeric", "target": "x", "status": "ok"}]) == ""
