"""Performance checks graded on evidence: standard errors pinned against independent computations,
false alarms on clean resamples of the census, detection of real shifts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn import metrics as skm

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.performance import CalibrationBins
from driftline.checks.performance_estimated import EstimatedPerformance
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.data.demo import DATA_FILE, LABEL, scored, train_model

COLUMNS = Columns(label=LABEL, prediction="prediction", score="score", task="binary")
SIZES = (100, 300, 1000, 2000, 5000)
RESAMPLES = 150
CHECKS = ("performance.overall", "performance.calibration", "performance.estimated")


def by_target(results):
    return {r.target: r for r in results}


def worst(results) -> int:
    return max(severity_rank(r.severity) for r in results)


@pytest.fixture(scope="module")
def census() -> dict[str, pd.DataFrame]:
    """The demo's classifier trained on 6,000 census rows of 2015, scored on two disjoint held-out
    sets of the same year: the reference (6,000 rows) and a pool of clean batches (8,000 rows)."""
    data = pd.read_parquet(DATA_FILE)
    features = [c for c in data.columns if c not in ("id", LABEL, "year")]
    base = data[data["year"] == 2015].drop(columns="year").sample(frac=1.0, random_state=0)
    model = train_model(base.iloc[:6000], features)
    later = data[(data["year"] > 2015) & (data["AGEP"] >= 60)].drop(columns="year")
    return {
        "reference": scored(model, base.iloc[6000:12000], features).reset_index(drop=True),
        "pool": scored(model, base.iloc[12000:], features).reset_index(drop=True),
        "aged": scored(model, later.sample(frac=1.0, random_state=0), features).reset_index(drop=True),
    }


def evaluate(name: str, census: dict, batch: pd.DataFrame, **params) -> dict:
    check = registry.create(name, params)
    if name == "performance.estimated":
        batch = batch.drop(columns=LABEL)
    return by_target(run_check(check, batch, COLUMNS, reference=census["reference"], strict=True))


# --- standard errors against independent computations ----------------------------------------------


def test_accuracy_and_f1_bootstrap_errors_match_binomial_and_row_bootstrap(census):
    """Accuracy's bootstrap SE is the binomial sqrt(p(1-p)/n); F1's matches a direct row bootstrap
    with scikit-learn (400 draws each side: within 15%)."""
    batch = census["pool"].iloc[:800]
    results = evaluate("performance.overall", census, batch)
    y, d = batch[LABEL].to_numpy(), batch["prediction"].to_numpy()
    p = skm.accuracy_score(y, d)
    accuracy = results["accuracy"].details["batch_standard_error"]
    assert accuracy == pytest.approx(math.sqrt(p * (1 - p) / len(y)), rel=0.15)
    rng = np.random.default_rng(3)
    draws = [rng.integers(0, len(y), len(y)) for _ in range(400)]
    direct = np.std([skm.f1_score(y[i], d[i]) for i in draws], ddof=1)
    assert results["f1"].details["batch_standard_error"] == pytest.approx(direct, rel=0.15)
    reference = census["reference"]
    q = skm.accuracy_score(reference[LABEL], reference["prediction"])
    combined = math.sqrt(accuracy**2 + q * (1 - q) / len(reference))
    assert results["accuracy"].metrics["standard_error"] == pytest.approx(combined, rel=0.05)


def hanley_mcneil(auc: float, positives: int, negatives: int) -> float:
    """Hanley & McNeil (1982), equation 2, written out."""
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    numerator = auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)
    return math.sqrt(numerator / (positives * negatives))


def test_auc_error_is_hanley_mcneil_and_close_to_a_row_bootstrap(census):
    batch = census["pool"].iloc[:1500]
    result = evaluate("performance.overall", census, batch)["auc"]
    y, s = batch[LABEL].to_numpy(), batch["score"].to_numpy()
    auc, positives = skm.roc_auc_score(y, s), int(y.sum())
    expected = hanley_mcneil(auc, positives, len(y) - positives)
    assert result.details["batch_standard_error"] == pytest.approx(expected, rel=1e-12)
    rng = np.random.default_rng(4)
    draws = [rng.integers(0, len(y), len(y)) for _ in range(300)]
    direct = np.std([skm.roc_auc_score(y[i], s[i]) for i in draws], ddof=1)
    assert expected == pytest.approx(direct, rel=0.2)


def test_loss_errors_are_the_standard_errors_of_per_row_means(census):
    batch = census["pool"].iloc[:600]
    result = evaluate("performance.overall", census, batch)["log_loss"]
    y, s = batch[LABEL].to_numpy(), batch["score"].to_numpy()
    losses = -np.log(np.where(y == 1, s, 1 - s))
    assert result.metrics["current"] == pytest.approx(skm.log_loss(y, s))
    expected = stats.sem(losses)
    assert result.details["batch_standard_error"] == pytest.approx(expected, rel=1e-9)
    rng = np.random.default_rng(6)
    x = rng.normal(size=2000)
    frame = pd.DataFrame({"y": x, "pred": x + rng.normal(0, 1, 2000)})
    regression = Columns(label="y", prediction="pred", task="regression")
    check = registry.create("performance.overall")
    rmse = by_target(run_check(check, frame, regression, reference=frame, strict=True))["rmse"]
    e2 = (frame["y"] - frame["pred"]).to_numpy() ** 2
    draws = [rng.integers(0, 2000, 2000) for _ in range(400)]
    direct = np.std([np.sqrt(e2[i].mean()) for i in draws], ddof=1)
    assert rmse.details["batch_standard_error"] == pytest.approx(direct, rel=0.15)


def test_calibration_error_is_debiased_and_its_error_matches_a_row_bootstrap():
    """Perfectly calibrated scores: the naive binned squared gap is positive on small batches, the
    debiased one averages zero; its bootstrap SE matches a direct row bootstrap within 20%."""
    rng = np.random.default_rng(7)
    naive, debiased = [], []
    for _ in range(300):
        score = rng.random(100)
        truth = rng.random(100) < score
        bins = CalibrationBins.from_arrays(truth, score, 10)
        filled = bins.total > 0
        gap = bins.fraction_positive()[filled] - bins.mean_score()[filled]
        naive.append(np.sum(bins.total[filled] * gap**2) / 100)
        debiased.append(bins.calibration_error().value)
    assert np.mean(naive) > 0.015
    assert abs(np.mean(debiased)) < 3 * np.std(debiased) / np.sqrt(300)
    score = rng.random(500)
    truth = rng.random(500) < score**1.5
    measured = CalibrationBins.from_arrays(truth, score, 10).calibration_error()
    draws = [rng.integers(0, 500, 500) for _ in range(400)]
    direct = np.std(
        [CalibrationBins.from_arrays(truth[i], score[i], 10).calibration_error().value for i in draws], ddof=1
    )
    assert measured.standard_error == pytest.approx(direct, rel=0.2)


# --- false alarms on clean census batches ------------------------------------------------------------


@pytest.mark.parametrize("name", CHECKS)
def test_clean_census_batches_rarely_reach_medium(census, name):
    """Batches of 100 to 5,000 rows drawn from the reference's population (held-out rows of the same
    year): medium or worse at most as often as a 1% rate allows (binomial, 99.9%)."""
    check = registry.create(name)
    profile = check.fit(census["reference"], COLUMNS)
    pool = census["pool"] if name != "performance.estimated" else census["pool"].drop(columns=LABEL)
    rng = np.random.default_rng(11)
    alarms = 0
    for i in range(RESAMPLES):
        batch = pool.iloc[rng.choice(len(pool), SIZES[i % len(SIZES)], replace=False)]
        alarms += worst(run_check(check, batch, COLUMNS, profile=profile, strict=True)) >= 2
    assert alarms <= stats.binom.ppf(0.999, RESAMPLES, 0.01), alarms


def test_one_row_and_scarce_class_batches_are_skipped(census):
    one = evaluate("performance.overall", census, census["pool"].iloc[:1].assign(prediction=0))
    assert [r.status for r in one.values()] == ["skipped"] and "at least 30" in one["*"].reason
    pool = census["pool"]
    scarce = pd.concat([pool[pool[LABEL] == 0].iloc[:60], pool[pool[LABEL] == 1].iloc[:4]])
    results = evaluate("performance.overall", census, scarce)
    assert results["accuracy"].status == "ok"
    assert results["f1"].status == "skipped" and "scarcest has 4" in results["f1"].reason
    assert results["auc"].status == "skipped"


# --- detection ------------------------------------------------------------------------------------


def test_a_flipped_share_of_labels_is_detected(census):
    """Concept shift: 15% of 1,000 labels flipped costs about 10 points of accuracy: high; 25% of
    2,000 flipped also breaks the calibration."""
    rng = np.random.default_rng(12)
    batch = census["pool"].iloc[:1000].copy()
    flip = rng.random(1000) < 0.15
    batch.loc[flip, LABEL] = 1 - batch.loc[flip, LABEL]
    results = evaluate("performance.overall", census, batch)
    assert {results[m].severity for m in ("accuracy", "f1", "auc")} == {"high"}
    batch = census["pool"].iloc[:2000].copy()
    flip = rng.random(2000) < 0.25
    batch.loc[flip, LABEL] = 1 - batch.loc[flip, LABEL]
    [calibration] = evaluate("performance.calibration", census, batch).values()
    assert severity_rank(calibration.severity) >= 2, calibration.reason


def test_the_aged_census_population_is_detected_with_and_without_labels(census):
    """Respondents aged 60 and over: the model's F1 falls by about 0.2; the realised and the
    label-free estimated F1 are both high."""
    pool = census["pool"]
    aged = pool[pool["AGEP"] >= 60].sample(1500, random_state=0)
    assert evaluate("performance.overall", census, aged)["f1"].severity == "high"
    assert evaluate("performance.estimated", census, aged)["f1"].severity == "high"


def test_an_auc_drop_of_five_points_on_a_few_thousand_rows_is_medium(census):
    """Reference and batch both aged 60 and over in 2016-18 (AUC about 0.80), 6.5% of the 5,000 batch
    labels flipped: a drop of about five points that the old relative thresholds (5/10/20% of the
    reference) graded low at best is medium."""
    aged = census["aged"]
    reference, batch = aged.iloc[:10000], aged.iloc[10000:15000].copy()
    flip = np.random.default_rng(13).random(len(batch)) < 0.065
    batch.loc[flip, LABEL] = 1 - batch.loc[flip, LABEL]
    check = registry.create("performance.overall")
    result = by_target(run_check(check, batch, COLUMNS, reference=reference, strict=True))["auc"]
    m = result.metrics
    assert 0.035 < m["degradation"] < 0.06 and m["degradation"] / m["reference"] < 0.1
    assert result.severity == "medium", result.reason


# --- the estimator's own reference ------------------------------------------------------------------


def test_a_biased_estimator_is_graded_against_its_own_reference_value(census):
    """Uncalibrated, over-confident scores bias every estimate; graded against the estimator's value
    on the reference, clean batches stay quiet, and the band's coverage on reference chunks is
    reported."""
    reference = census["reference"]
    sharp = lambda f: f.assign(score=1 / (1 + np.exp(-3 * np.log(f["score"] / (1 - f["score"])))))  # noqa: E731
    check = EstimatedPerformance(calibration="never")
    profile = check.fit(sharp(reference), COLUMNS)
    assert abs(profile.estimated_reference["accuracy"] - profile.reference["accuracy"]) > 0.03
    rng = np.random.default_rng(14)
    pool = sharp(census["pool"]).drop(columns=LABEL)
    alarms = 0
    for _ in range(40):
        batch = pool.iloc[rng.choice(len(pool), 2000, replace=False)]
        results = run_check(check, batch, COLUMNS, profile=profile, strict=True)
        alarms += worst(results) >= 2
    assert alarms <= stats.binom.ppf(0.999, 40, 0.01)
    assert 0 <= results[0].details["band_coverage"] <= 1
