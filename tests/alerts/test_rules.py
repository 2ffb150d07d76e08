"""Baseline rules: their config errors, their verdicts pinned against pandas/scipy/ruptures computations,
and rule incidents end to end over a stored history (SQLite and PostgreSQL)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
import ruptures
from pydantic import ValidationError
from scipy.stats import median_abs_deviation
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from driftline.tasks.alerts import AlertConfig, process_alerts
from driftline.tasks.alerts.config import AlertRule
from driftline.tasks.alerts.rules import read_recent, rule_results
from driftline.tasks.history.models import Incident
from driftline.tasks.history.store import record_run
from tests.alerts.builders import TOKEN, result
from tests.alerts.slack_server import SlackStandIn

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def frame(values: dict[str, list[float]], metric: str = "psi", check: str = "drift.numeric") -> pd.DataFrame:
    """A history frame with one series per target, one run an hour, batch ids b000, b001, ..."""
    rows = [
        {
            "batch_id": f"b{i:03d}",
            "batch_time": pd.Timestamp(T0) + pd.Timedelta(hours=i),
            "check": check,
            "target": target,
            "metric": metric,
            "value": float(v),
        }
        for target, series in values.items()
        for i, v in enumerate(series)
    ]
    return pd.DataFrame(rows)


def rule(**fields: Any) -> AlertRule:
    return AlertRule.model_validate({"check": "drift.numeric", "metric": "psi", **fields})


NOISE = [0.10, 0.12, 0.09, 0.11, 0.10, 0.13, 0.08, 0.11, 0.12, 0.10, 0.09, 0.11]


# --- configuration --------------------------------------------------------------------------------


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        AlertConfig.model_validate(data)
    return str(caught.value)


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (
            [{"check": "drift.numeric", "metric": "psi"}],
            "give above_baseline, below_baseline or change_point",
        ),
        ([{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "abov": 1}], "rules.0.abov"),
        ([{"check": "drift.numeric", "metric": "psi", "above_baseline": -1}], "rules.0.above_baseline"),
        ([{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "window": 2}], "rules.0.window"),
        (
            [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "method": "iqr"}],
            "rules.0.method",
        ),
        (
            [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "min_runs": 40}],
            "must not exceed window",
        ),
        ([{"check": "drift.numeric", "above_baseline": 3}], "rules.0.metric"),
        (
            [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3}] * 2,
            "share the key 'rule:drift.numeric/psi'; give one of them a `name`",
        ),
        (
            [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "severity": "low"}],
            "rules.0.severity: low is below min_severity medium",
        ),
    ],
)
def test_rule_errors_name_the_key(rules: list[dict[str, Any]], expected: str) -> None:
    assert expected in _error({"rules": rules})


def test_routes_need_a_bot_channel_and_distinct_channels() -> None:
    webhook = {"webhook_url": "https://hooks.example/x"}
    assert "routes: need alerts.slack.channel" in _error({"slack": webhook, "routes": [{"channel": "#a"}]})
    twice = {"slack": {"channel": "#a"}, "routes": [{"channel": "#a"}]}
    assert "channel '#a' is listed twice" in _error(twice)
    assert "routes.0.min_severity" in _error(
        {"slack": {"channel": "#a"}, "routes": [{"channel": "#b", "min_severity": "x"}]}
    )


def test_rule_defaults_and_keys() -> None:
    config = AlertConfig.model_validate(
        {"rules": [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "for_runs": 2}]}
    )
    (only,) = config.rules
    assert (only.method, only.window, only.for_runs, only.key, only.runs_needed) == (
        "mad",
        30,
        2,
        "rule:drift.numeric/psi",
        32,
    )
    assert rule(name="psi-age", above_baseline=3).key == "rule:psi-age"


# --- verdicts -------------------------------------------------------------------------------------


def test_std_rule_fires_after_two_runs_above_the_band() -> None:
    values = [*NOISE, 0.30, 0.32]
    (fired,) = rule_results(
        rule(above_baseline=3, method="std", window=10, for_runs=2), frame({"age": values}), "b013"
    )
    previous = pd.Series(values).shift(1).rolling(10)
    mean, std = previous.mean().iloc[-1], previous.std(ddof=1).iloc[-1]
    assert fired["check"] == "rule:drift.numeric/psi" and fired["target"] == "age"
    assert fired["severity"] == "medium" and fired["status"] == "ok"
    assert fired["metrics"]["psi"] == 0.32
    assert fired["metrics"]["baseline"] == pytest.approx(mean, rel=1e-12)
    assert fired["metrics"]["upper"] == pytest.approx(mean + 3 * std, rel=1e-12)
    assert fired["metrics"]["lower"] is None  # no lower side
    assert fired["metrics"]["z"] == pytest.approx((0.32 - mean) / std, rel=1e-10)
    # the run before was above its own band too (that is what for_runs counts)
    before = pd.Series(values[:-1]).shift(1).rolling(10)
    assert (0.30 - before.mean().iloc[-1]) / before.std(ddof=1).iloc[-1] > 3


def test_one_run_outside_is_not_enough_for_two() -> None:
    values = [*NOISE, 0.11, 0.40]
    (held,) = rule_results(
        rule(above_baseline=3, method="std", window=10, for_runs=2), frame({"age": values}), "b013"
    )
    assert held["severity"] == "none" and held["metrics"]["z"] > 3
    (single,) = rule_results(rule(above_baseline=3, method="std", window=10), frame({"age": values}), "b013")
    assert single["severity"] == "medium"


def test_mad_rule_below_the_band_matches_scipy() -> None:
    values = [*NOISE, 0.01]
    (fired,) = rule_results(rule(below_baseline=4, window=12), frame({"age": values}), "b012")
    previous = np.array(NOISE)
    scale = median_abs_deviation(previous, scale="normal")
    assert fired["severity"] == "medium"
    assert fired["metrics"]["lower"] == pytest.approx(np.median(previous) - 4 * scale, rel=1e-12)
    assert fired["metrics"]["z"] == pytest.approx((0.01 - np.median(previous)) / scale, rel=1e-12)
    (calm,) = rule_results(rule(above_baseline=4, window=12), frame({"age": values}), "b012")
    assert calm["severity"] == "none"


def test_series_without_this_batch_or_enough_history_are_skipped() -> None:
    history = frame({"age": [*NOISE, 0.5], "income": NOISE[:3]})
    results = {r["target"]: r for r in rule_results(rule(above_baseline=3), history, "b012")}
    assert results["age"]["severity"] == "medium"
    assert results["income"]["status"] == "skipped" and "b012" in results["income"]["reason"]
    short = rule_results(rule(above_baseline=3, min_runs=5), frame({"age": NOISE[:4]}), "b003")
    assert (
        short[0]["status"] == "skipped"
        and "3 earlier value(s) of psi; the rule needs 5" in short[0]["reason"]
    )


def test_target_filter_and_constant_history() -> None:
    history = frame({"age": [0.1] * 12 + [0.1], "income": [0.1] * 12 + [0.2]})
    results = rule_results(rule(above_baseline=3, target="income"), history, "b012")
    assert [(r["target"], r["severity"]) for r in results] == [("income", "medium")]
    assert results[0]["metrics"]["z"] is None  # infinite z (any change from a constant) is stored as null


def test_change_point_rule_fires_on_a_recent_level_shift() -> None:
    rng = np.random.default_rng(11)
    values = list(np.concatenate([rng.normal(0.10, 0.01, 28), rng.normal(0.16, 0.01, 3)]))
    history = frame({"age": values, "calm": list(rng.normal(0.10, 0.01, 31))})
    results = {
        r["target"]: r for r in rule_results(rule(change_point=True, window=30, for_runs=3), history, "b030")
    }
    assert results["age"]["severity"] == "medium" and results["calm"]["severity"] == "none"
    # the strength is ruptures' l2 cost fall at its best single split, in units of the noise variance
    series = np.array(values)
    split, _ = ruptures.Dynp(model="l2", min_size=2, jump=1).fit(series).predict(n_bkps=1)
    assert 31 - split == 3
    cost = ruptures.costs.CostL2().fit(series)
    fall = cost.error(0, 31) - cost.error(0, split) - cost.error(split, 31)
    noise = median_abs_deviation(np.diff(series), scale="normal") / math.sqrt(2)
    assert results["age"]["metrics"]["shift"] == pytest.approx(fall / noise**2, rel=1e-9)


# --- end to end over the stored history -----------------------------------------------------------


def _store(engine: Engine, i: int, psi: float, severity: str = "none") -> list[dict[str, Any]]:
    results = [result("drift.numeric", "age", severity, metrics={"psi": psi})]
    record_run(
        engine,
        monitor="acs",
        batch_id=f"b{i:03d}",
        batch_time=T0 + timedelta(hours=i),
        results=results,
        status="ok",
        worst_severity=severity,
        rows=1000,
    )
    return results


def test_rule_incidents_open_and_resolve_from_the_stored_history(engine: Engine, slack: SlackStandIn) -> None:
    config = AlertConfig.model_validate(
        {
            "slack": {"channel": "#ml-alerts", "base_url": slack.api_url},
            "rules": [
                {"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "window": 10, "for_runs": 2}
            ],
        }
    )
    for i, psi in enumerate(NOISE):
        _store(engine, i, psi)

    def run(i: int, psi: float) -> list[str]:
        results = _store(engine, i, psi)
        report = process_alerts(
            engine, monitor="acs", batch_id=f"b{i:03d}", results=results, config=config, token=TOKEN
        )
        return [f"{c.kind} {c.check} {c.target}" for c in report.changes]

    assert run(12, 0.30) == []  # one run above the band: for_runs is 2
    assert run(13, 0.31) == ["opened rule:drift.numeric/psi age"]
    assert run(14, 0.33) == []  # still above its (now rising) band: stays open
    with Session(engine) as session:
        incident = session.scalars(select(Incident)).one()
        assert (incident.check, incident.target, incident.status, incident.severity) == (
            "rule:drift.numeric/psi",
            "age",
            "open",
            "medium",
        )
        assert incident.details["metrics"]["psi"] == 0.33
    (post,) = slack.accepted()
    assert "rule:drift.numeric/psi · age: opened" in post.body["text"]
    assert run(15, 0.10) == run(16, 0.10) == []  # quiet, still open: resolve_after is 3 by default
    assert run(17, 0.10) == ["resolved rule:drift.numeric/psi age"]
    assert len(slack.thread(slack.top_level()[0]["ts"])) == 1


def test_read_recent_reads_only_the_newest_runs(engine: Engine) -> None:
    for i in range(40):
        _store(engine, i, 0.1 + i / 1000)
    with Session(engine) as session:
        recent = read_recent(session, "acs", 5, until=T0 + timedelta(hours=30), checks=["drift.numeric"])
    assert sorted(recent["batch_id"]) == [f"b{i:03d}" for i in range(26, 31)]
    assert recent["value"].iloc[-1] == pytest.approx(
        0.1 + recent["batch_id"].map(lambda b: int(b[1:])).iloc[-1] / 1000
    )
