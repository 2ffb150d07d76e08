"""Fairness checks graded on evidence: bounds pinned against independent computations, false alarms
on clean resamples of real data (census with the demo classifier, Adult), detection of a disparity."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.data.demo import DATA_FILE, LABEL, scored, train_model

FAIRNESS = sorted(n for n in registry.names() if n.startswith("fairness."))
ADULT = Path(__file__).parents[2] / "data" / "adult" / "adult.parquet"
CENSUS_COLUMNS = Columns(
    label="employed", prediction="prediction", score="score", protected=("SEX", "RAC1P"), task="binary"
)
ADULT_COLUMNS = Columns(label="label", prediction="prediction", protected=("sex", "race"), task="binary")
SIZES = (100, 300, 1000, 3000)
RESAMPLES = 100


def _medium_or_worse(result) -> bool:
    return result.status == "ok" and severity_rank(result.severity) >= severity_rank("medium")


def _allowed_false_alarms(resamples: int, rate: float = 0.01) -> int:
    """Most medium-or-worse verdicts a check at a 1% false-alarm rate shows, but for 1 in 1000."""
    return int(stats.binom.ppf(0.999, resamples, rate))


def _two_groups(rates: tuple[float, float], sizes: tuple[int, int], seed: int) -> pd.DataFrame:
    """Two subgroups with exactly the given positive-prediction rates, rows shuffled."""
    frames = [
        pd.DataFrame({"g": name, "prediction": np.arange(n) < round(r * n)})
        for name, r, n in zip("ab", rates, sizes, strict=True)
    ]
    frame = pd.concat(frames, ignore_index=True).astype({"prediction": int})
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


TWO = Columns(prediction="prediction", protected=("g",), task="binary")


def _parity(frame: pd.DataFrame, reference: pd.DataFrame, **params):
    check = registry.create("fairness.statistical_parity", params)
    (result,) = run_check(check, frame, TWO, reference=reference, strict=True)
    return result


# --- the bounds, pinned ---------------------------------------------------------------------------


def test_audit_standard_error_is_the_delta_method_of_the_rate_difference() -> None:
    # Far from 0, |p1 - p2| has the standard error of p1 - p2: sqrt(p1 q1 / n1 + p2 q2 / n2).
    batch = _two_groups((0.6, 0.3), (400, 600), seed=0)
    result = _parity(batch, batch, compare_to="none")
    delta = math.sqrt(0.6 * 0.4 / 400 + 0.3 * 0.7 / 600)
    assert result.metrics["disparity"] == pytest.approx(0.3)
    assert result.evidence["disparity"]["scale"] == pytest.approx(delta, rel=0.1)
    z = stats.norm.ppf(0.99)
    assert result.metrics["disparity_bound"] == pytest.approx(0.3 - z * result.evidence["disparity"]["scale"])


def test_change_adds_the_reference_noise_and_removes_the_small_batch_bias() -> None:
    # A batch of 2 × 100 rows against a reference of 2 × 2000 with rates 0.5 and 0.45: the disparity
    # of a clean batch is a folded normal, E|X| with X ~ N(0.05, s²), larger than 0.05.
    reference = _two_groups((0.5, 0.45), (2000, 2000), seed=1)
    batch = _two_groups((0.5, 0.45), (100, 100), seed=2)
    result = _parity(batch, reference)
    s = math.sqrt(0.5 * 0.5 / 100 + 0.45 * 0.55 / 100)
    folded = stats.foldnorm(c=0.05 / s, scale=s).mean()
    assert result.details["expected_value"] == pytest.approx(folded, abs=0.1 * s)
    assert result.metrics["disparity_change"] == pytest.approx(0.05 - result.details["expected_value"])
    s_reference = math.sqrt(0.5 * 0.5 / 2000 + 0.45 * 0.55 / 2000)
    # The bootstrap of |X| near 0 is narrower than s; it is never wider than the delta method.
    scale = result.evidence["disparity_change"]["scale"]
    assert 0.5 * s < scale <= 1.1 * math.hypot(s, s_reference)


def test_change_standard_error_matches_the_spread_of_clean_batches() -> None:
    # Far from 0 the change's standard error is the spread of the disparity over batches drawn
    # from the same population (simulated here directly, with its own generator).
    reference = _two_groups((0.7, 0.4), (5000, 5000), seed=3)
    rng = np.random.default_rng(11)
    draws = [abs(rng.binomial(300, 0.7) / 300 - rng.binomial(200, 0.4) / 200) for _ in range(4000)]
    batch = _two_groups((0.7, 0.4), (300, 200), seed=4)
    result = _parity(batch, reference)
    scale = result.evidence["disparity_change"]["scale"]
    reference_se = math.sqrt(0.7 * 0.3 / 5000 + 0.4 * 0.6 / 5000)
    assert scale == pytest.approx(math.hypot(np.std(draws), reference_se), rel=0.12)
    assert result.severity == "none"


def test_small_subgroups_are_not_graded_and_named() -> None:
    reference = pd.concat(
        [_two_groups((0.5, 0.5), (500, 500), 5), pd.DataFrame({"g": "c", "prediction": [1] * 40})]
    )
    batch = pd.concat(
        [_two_groups((0.5, 0.5), (200, 200), 6), pd.DataFrame({"g": "c", "prediction": [0] * 10})]
    )
    result = _parity(batch.reset_index(drop=True), reference.reset_index(drop=True))
    assert result.details["not_graded"] == [
        {"subgroup": {"g": "c"}, "rows": 10, "reference_rows": 40, "min_group_rows": 30}
    ]
    # Subgroup c alone has a disparity of 1 - 200/400 against the rest: it is reported, not graded.
    assert result.metrics["value"] > result.details["graded_value"]
    assert result.severity == "none"
    few = _parity(batch.reset_index(drop=True).head(40), reference, min_group_rows=30)
    assert few.status == "skipped" and "min_group_rows" in few.reason


# --- clean resamples of real data -----------------------------------------------------------------


@pytest.fixture(scope="module")
def census() -> pd.DataFrame:
    """ACS 2015 (Massachusetts) scored by the demo classifier, trained on 5000 rows of 2016."""
    data = pd.read_parquet(DATA_FILE)
    features = [c for c in data.columns if c not in ("id", LABEL, "year")]
    model = train_model(data[data["year"] == 2016].head(5000), features)
    return scored(model, data[data["year"] == 2015].reset_index(drop=True), features)


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    """Adult with a fixed rule as the model (degree or capital gains), so that every rate varies."""
    frame = pd.read_parquet(ADULT)
    label = (frame["income"] == ">50K").astype(int)
    rule = (frame["education-num"] >= 13) | (frame["capital-gain"] > 5000)
    return frame.assign(label=label, prediction=rule.astype(int))


def _false_alarms(name: str, frame: pd.DataFrame, columns: Columns, seed: int, **params) -> tuple[int, int]:
    """Medium-or-worse verdicts over clean batches: the reference is half of the rows, batches of
    100 to 3000 rows are drawn from the other half."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(frame))
    reference, pool = frame.iloc[order[: len(frame) // 2]], frame.iloc[order[len(frame) // 2 :]]
    check = registry.create(name, params)
    profile = check.fit(reference, columns)
    alarms = graded = 0
    for _ in range(RESAMPLES):
        batch = pool.iloc[rng.choice(len(pool), int(rng.choice(SIZES)), replace=False)]
        (result,) = run_check(check, batch, columns, profile=profile)
        assert result.status in ("ok", "skipped"), result.reason
        graded += result.status == "ok"
        alarms += _medium_or_worse(result)
    return alarms, graded


@pytest.mark.parametrize("name", FAIRNESS)
def test_clean_census_batches_stay_quiet(name: str, census: pd.DataFrame) -> None:
    alarms, graded = _false_alarms(name, census, CENSUS_COLUMNS, seed=1)
    assert graded >= RESAMPLES // 3
    assert alarms <= _allowed_false_alarms(RESAMPLES)


@pytest.mark.parametrize("name", FAIRNESS)
def test_clean_adult_batches_stay_quiet(name: str, adult: pd.DataFrame) -> None:
    alarms, graded = _false_alarms(name, adult, ADULT_COLUMNS, seed=2)
    assert graded >= RESAMPLES // 3
    assert alarms <= _allowed_false_alarms(RESAMPLES)


@pytest.mark.parametrize("name", ["fairness.statistical_parity", "fairness.for", "fairness.equalized_odds"])
def test_clean_adult_batches_stay_quiet_on_ratios(name: str, adult: pd.DataFrame) -> None:
    # False omissions are rare in some subgroups: their ratios are graded only where each side is
    # expected to count `min_outcome_rows` rows.
    alarms, graded = _false_alarms(name, adult, ADULT_COLUMNS, seed=5, distance_measure="ratio")
    assert graded >= RESAMPLES // 3
    assert alarms <= _allowed_false_alarms(RESAMPLES)


# --- a real disparity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "flipped"),
    [("fairness.statistical_parity", 0.8), ("fairness.equalized_odds", 0.5), ("fairness.tpr", 0.5)],
)
def test_predictions_flipped_for_women_are_detected(name: str, flipped: float, census: pd.DataFrame) -> None:
    check = registry.create(name, {})
    profile = check.fit(census, CENSUS_COLUMNS)
    rng = np.random.default_rng(3)
    detected = []
    for _ in range(10):
        batch = census.iloc[rng.choice(len(census), 1000, replace=False)].copy()
        women = (batch["SEX"].astype(str) == "2").to_numpy()
        flip = women & (batch["prediction"].to_numpy() == 1) & (rng.random(len(batch)) < flipped)
        batch.loc[flip, "prediction"] = 0
        batch["score"] = np.where(flip, 0.0, batch["score"])
        (result,) = run_check(check, batch, CENSUS_COLUMNS, profile=profile)
        detected.append(_medium_or_worse(result))
    assert all(detected)


def test_audit_grades_the_standing_disparity_the_default_leaves_alone(census: pd.DataFrame) -> None:
    # The reference's own disparity (a standing property of the model) is not a change: a clean batch
    # is quiet by default, while the audit grades the batch's level on its lower bound.
    labels = census.assign(prediction=census["employed"])
    batch = labels.sample(3000, random_state=4)
    (change,) = run_check(
        registry.create("fairness.statistical_parity", {}), batch, CENSUS_COLUMNS, reference=labels
    )
    audit_check = registry.create(
        "fairness.statistical_parity", {"compare_to": "none", "thresholds": {"disparity": [0.04]}}
    )
    (audit,) = run_check(audit_check, batch, CENSUS_COLUMNS, reference=labels)
    assert change.severity == "none"
    assert audit.metrics["disparity_bound"] >= 0.04 and audit.severity == "high"
