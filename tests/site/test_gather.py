"""What the site gathers from a store filled with known results (tests/site/conftest.py): heat-map cells,
drift shares, sparkline points, estimate against realised series, incidents and the index's order,
each pinned against the table in the conftest's docstring, counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine

from driftline.tasks.site.gather import (
    DriftShare,
    HeatCell,
    drift_shares,
    heat_map,
    monitor_data,
    overview_order,
    performance_series,
)
from driftline.tasks.site.reads import monitor_names, open_incidents
from tests.site.conftest import BATCHES


@pytest.fixture
def alpha(filled_store: Engine):
    return monitor_data(filled_store, "alpha", runs=10, incidents=open_incidents(filled_store))


def test_the_heat_map_has_the_worst_severity_of_each_check_per_batch(alpha) -> None:
    heat = alpha.heat
    assert heat.batches == BATCHES
    assert heat.checks == [
        "drift.categorical",
        "drift.numeric",
        "performance.estimated",
        "performance.overall",
        "run.drifted_features",
    ]
    assert heat.cell("b1", "drift.numeric") == HeatCell(
        "b1", "drift.numeric", "none", 2, 0, 0, 0, "x", {"psi": 0.05, "psi_bound": 0.01}
    )
    assert heat.cell("b1", "drift.categorical") == HeatCell(
        "b1", "drift.categorical", "low", 1, 0, 0, 0, "c", {"psi": 0.12}
    )
    assert heat.cell("b2", "drift.numeric") == HeatCell(
        "b2", "drift.numeric", "medium", 2, 1, 0, 0, "x", {"psi": 0.25, "psi_bound": 0.21}
    )
    assert heat.cell("b2", "drift.categorical").state == "high"
    # The late labels replaced b2's skipped performance.overall with a graded result.
    assert heat.cell("b2", "performance.overall") == HeatCell(
        "b2", "performance.overall", "medium", 1, 1, 0, 0, "accuracy", {"current": 0.69, "reference": 0.80}
    )
    # No target graded: an error wins over skips, and a cell without values names no target.
    assert heat.cell("b3", "drift.numeric") == HeatCell("b3", "drift.numeric", "error", 0, 0, 1, 1, None, {})
    assert heat.cell("b3", "drift.categorical") == HeatCell(
        "b3", "drift.categorical", "skipped", 0, 0, 1, 0, None, {}
    )
    assert heat.cell("b3", "run.drifted_features") is None  # not run in that batch
    assert [b for b in BATCHES if any(heat.cell(b, c) for c in heat.checks)] == ["b1", "b2", "b3"]
    assert len(heat.cells) == 5 + 5 + 3  # b3: drift.numeric, drift.categorical, performance.estimated


def test_the_drift_share_counts_graded_drift_results_at_medium_or_worse(alpha) -> None:
    assert alpha.drift == [
        DriftShare("b1", 0, 3, pytest.approx(1 / 3)),
        DriftShare("b2", 2, 3, pytest.approx(2 / 3)),
        DriftShare("b3", 0, 0, None),
        DriftShare("b4", 0, 0, None),
    ]
    assert alpha.drift_points() == [0.0, pytest.approx(2 / 3), None, None]


def test_the_severity_sparkline_has_a_gap_for_a_run_without_a_verdict(alpha) -> None:
    # b1 passed low, b2 failed high, b3 passed none, b4 ended in error.
    assert alpha.severity_points() == [1, 3, 0, None]
    assert [r["status"] for r in alpha.runs] == ["passed", "failed", "passed", "error"]
    assert alpha.latest["batch_id"] == "b4"


def test_the_estimate_is_shown_with_its_band_and_the_realised_value(alpha) -> None:
    (series,) = alpha.performance
    assert (series.check, series.target, series.batches) == ("performance.estimated", "accuracy", BATCHES)
    nan = math.nan
    np.testing.assert_allclose(series.estimated, [0.80, 0.75, nan, nan])
    np.testing.assert_allclose(series.lower, [0.76, 0.70, nan, nan])
    np.testing.assert_allclose(series.upper, [0.84, 0.80, nan, nan])
    np.testing.assert_allclose(series.realised, [0.78, 0.69, nan, nan])


def test_only_the_newest_runs_are_gathered(filled_store: Engine) -> None:
    data = monitor_data(filled_store, "alpha", runs=3, incidents={})
    assert data.batches == ["b2", "b3", "b4"]
    assert data.heat.batches == ["b2", "b3", "b4"]
    assert {batch for batch, _ in data.heat.cells} == {"b2", "b3"}
    assert [s.batch_id for s in data.drift] == ["b2", "b3", "b4"]
    np.testing.assert_allclose(data.performance[0].realised, [0.69, math.nan, math.nan])


def test_monitors_incidents_and_the_index_order(filled_store: Engine) -> None:
    assert monitor_names(filled_store) == ["alpha", "beta"]
    incidents = open_incidents(filled_store)
    assert set(incidents) == {"beta"}
    beta = monitor_data(filled_store, "beta", runs=10, incidents=incidents)
    # Worst first; the resolved incident is not shown.
    assert [(i["check"], i["target"], i["severity"]) for i in beta.incidents] == [
        ("performance.overall", "auc", "high"),
        ("drift.numeric", "x", "medium"),
    ]
    alpha = monitor_data(filled_store, "alpha", runs=10, incidents=incidents)
    # alpha's latest run has no verdict, beta's is high.
    assert [m.monitor for m in overview_order([alpha, beta])] == ["beta", "alpha"]


def frame(rows: list[tuple]) -> pd.DataFrame:
    """History rows as `read_history` returns them (batch, check, target, metric, value, severity,
    status)."""
    columns = ["batch_id", "check", "target", "metric", "value", "severity", "status"]
    data = pd.DataFrame(rows, columns=columns)
    data.insert(1, "batch_time", pd.Timestamp("2024-05-01", tz="UTC"))
    return data


def test_shares_and_cells_from_a_frame_with_ties_and_unknown_severities() -> None:
    history = frame(
        [
            ("a", "drift.unigrams", "t1", "psi", 0.3, "high", "ok"),
            ("a", "drift.unigrams", "t1", "psi_bound", 0.2, "high", "ok"),
            ("a", "drift.unigrams", "t2", "psi", 0.4, "high", "ok"),
            ("a", "drift.unigrams", "t3", "psi", 0.1, "low", "ok"),
            ("a", "drift.unigrams", "t4", "psi", 0.0, "bogus", "ok"),
            ("a", "drift.numeric", "n", "", math.nan, "none", "error"),
            ("b", "abnormal.nulls", "n", "share", 0.0, "none", "ok"),
            ("b", "data.summary", "n", "mean", 3.0, "none", "ok"),
        ]
    )
    cells = heat_map(history, ["a", "b"])
    assert cells.checks == ["abnormal.nulls", "drift.numeric", "drift.unigrams"]  # the summary judges nothing
    # Two targets tie at high: the first stored one is named; an unknown severity is not graded.
    assert cells.cell("a", "drift.unigrams") == HeatCell(
        "a", "drift.unigrams", "high", 3, 2, 0, 0, "t1", {"psi": 0.3, "psi_bound": 0.2}
    )
    assert cells.cell("a", "drift.numeric").state == "error"
    assert [(s.drifted, s.results, s.share) for s in drift_shares(history, ["a", "b"])] == [
        (2, 3, 2 / 3),
        (0, 0, None),
    ]
    assert performance_series(history, ["a", "b"]) == []
