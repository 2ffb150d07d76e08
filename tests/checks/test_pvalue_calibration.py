"""P-values and severities on clean batches: every check here is graded as a run grades it (`run_check`
then `grade_results` at confidence 0.99) on seeded clean draws of one population, reference and
batch drawn afresh each time, and must raise a severity on at most 1% of them and give p <= alpha on
at most alpha of them. Tolerance: the expected rate plus three binomial standard errors of the count
of draws (`limit`). Real data where it is cheap (UCI Adult), synthetic where a shape is needed (a
half-null column, a continuous label in whole minutes). Each check also still catches a real change.
"""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.drift_multivariate import domain_auc
from driftline.checks.evidence import auc_standard_error, best_of, grade_results, rate_change
from driftline.checks.runner import run_check
from tests.checks.test_subset_evidence import best_of_bound

CONFIDENCE = 0.99


def limit(rate: float, draws: int) -> float:
    """The largest share of `draws` a true `rate` gives, three binomial standard errors over."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / draws)


def graded(check, batch: pd.DataFrame, columns: Columns, reference: pd.DataFrame):
    """The check's results on the batch, graded together as a run grades them."""
    return grade_results(run_check(check, batch, columns, reference=reference), confidence=CONFIDENCE)


# --- the best of several one-sided tests ------------------------------------------------------------


@pytest.mark.parametrize("tests", [2, 10])
def test_best_of_bounds_and_p_values_hold_on_simulated_families(tests: int) -> None:
    """`tests` normal estimates that truly change by t (for the bound) or by nothing (for the p-value):
    the best of them reaches t in at most 1 - level of draws, and p <= alpha in at most alpha."""
    rng = np.random.default_rng(tests)
    draws, t = 400_000, 3.0
    noise = rng.standard_normal((draws, tests)).max(axis=1)
    for level in (0.99, 0.9999):
        bounds = np.array([best_of(t + e, 1.0, tests).bound(level) for e in noise[:40_000]])
        assert np.mean(bounds >= t) <= limit(1 - level, 40_000)
    p = np.array([best_of(e, 1.0, tests).p_value() for e in noise[:40_000]])
    for alpha in (0.05, 0.01):
        assert np.mean(p <= alpha) <= limit(alpha, 40_000)
        assert np.mean(p <= alpha) >= 0.6 * alpha  # the Bonferroni p-value, not a much larger one


def test_rate_change_p_values_hold_on_exact_binomial_draws() -> None:
    """The batch's count of a rate (half null, a fifth) on 30 to 100 rows against a reference of 10,000
    at the same rate, enumerated exactly: p <= alpha has probability at most 1.1 alpha, down to 1e-4.
    Agresti–Caffo alone gives 2.6 alpha at 1e-3 and 7 alpha at 1e-4 on 30 half-null rows."""
    reference_rows = 10_000
    for rows in (30, 60, 100):
        for rate in (0.5, 0.2):
            counts = np.arange(rows + 1)
            chance = stats.binom.pmf(counts, rows, rate)
            p = np.array(
                [rate_change(k, rows, rate * reference_rows, reference_rows).p_value() for k in counts]
            )
            for alpha in (0.05, 0.01, 1e-3, 1e-4):
                assert chance[p <= alpha].sum() <= 1.1 * alpha, (rows, rate, alpha)


# --- drift.label: a class share -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    with resources.as_file(resources.files("driftline.data") / "adult" / "adult.parquet") as path:
        data = pd.read_parquet(path, columns=["income", "race"])
    return data.assign(income=(data["income"] == ">50K").astype("int64"))


SHARE_SIZES = (30, 100, 1000, 10_000)
SHARE_DRAWS = 300


