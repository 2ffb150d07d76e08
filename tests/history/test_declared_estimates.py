"""A custom label-free estimate that declares what it `estimates` is treated as the catalog's are: kept
and marked superseded when labels land, charted on the site beside the realised value, and checked
against that value once labels measure it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from driftline.checks import CheckResult
from driftline.tasks.hindsight.estimates import assess_estimates
from driftline.tasks.history.query import latest_results, read_history
from driftline.tasks.history.store import record_late_results, record_run
from driftline.tasks.site.gather import performance_series
from tests.declared_checks import declared, registered

BATCH_TIME = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def two_checks() -> Iterator[None]:
    """A custom estimate of `performance.overall`, and a check with the same numbers declaring nothing."""
    estimate = declared("business.estimated_margin", "estimate", estimates="performance.overall")
    with registered(estimate, declared("business.undeclared_margin")):
        yield


def estimate(check: str, value: float, lower: float, upper: float) -> CheckResult:
    metrics = {"estimated": value, "lower": lower, "upper": upper, "degradation": 0.0}
    return CheckResult(check=check, target="accuracy", metrics=metrics, rows=1000)


def realised(value: float) -> CheckResult:
    metrics = {"current": value, "reference": 0.86}
    return CheckResult(check="performance.overall", target="accuracy", metrics=metrics, rows=1000)


def test_a_declared_estimate_is_kept_beside_the_truth_when_labels_land(store: Engine) -> None:
    results = [
        estimate("business.estimated_margin", 0.85, 0.82, 0.88),
        estimate("business.undeclared_margin", 0.85, 0.82, 0.88),
    ]
    record_run(
        store,
        monitor="m",
        batch_id="b1",
        batch_time=BATCH_TIME,
        results=results,
        status="passed",
        worst_severity="none",
        rows=1000,
    )
    record_late_results(
        store, monitor="m", batch_id="b1", results=[realised(0.70)], fail_on="high", labels={"rows": 1000}
    )
    history = read_history(store, "m")
    details = {r["check"]: r["details"] for r in latest_results(store, "m", "b1")}
    assert details["business.estimated_margin"]["superseded_by"] == "labels"
    assert "superseded_by" not in details["business.undeclared_margin"]

    [series] = performance_series(history, ["b1"])
    assert (series.check, series.realised_check, series.target) == (
        "business.estimated_margin",
        "performance.overall",
        "accuracy",
    )
    assert (series.estimated[0], series.lower[0], series.upper[0], series.realised[0]) == (
        0.85,
        0.82,
        0.88,
        0.70,
    )


def test_a_declared_estimate_is_checked_against_the_value_it_estimates() -> None:
    """Realised 0.70 against the band [0.82, 0.88] around 0.85: outside it, and 0.15 from the estimate,
    more than twice the band's half-width of 0.03: the assumption failed."""
    results = [
        estimate("business.estimated_margin", 0.85, 0.82, 0.88),
        estimate("business.undeclared_margin", 0.85, 0.82, 0.88),
    ]
    batch = {
        "business.estimated_margin": {"accuracy": {"estimated": 0.85, "lower": 0.82, "upper": 0.88}},
        "performance.overall": {"accuracy": {"current": 0.70}},
    }
    assess_estimates(results, [("b1", batch)])
    verdict = results[0].details["assumption"]
    assert verdict["failed"] and (verdict["outside"], verdict["labelled"]) == (1, 1)
    assert results[0].reason.startswith("assumption failed: realised accuracy 0.7")
    assert "assumption" not in results[1].details
