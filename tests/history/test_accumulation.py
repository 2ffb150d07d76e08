"""The history read of evidence over time (`tasks.history.accumulation`): which earlier batches count,
what each gives, the bounded query, and a store that cannot be read."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from scipy import stats
from sqlalchemy import Engine, event

from driftline.checks.evidence import Evidence, grade_results, normal
from driftline.checks.result import CheckResult
from driftline.tasks.alerts.config import SustainedConfig
from driftline.tasks.history.accumulation import (
    HISTORY_RUNS,
    accumulate_evidence,
    accumulating,
    read_earlier,
)
from driftline.tasks.history.db import open_store
from driftline.tasks.history.store import record_run, start_run

START = datetime(2024, 1, 1, tzinfo=UTC)
SE = 0.01


def graded(
    estimate: float,
    check: str = "drift.label",
    target: str = "employed",
    shares: dict[str, list[float]] | None = None,
    rows: int = 1000,
) -> CheckResult:
    """A graded result of one normal-evidence metric, as a run grades it, with category share scores
    ([score, reference share, batch share]) when given."""
    result = CheckResult(
        check,
        target,
        metrics={"share_change": estimate},
        thresholds={"share_change": [0.015, 0.03, 0.06]},
        rows=rows,
        details={"share_scores": shares} if shares is not None else {},
        evidence={"share_change": normal(estimate, SE).to_dict()},
    )
    return grade_results([result])[0]


def store_batch(
    engine: Engine,
    day: int,
    estimate: float,
    reference: str = "A",
    status: str = "passed",
    shares: dict[str, list[float]] | None = None,
    rows: int = 1000,
) -> str:
    batch_id = (START + timedelta(days=day)).date().isoformat()
    record_run(
        engine,
        monitor="m",
        batch_id=batch_id,
        batch_time=START + timedelta(days=day),
        results=[graded(estimate, shares=shares, rows=rows), graded(0.5, target="other")],
        status=status,
        worst_severity="none",
        rows=1000,
        details={"reference_rows": 6000, "reference_hash": reference},
    )
    return batch_id


def earlier_of(engine: Engine, day: int, reference: str = "A") -> list[Any]:
    batch_id = (START + timedelta(days=day)).date().isoformat()
    current = graded(0.0)
    return read_earlier(
        engine, "m", batch_id, START + timedelta(days=day), reference, accumulating([current])
    )


def test_the_history_is_the_last_runs_against_this_reference_up_to_a_change(store: Engine) -> None:
    """Only completed runs before this batch count, at most `HISTORY_RUNS`, newest back to the first
    run graded against another reference; each gives its p-value and its excess effect."""
    ids = [store_batch(store, day, 0.001 * day) for day in range(20)]
    assert [e.batch_id for e in earlier_of(store, 30)] == ids[-HISTORY_RUNS:]
    store_batch(store, 20, 0.1, reference="B")
    after = [store_batch(store, day, 0.02) for day in (21, 22, 23)]
    store_batch(store, 24, 0.02, status="error")
    start_run(store, monitor="m", batch_id="2024-01-26", batch_time=START + timedelta(days=25))
    store_batch(store, 27, 0.02)  # later than this batch
    earlier = earlier_of(store, 26)
    assert [e.batch_id for e in earlier] == after
    p, effect = earlier[0].point(accumulating([graded(0.0)])[0])
    assert p == pytest.approx(stats.norm.sf(0.02 / SE))
    assert effect == pytest.approx(0.02)
    assert earlier_of(store, 26, reference="B") == []


def test_re_running_a_batch_leaves_it_out_of_its_own_history(store: Engine) -> None:
    ids = [store_batch(store, day, 0.0) for day in range(4)]
    assert [e.batch_id for e in earlier_of(store, 3)] == ids[:3]


def test_the_read_is_served_by_the_indexes() -> None:
    """SQLite's plan of the one query: the runs by ix_runs_monitor_time, the results of those (at most
    16) batches by their unique key (monitor, batch id, check, ...), never a scan of either table."""
    engine = open_store("sqlite://")
    plans: list[str] = []

    def explain(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "results" in statement:
            plans.extend(row[-1] for row in cursor.execute(f"EXPLAIN QUERY PLAN {statement}", parameters))

    event.listen(engine, "before_cursor_execute", explain)
    try:
        earlier_of(engine, 5)
    finally:
        engine.dispose()
    assert "SEARCH runs USING INDEX ix_runs_monitor_time (monitor=? AND batch_time<?)" in plans
    assert any(p.startswith("SEARCH results USING INDEX") and "monitor=? AND batch_id=?" in p for p in plans)
    assert not any(p.startswith(("SCAN runs", "SCAN results")) for p in plans), plans


def context(url: str, **config: Any) -> Any:
    spec = SimpleNamespace(name="m", alerts=SimpleNamespace(sustained=SustainedConfig(**config)))
    return SimpleNamespace(spec=spec, database_url=url, driver=SimpleNamespace(logger=logging.getLogger("t")))


def test_a_store_that_cannot_be_read_skips_the_layer_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    results = [graded(0.05)]
    before = [r.to_dict() for r in results]
    ran = SimpleNamespace(batch_id="b", batch_time=START, rows=1000, results=results)
    prepared = SimpleNamespace(frame=range(6000), content_hash="A")
    url = "postgresql+psycopg://nobody:secret@127.0.0.1:1/none"
    with caplog.at_level(logging.WARNING):
        accumulate_evidence(context(url), ran, prepared, results)
    assert [r.to_dict() for r in results] == before
    assert len(caplog.records) == 1 and "evidence over time skipped" in caplog.records[0].getMessage()
    assert "secret" not in caplog.records[0].getMessage()


def test_a_claim_raises_the_result_and_says_why(store: Engine, database_url: str) -> None:
    """Four batches of a change of 0.02 (two standard errors each): no one batch proves it at the run's
    level, together they do; the result is raised to the sustained severity and says so."""
    for day in range(3):
        store_batch(store, day, 0.02)
    results = [graded(0.02)]
    assert results[0].severity == "none"
    ran = SimpleNamespace(batch_id="2024-01-04", batch_time=START + timedelta(days=3), rows=1000)
    prepared = SimpleNamespace(frame=range(1_000_000), content_hash="A")
    accumulate_evidence(context(database_url, expected_run_length=100), ran, prepared, results)
    result = results[0]
    claim = result.details["sustained"]
    rho = 1000 / 1_001_000
    z = stats.norm.isf(stats.norm.sf(2.0))
    assert claim["window"] == 4 and claim["z"] == pytest.approx(4 * z / (4 * (1 - rho) + 16 * rho) ** 0.5)
    assert claim["level"] == pytest.approx(stats.norm.isf(0.01 / 4))
    assert claim["batches"] == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    assert (claim["phi"], claim["rho"]) == (1.0, pytest.approx(rho))
    assert result.severity == "medium" and result.metrics["share_change_sustained_z"] == claim["z"]
    assert result.reason.endswith(
        "; over the last 4 batches, share_change of employed stayed above its reference level (mean "
        "excess 0.02, z 4.0 ≥ 2.8 for 1 false page per 100 runs over 1 metric × 4 windows)"
    )
    assert Evidence.from_dict(result.evidence["share_change"]).estimate == 0.02


def test_the_documented_configuration_is_the_default_and_loads() -> None:
    """The `alerts.sustained` example of docs/grading.md validates, and states the defaults."""
    import re
    from pathlib import Path

    import yaml

    from driftline.tasks.alerts.config import AlertConfig

    doc = (Path(__file__).parents[2] / "docs" / "grading.md").read_text()
    (example,) = [b for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "sustained:" in b]
    config = AlertConfig(**yaml.safe_load(example)["alerts"])
    assert config.sustained == AlertConfig().sustained == SustainedConfig()
    with pytest.raises(ValueError, match="expected_run_length"):
        AlertConfig(sustained={"expected_run_length": 1})


def test_the_budget_gives_the_model_level_metrics_half_of_it() -> None:
    """One model-level metric (drift.label) and three feature-level ones: the first fires at
    Φ⁻¹(1 − 0.001 · 0.5 / 4), each feature at Φ⁻¹(1 − 0.001 · 0.5 / 3 / 4); the sentence says so."""
    from driftline.tasks.history.accumulation import Budget, budget_words

    results = [graded(0.01)] + [graded(0.01, check="drift.numeric", target=f"x{i}") for i in range(3)]
    budget = Budget.of(SustainedConfig(), results, rows=1000, reference_rows=6000)
    assert (budget.tests, budget.model_tests) == (4, 1)
    assert budget.level("drift.label") == pytest.approx(stats.norm.isf(0.001 * 0.5 / 4))
    assert budget.level("drift.numeric") == pytest.approx(stats.norm.isf(0.001 * 0.5 / 3 / 4))
    assert budget_words(budget) == "4 metrics (half to the model's 1)"
    alone = Budget.of(SustainedConfig(), results[1:], rows=1000, reference_rows=6000)
    assert alone.level("drift.numeric") == pytest.approx(stats.norm.isf(0.001 / 3 / 4))
    assert budget_words(alone) == "3 metrics"


def sustained_of(database_url: str, day: int, result: CheckResult, **config: Any) -> dict[str, Any] | None:
    """Run the layer for one result of the batch of `day` (a reference of 6,000 rows, 1,000-row
    batches); its `details.sustained`, or None."""
    batch_id = (START + timedelta(days=day)).date().isoformat()
    ran = SimpleNamespace(batch_id=batch_id, batch_time=START + timedelta(days=day), rows=1000)
    prepared = SimpleNamespace(frame=range(6000), content_hash="A")
    accumulate_evidence(context(database_url, **config), ran, prepared, [result])
    return result.details.get("sustained")


def test_a_label_rate_drifting_up_is_claimed_on_its_share_scores(store: Engine, database_url: str) -> None:
    """Share scores 2.0, 2.2, 2.4 and 2.6 of the label's class "1" (a rate going from 0.40 to 0.45):
    the window of four sums them over sqrt(4(1 − ρ) + 16ρ), ρ = 1/7, and reaches the level of one
    metric tested both ways, Φ⁻¹(1 − 0.01 / (4 · 2)); a last batch whose share fell breaks every window."""
    scores = [2.0, 2.2, 2.4, 2.6]
    for day, z in enumerate(scores[:-1]):
        store_batch(store, day, 0.02, shares={"1": [z, 0.4, 0.43 + 0.005 * day]})
    result = graded(0.02, shares={"1": [scores[-1], 0.4, 0.45]})
    claim = sustained_of(database_url, 3, result, expected_run_length=100)
    assert claim is not None
    rho = 1 / 7
    assert claim["z"] == pytest.approx(sum(scores) / (4 * (1 - rho) + 16 * rho) ** 0.5)
    assert claim["level"] == pytest.approx(stats.norm.isf(0.01 / 4 / 2))
    assert (claim["category"], claim["direction"], claim["tests"], claim["window"]) == ("1", "rose", 2, 4)
    assert claim["mean_excess"] == pytest.approx((0.43 + 0.435 + 0.44 + 0.45) / 4 - 0.4)
    assert result.reason.endswith(
        "; over the last 4 batches, the share of employed = 1 stayed above its reference share (mean "
        "change +0.03875, z 3.8 ≥ 3.0 for 1 false page per 100 runs over 1 metric × 4 windows × 2 sides "
        "of 1 category)"
    )
    falling = graded(0.02, shares={"1": [-scores[-1], 0.4, 0.45]})
    assert sustained_of(database_url, 3, falling, expected_run_length=100) is None


def test_older_runs_stored_without_share_scores_fall_back_to_p_values(
    store: Engine, database_url: str
) -> None:
    """A history stored before the share scores existed: the layer accumulates the p-values, as
    before, until two earlier batches carry scores; then the scores, over those batches only."""
    for day in range(3):
        store_batch(store, day, 0.02)
    result = graded(0.02, shares={"1": [0.1, 0.4, 0.4]})
    claim = sustained_of(database_url, 3, result, expected_run_length=100)
    assert claim is not None and "category" not in claim and claim["window"] == 4
    for day in (3, 4):
        store_batch(store, day, 0.02, shares={"1": [0.1, 0.4, 0.4]})
    assert (
        sustained_of(database_url, 5, graded(0.02, shares={"1": [0.1, 0.4, 0.4]}), expected_run_length=100)
        is None
    )


def test_a_certain_but_tiny_share_change_is_held_back(store: Engine, database_url: str) -> None:
    """Scores far above the level but the category's share 0.25 points above its reference's: below
    the gate (a fifth of the lowest threshold 0.015: 0.3 points, in share units), so no claim; for a
    PSI metric the gate is the share change whose two-category PSI reaches a fifth of 0.1."""
    from driftline.checks.shares import psi_share_change, two_bin_psi

    for day in range(3):
        store_batch(store, day, 0.02, shares={"1": [4.0, 0.4, 0.4025]})
    result = graded(0.02, shares={"1": [4.0, 0.4, 0.4025]})
    assert sustained_of(database_url, 3, result) is None
    assert sustained_of(database_url, 3, result, min_effect=0.15) is not None  # 0.225 points: claimed
    rise = psi_share_change(0.18, 0.02, 1)
    assert two_bin_psi(0.18, 0.18 + rise) == pytest.approx(0.02)
    assert 0.05 < rise < 0.06


def test_each_earlier_batch_shares_the_reference_by_its_own_rows(store: Engine, database_url: str) -> None:
    """Three earlier batches of 3,000 rows and this one of 1,000 against 6,000 reference rows: the
    window of four sums the scores over sqrt(Σ(1 − ρ_i) + (Σ√ρ_i)²), ρ_i = n_i / (n_i + 6,000), read
    from each stored result's rows."""
    for day in range(3):
        store_batch(store, day, 0.03, rows=3000)
    result = graded(0.03)
    claim = sustained_of(database_url, 3, result, expected_run_length=100)
    assert claim is not None and claim["window"] == 4
    rhos = [3000 / 9000] * 3 + [1000 / 7000]
    variance = sum(1 - r for r in rhos) + sum(r**0.5 for r in rhos) ** 2
    assert claim["z"] == pytest.approx(4 * stats.norm.isf(stats.norm.sf(3.0)) / variance**0.5)
    assert claim["rho"] == pytest.approx(1000 / 7000)