@pytest.mark.parametrize(("label", "task"), [("income", "binary"), ("race", "multiclass")])
def test_label_share_change_is_calibrated_on_clean_adult_resamples(adult, label: str, task: str) -> None:
    """Reference of 10,000 and batch of 30 to 10,000 drawn apart from Adult's 48,842 rows each time.
    Before the share change was graded as the best of every class's rise and fall, p <= 0.05 on 10-14%
    of clean batches at every size and a severity on 3-4% of 30-row batches."""
    columns, check = Columns(label=label, task=task), registry.create("drift.label")
    rng = np.random.default_rng(7)
    frame = adult[[label]]
    alarms, p_values = 0, []
    for rows in SHARE_SIZES:
        sized = []
        for _ in range(SHARE_DRAWS):
            order = rng.permutation(len(frame))
            reference, batch = frame.iloc[order[:10_000]], frame.iloc[order[10_000 : 10_000 + rows]]
            [result] = graded(check, batch, columns, reference)
            alarms += result.severity != "none"
            sized.append(result.metrics["share_change_p"])
        assert np.mean(np.array(sized) <= 0.05) <= limit(0.05, SHARE_DRAWS), rows
        p_values += sized
    assert alarms / len(p_values) <= limit(0.01, len(p_values))
    assert np.mean(np.array(p_values) <= 0.05) <= limit(0.05, len(p_values))


def test_a_label_prior_shift_on_adult_is_still_caught(adult) -> None:
    """Income above 50K from 0.24 to about 0.34 of 1,000 rows: medium or worse."""
    rng = np.random.default_rng(8)
    order = rng.permutation(len(adult))
    reference, pool = adult.iloc[order[:10_000]], adult.iloc[order[10_000:]]
    weights = np.where(pool["income"] == 1, 1.7, 1.0)
    batch = pool.iloc[rng.choice(len(pool), 1000, replace=False, p=weights / weights.sum())]
    [result] = graded(
        registry.create("drift.label"), batch, Columns(label="income", task="binary"), reference
    )
    assert result.metrics["share_change"] > 0.07
    assert result.severity in ("medium", "high")


# --- drift.label: a continuous label ---------------------------------------------------------------------


def delays(rows: int, rng: np.random.Generator, late_scale: float = 40.0) -> pd.DataFrame:
    """Delays in whole minutes: seven flights in ten about on time, the others late by an exponential
    tail (mean `late_scale` minutes)."""
    late = rng.random(rows) < 0.3
    minutes = np.where(late, rng.exponential(late_scale, rows), rng.normal(-5.0, 6.0, rows))
    return pd.DataFrame({"delay": np.round(minutes)})


LOCATION = ("mean_change", "median_change", "p90_change")
REGRESSION = Columns(label="delay", task="regression")


def test_continuous_label_location_is_calibrated_on_clean_draws() -> None:
    """Whole-minute delays, reference 5,000, batches of 30 to 3,000: no severity beyond 1% of draws,
    and p <= 0.05 on at most 5% for each location change and the KS distance."""
    rng = np.random.default_rng(9)
    check = registry.create("drift.label")
    draws, alarms = 0, 0
    p_values: dict[str, list[float]] = {m: [] for m in ("ks_statistic", *LOCATION)}
    for rows in (30, 300, 3000):
        for _ in range(150):
            [result] = graded(check, delays(rows, rng), REGRESSION, delays(5000, rng))
            draws += 1
            alarms += result.severity != "none"
            for metric, values in p_values.items():
                values.append(result.metrics[f"{metric}_p"])
    assert alarms / draws <= limit(0.01, draws)
    for metric, values in p_values.items():
        assert np.mean(np.array(values) <= 0.05) <= limit(0.05, draws), metric


