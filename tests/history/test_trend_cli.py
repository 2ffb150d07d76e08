"""`driftline trend` on a stored history: one row per result that moved, on its key effect metric."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.store import record_run

runner = CliRunner()
PSI = [0.02, 0.03, 0.02, 0.03, 0.02, 0.60]
PSI_EVIDENCE = {"noise": "scaled_chi2", "scale": 0.000312, "df": 7.87, "higher_is_worse": True}
RATE_THRESHOLDS = [0.001, 0.01, 0.05]


def drift(target: str, psi: float) -> dict:
    """A graded `drift.numeric` result with the values grading and the check add beside psi."""
    return {
        "check": "drift.numeric",
        "target": target,
        "status": "ok",
        "severity": "high" if psi > 0.3 else "none",
        "metrics": {
            "psi": psi,
            "psi_bound": psi - 0.005,
            "psi_p": 0.5 if psi < 0.1 else 1e-30,
            "ks_pvalue": 0.4,
        },
        "thresholds": {"psi": [0.1, 0.2, 0.3]},
        "rows": 6000,
        "failing_rows": 300,
        "evidence": {"psi": {**PSI_EVIDENCE, "estimate": psi}},
    }


def rate(check: str, value: float, failing: int, se: float) -> dict:
    """An `abnormal.*` failing-rate result with normal evidence of standard error `se`."""
    return {
        "check": check,
        "target": "AGEP",
        "status": "ok",
        "severity": "none",
        "metrics": {"failing_rate_increase": value, "failing_share": value},
        "thresholds": {"failing_rate_increase": RATE_THRESHOLDS},
        "rows": 6000,
        "failing_rows": failing,
        "evidence": {"failing_rate_increase": {"estimate": value, "noise": "normal", "scale": se}},
    }


@pytest.fixture
def url(tmp_path: Path) -> str:
    """Six stored runs: psi jumps at the last, one column gains 12 null rows, another one bad row."""
    url = f"sqlite:///{tmp_path / 'trend.db'}"
    engine = open_store(url)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for day, psi in enumerate(PSI):
        last = day == len(PSI) - 1
        results = [
            drift("age", psi),
            drift("[red]inj", psi),
            rate("abnormal.numeric_outliers", 0.002 if last else 0.0, 12 if last else 0, 0.0002),
            rate("abnormal.out_of_range", 1 / 6000 if last else 0.0, 1 if last else 0, 0.00001),
        ]
        record_run(
            engine,
            monitor="m",
            batch_id=f"b{day}",
            batch_time=start + timedelta(days=day),
            results=results,
            status="ok",
            worst_severity="none",
            rows=6000,
        )
    engine.dispose()
    return url


def test_json_lists_each_moved_result_once_on_its_key_metric(url: str) -> None:
    out = runner.invoke(app, ["trend", "m", "--db", url, "--json"])
    assert out.exit_code == 0, out.output
    moved = {(r["check"], r["target"]): r for r in json.loads(out.stdout)["moved"]}
    assert set(moved) == {
        ("drift.numeric", "age"),
        ("drift.numeric", "[red]inj"),
        ("abnormal.numeric_outliers", "AGEP"),
    }
    psi = moved[("drift.numeric", "age")]
    # earlier 0.02, 0.03, 0.02, 0.03, 0.02: median 0.02, MAD 0; the spread floor is the larger of the
    # evidence noise 0.000312·√(2·7.87) = 0.00124 and a tenth of the first threshold, 0.01
    assert psi["metric"] == "psi" and psi["baseline_runs"] == 5
    assert psi["spread"] == pytest.approx(0.01)
    assert psi["robust_z"] == pytest.approx((0.60 - 0.02) / 0.01)
    nulls = moved[("abnormal.numeric_outliers", "AGEP")]
    # 0 for five runs, now 0.002; spread = max(standard error 0.0002, 0.1 · 0.001)
    assert nulls["metric"] == "failing_rate_increase"
    assert nulls["robust_z"] == pytest.approx(0.002 / 0.0002) and math.isfinite(nulls["robust_z"])
    assert nulls["change"] == "was 0 for 5 runs, now 0.002"


def test_the_table_says_what_it_compared_with(url: str) -> None:
    out = runner.invoke(app, ["trend", "m", "--db", url])
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert "median of up to 5 earlier run(s)" in text and "10 earlier" not in text
    assert "median of the 5 earlier runs 0.02" in text
    assert "[red]inj" in text  # a target from the data is shown, never read as markup
    for hidden in ("psi_p", "psi_bound", "ks_pvalue", "failing_share", "out_of_range", "inf"):
        assert hidden not in text.split("results whose key metric")[1]


def test_metric_option_keeps_results_with_that_key(url: str) -> None:
    out = runner.invoke(app, ["trend", "m", "--db", url, "--json", "--metric", "failing_rate_increase"])
    assert [r["check"] for r in json.loads(out.stdout)["moved"]] == ["abnormal.numeric_outliers"]
    pvalues = runner.invoke(app, ["trend", "m", "--db", url, "--json", "--metric", "psi_p"])
    assert json.loads(pvalues.stdout)["moved"] == []
