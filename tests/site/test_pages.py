"""The words the pages put beside the pictures: a cell's hover text, the drift counts, the index row and
the estimate's note, on the conftest's store (counted by hand from its docstring)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from driftline.tasks.site.gather import DriftShare, HeatCell, monitor_data
from driftline.tasks.site.pages import describe_cell, drift_text, index_row, performance_chart
from driftline.tasks.site.reads import open_incidents


@pytest.fixture
def alpha(filled_store: Engine):
    return monitor_data(filled_store, "alpha", runs=10, incidents=open_incidents(filled_store))


def test_a_cell_names_its_counts_and_its_worst_target() -> None:
    cell = HeatCell("b2", "drift.numeric", "medium", 2, 1, 1, 0, "x", {"psi": 0.25, "psi_bound": 0.2123456})
    assert describe_cell(cell) == (
        "drift.numeric · b2: medium\n"
        "2 graded, 1 at medium or worse, 1 skipped\n"
        "worst: x (psi 0.25, psi_bound 0.2123)"
    )
    failed = HeatCell("b3", "drift.numeric", "error", 0, 0, 1, 1, None, {})
    assert describe_cell(failed) == "drift.numeric · b3: error\n1 skipped, 1 error(s)"


def test_drift_counts_read_as_a_fraction() -> None:
    assert drift_text(DriftShare("b", 2, 3)) == "2 of 3 (67%)"
    assert drift_text(DriftShare("b", 0, 0)) == "no graded drift result"


def test_the_estimate_note_counts_realised_values_outside_the_band(alpha) -> None:
    chart = performance_chart(alpha.performance[0])
    # b1: 0.78 within [0.76, 0.84]; b2: 0.69 below 0.70; b3 and b4 have no realised value.
    assert chart["note"] == "realised in 2 of 4 batches; 1 outside the band"
    assert (chart["title"], chart["check"]) == ("accuracy", "performance.estimated")


def test_the_index_row_of_a_monitor(filled_store: Engine) -> None:
    beta = monitor_data(filled_store, "beta", runs=10, incidents=open_incidents(filled_store))
    row = index_row(beta, "monitors/beta.html")
    assert {k: row[k] for k in ("monitor", "batch", "status", "worst", "incidents", "drift_latest")} == {
        "monitor": "beta",
        "batch": "2024-05-02",
        "status": "failed",
        "worst": "high",
        "incidents": 2,
        "drift_latest": "1 of 1 (100%)",
    }
    assert row["batch_time"] == "2024-05-02 00:00 UTC"
    assert row["incident_titles"] == "performance.overall / auc: high\ndrift.numeric / x: medium"
