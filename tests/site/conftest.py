"""A history store filled with known results for the site's tests, on SQLite and PostgreSQL.

Monitor `alpha`, four daily batches:

| batch | status | worst | drift.numeric x / y | drift.categorical c | estimate (accuracy) | realised |
| --- | --- | --- | --- | --- | --- | --- |
| b1 | passed | low | none / none | low | 0.80 [0.76, 0.84] | 0.78 |
| b2 | failed | high | medium / none | high | 0.75 [0.70, 0.80] | 0.69 (labels joined later) |
| b3 | passed | none | error / skipped | skipped | skipped | – |
| b4 | error | – | – | – | – | – |

b1 and b2 also store the run's drift headline (`run.drifted_features` share 1/3 and 2/3). Monitor
`beta` has one failed batch and two open incidents (high, medium) and a resolved one.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from driftline.checks.result import CheckResult
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import Incident
from driftline.tasks.history.store import record_late_results, record_run

DAY0 = datetime(2024, 5, 1, tzinfo=UTC)
BATCHES = ["b1", "b2", "b3", "b4"]


def ok(check: str, target: str, severity: str = "none", **metrics: float) -> dict:
    return CheckResult(check=check, target=target, severity=severity, metrics=metrics).to_dict()


def skipped(check: str, target: str) -> dict:
    return CheckResult.skipped(check, target, "no labels yet").to_dict()


def failed(check: str, target: str) -> dict:
    return CheckResult.error(check, target, "boom").to_dict()


def estimate(value: float, lower: float, upper: float) -> dict:
    return ok("performance.estimated", "accuracy", estimated=value, lower=lower, upper=upper, degradation=0.0)


ALPHA = {
    "b1": (
        "passed",
        "low",
        [
            ok("drift.numeric", "x", psi=0.05, psi_bound=0.01),
            ok("drift.numeric", "y", psi=0.02, psi_bound=0.0),
            ok("drift.categorical", "c", "low", psi=0.12),
            estimate(0.80, 0.76, 0.84),
            ok("performance.overall", "accuracy", current=0.78, reference=0.80),
            ok("run.drifted_features", "*", drifted=1, features=3, share=1 / 3),
        ],
    ),
    "b2": (
        "failed",
        "high",
        [
            ok("drift.numeric", "x", "medium", psi=0.25, psi_bound=0.21),
            ok("drift.numeric", "y", psi=0.03, psi_bound=0.0),
            ok("drift.categorical", "c", "high", psi=0.9),
            estimate(0.75, 0.70, 0.80),
            skipped("performance.overall", "*"),
            ok("run.drifted_features", "*", drifted=2, features=3, share=2 / 3),
        ],
    ),
    "b3": (
        "passed",
        "none",
        [
            failed("drift.numeric", "x"),
            skipped("drift.numeric", "y"),
            skipped("drift.categorical", "c"),
            skipped("performance.estimated", "accuracy"),
        ],
    ),
    "b4": ("error", "none", []),
}


def fill(engine: Engine) -> None:
    """Record the runs and incidents described in the module's docstring."""
    for day, (batch_id, (status, worst, results)) in enumerate(ALPHA.items()):
        record_run(
            engine,
            monitor="alpha",
            batch_id=batch_id,
            batch_time=DAY0 + timedelta(days=day),
            results=results,
            status=status,
            worst_severity=worst,
            rows=100 + day,
        )
    record_late_results(
        engine,
        monitor="alpha",
        batch_id="b2",
        results=[ok("performance.overall", "accuracy", "medium", current=0.69, reference=0.80)],
        fail_on="high",
        labels={"rows": 101, "labelled_rows": 101},
    )
    record_run(
        engine,
        monitor="beta",
        batch_id="2024-05-02",
        batch_time=DAY0 + timedelta(days=1),
        results=[
            ok("drift.numeric", "x", "medium", psi=0.22),
            ok("performance.overall", "auc", "high", current=0.6),
        ],
        status="failed",
        worst_severity="high",
        rows=50,
    )
    with Session(engine) as session, session.begin():
        for check, target, severity, status in (
            ("drift.numeric", "x", "medium", "open"),
            ("performance.overall", "auc", "high", "open"),
            ("drift.numeric", "z", "high", "resolved"),
        ):
            session.add(
                Incident(
                    monitor="beta",
                    check=check,
                    target=target,
                    severity=severity,
                    status=status,
                    opened_batch="2024-05-02",
                    last_batch="2024-05-02",
                )
            )


@pytest.fixture
def filled_store(database_url: str) -> Iterator[Engine]:
    """The store of the module's docstring, on SQLite then PostgreSQL."""
    engine = open_store(database_url)
    try:
        fill(engine)
        yield engine
    finally:
        engine.dispose()