def test_location_numbers_match_numpy_and_scipy() -> None:
    """Continuous values (no ties): the mid-distribution quantiles are numpy's Hazen quantiles, the
    mean's standard error Welch's with the larger variance, and each bound the best of two sides."""
    rng = np.random.default_rng(10)
    reference = pd.DataFrame({"delay": rng.lognormal(2.0, 1.0, 4000)})
    batch = pd.DataFrame({"delay": rng.lognormal(2.2, 1.0, 800)})
    [result] = graded(registry.create("drift.label"), batch, REGRESSION, reference)
    ref, cur = reference["delay"].to_numpy(), batch["delay"].to_numpy()
    sd = ref.std(ddof=1)
    mean_se = math.sqrt(max(cur.var(ddof=1), sd**2) / len(cur) + sd**2 / len(ref)) / sd
    assert result.metrics["mean_change"] == pytest.approx(abs(cur.mean() - ref.mean()) / sd, rel=1e-12)
    assert result.details["location_std_errors"]["mean_change"] == pytest.approx(mean_se, rel=1e-12)
    for name, p in (("median", 0.5), ("p90", 0.9)):
        shift = (np.quantile(cur, p, method="hazen") - np.quantile(ref, p, method="hazen")) / sd
        assert result.metrics[f"{name}_change"] == pytest.approx(abs(shift), rel=1e-9)
    level = 1 - 0.01 / 4  # four graded metrics: KS and the three location changes
    for metric in LOCATION:
        se = result.details["location_std_errors"][metric]
        expected = best_of_bound(result.metrics[metric], se, 2, level)
        assert result.metrics[f"{metric}_bound"] == pytest.approx(expected, rel=1e-9)


def test_location_standard_errors_match_the_simulated_spread() -> None:
    """The standard errors the check gives a batch of 1,000 against 20,000 rows of a lognormal label,
    against the spread of the changes over 300 clean draws: within 12% for the mean and the median;
    for the 90th percentile at most 10% below and 25% above (its density, read over a window on a
    convex tail, comes out low, so its error high: conservative)."""
    rng = np.random.default_rng(11)
    check = registry.create("drift.label")
    shifts: dict[str, list[float]] = {m: [] for m in LOCATION}
    errors: dict[str, list[float]] = {m: [] for m in LOCATION}
    for _ in range(300):
        reference = pd.DataFrame({"delay": rng.lognormal(0.0, 1.0, 20_000)})
        batch = pd.DataFrame({"delay": rng.lognormal(0.0, 1.0, 1000)})
        [result] = run_check(check, batch, REGRESSION, reference=reference)
        for metric in LOCATION:
            shifts[metric].append(result.details["location_shifts"][metric])
            errors[metric].append(result.details["location_std_errors"][metric])
    for metric, above in (("mean_change", 1.12), ("median_change", 1.12), ("p90_change", 1.25)):
        spread = np.std(shifts[metric])
        assert 0.9 * spread <= np.mean(errors[metric]) <= above * spread, metric


def test_a_mean_delay_the_ks_distance_misses_is_caught() -> None:
    """Late flights' delays doubled: the KS distance stays under its low threshold, the mean and the
    90th percentile move by a third and more than one standard deviation: medium or worse."""
    rng = np.random.default_rng(12)
    [result] = graded(
        registry.create("drift.label"), delays(1000, rng, 80.0), REGRESSION, delays(20_000, rng)
    )
    assert result.metrics["ks_statistic_bound"] < 0.1
    assert result.severity in ("medium", "high")
    assert result.metrics["mean_change_bound"] > 0.1 and result.metrics["p90_change_bound"] >= 0.25


# --- subset.*: every subset in the family ----------------------------------------------------------------


def planted(rows: int, rng: np.random.Generator, bad: float = 0.0) -> pd.DataFrame:
    """A model right 85% of the time on every one of 12 groups (less by `bad` on group "g0")."""
    group = rng.choice([f"g{i}" for i in range(12)], rows)
    label = rng.integers(0, 2, rows)
    correct = rng.random(rows) < np.where(group == "g0", 0.85 - bad, 0.85)
    return pd.DataFrame({"group": group, "label": label, "prediction": np.where(correct, label, 1 - label)})


SUBSETS = Columns(label="label", prediction="prediction", categorical=("group",), task="binary")


def test_subset_accuracy_of_twelve_groups_is_calibrated_on_clean_draws() -> None:
    """Twelve graded subsets of one feature, reference 12,000, batches of 400 to 6,000: p <= 0.05 on at
    most 5% of clean draws and a severity on at most 1%. Graded as one test, the best of twelve gave
    p <= 0.05 on about 40%."""
    rng = np.random.default_rng(13)
    check = registry.create("subset.accuracy")
    draws, alarms, p_values = 0, 0, []
    for rows in (400, 1500, 6000):
        for _ in range(100):
            [result] = graded(check, planted(rows, rng), SUBSETS, planted(12_000, rng))
            draws += 1
            alarms += result.severity != "none"
            p_values.append(result.metrics["change_p"])
    assert alarms / draws <= limit(0.01, draws)
    assert np.mean(np.array(p_values) <= 0.05) <= limit(0.05, draws)


def test_a_subset_that_got_worse_is_still_caught() -> None:
    """Group g0's accuracy from 0.85 to 0.65 on a 6,000-row batch (about 500 rows of it): medium or worse."""
    rng = np.random.default_rng(14)
    [result] = graded(
        registry.create("subset.accuracy"), planted(6000, rng, 0.2), SUBSETS, planted(12_000, rng)
    )
    assert result.details["subset"] == "g0" and result.severity in ("medium", "high")


# --- abnormal.nulls: a half-null column -----------------------------------------------------------------


def half_null(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    values = rng.normal(size=rows)
    values[rng.random(rows) < 0.5] = np.nan
    return pd.DataFrame({"x": values})


@pytest.mark.parametrize("rows", [30, 100])
def test_a_clean_half_null_column_stays_quiet_on_few_rows(rows: int) -> None:
    """A column null half the time, batches of 30 or 100 rows against 10,000: a severity on at most 1%
    of 1,500 clean draws, and p <= 0.01 on at most 1%."""
    rng = np.random.default_rng(rows)
    check, columns = registry.create("abnormal.nulls"), Columns(numeric=("x",))
    alarms, p_values = 0, []
    for _ in range(1500):
        [result] = graded(check, half_null(rows, rng), columns, half_null(10_000, rng))
        alarms += result.severity != "none"
        p_values.append(result.metrics["null_rate_increase_p"])
    assert alarms / 1500 <= limit(0.01, 1500)
    assert np.mean(np.array(p_values) <= 0.01) <= limit(0.01, 1500)


def test_a_column_gone_null_on_few_rows_is_still_caught() -> None:
    """Half null in the reference, 28 of 30 batch rows null: high."""
    rng = np.random.default_rng(15)
    batch = pd.DataFrame({"x": np.r_[np.full(28, np.nan), 1.0, 2.0]})
    [result] = graded(
        registry.create("abnormal.nulls"), batch, Columns(numeric=("x",)), half_null(10_000, rng)
    )
    assert result.severity == "high"


# --- drift.multivariate: the classifier's mean fold AUC ---------------------------------------------------


def test_the_mean_fold_auc_is_noisier_than_one_auc_and_within_one_folds_error() -> None:
    """The mean of five fold AUCs on 50 clean draws of 300 batch and 900 reference rows: its spread is
    clearly above Hanley–McNeil's error over all rows (the fold AUCs are correlated) and within the
    one-fold error the check now uses."""
    rng = np.random.default_rng(16)
    means = [
        np.mean(domain_auc(rng.normal(size=(900, 3)), rng.normal(size=(300, 3)), np.zeros(3, dtype=bool)))
        for _ in range(50)
    ]
    spread = float(np.std(means, ddof=1))
    all_rows, one_fold = auc_standard_error(0.5, 300, 900), auc_standard_error(0.5, 60, 180)
    assert 1.1 * all_rows < spread < one_fold
