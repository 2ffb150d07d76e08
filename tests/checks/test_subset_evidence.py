"""Subset checks graded on their change against the reference: bounds pinned against scikit-learn and
variances computed here, false-alarm rates on clean census batches scored by the demo classifier, and
detection of labels flipped inside one age band."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from threadpoolctl import threadpool_limits

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.result import SEVERITIES, CheckResult
from driftline.checks.runner import run_check
from driftline.data.demo import DATA_FILE, LABEL, scored, train_model

FEATURES = ["AGEP", "SCHL", "MAR", "DIS"]
COLUMNS = Columns(
    id="id",
    label=LABEL,
    prediction="prediction",
    score="score",
    categorical=("SCHL", "MAR", "DIS"),
    numeric=("AGEP",),
    task="binary",
)
AGE_BAND = "(42, 60]"  # the reference-quartile bin of AGEP holding ages 43 to 58
CLEAN_BATCHES = 150
BATCH_SIZES = (100, 200, 400, 800, 1500, 3000)
# Medium or worse on at most 1% of clean batches: the count a 1% rate exceeds with probability 0.001.
ALLOWED_ALARMS = int(stats.binom.ppf(0.999, CLEAN_BATCHES, 0.01))


@lru_cache(maxsize=1)
def census() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The demo's classifier trained on half of survey year 2015; the other half, scored, split in two
    disjoint parts of one population: the reference (6,000 rows) and a pool of clean batches."""
    data = pd.read_parquet(DATA_FILE)
    features = [c for c in data.columns if c not in ("id", LABEL, "year")]
    base = data[data["year"] == 2015].sample(frac=1.0, random_state=0)
    train, held = base.iloc[: len(base) // 2], base.iloc[len(base) // 2 :]
    with threadpool_limits(1):  # one thread: quick on a shared machine, the same model
        rows = scored(train_model(train, features), held.drop(columns="year"), features)
    rows = rows.sample(frac=1.0, random_state=1).reset_index(drop=True)
    return rows.iloc[:6000].reset_index(drop=True), rows.iloc[6000:].reset_index(drop=True)


def clean_batches(seed: int = 1):
    """Seeded batches of 100 to 3,000 rows drawn without replacement from the pool."""
    _, pool = census()
    rng = np.random.default_rng(seed)
    for _ in range(CLEAN_BATCHES):
        size = int(rng.choice(BATCH_SIZES))
        yield pool.iloc[np.sort(rng.choice(len(pool), size, replace=False))]


def flipped(size: int, share: float, seed: int = 5) -> pd.DataFrame:
    """A clean batch whose labels are flipped for `share` of the respondents aged 43 to 58."""
    _, pool = census()
    rng = np.random.default_rng(seed)
    batch = pool.iloc[np.sort(rng.choice(len(pool), size, replace=False))].copy()
    flip = batch["AGEP"].between(43, 58).to_numpy() & (rng.random(size) < share)
    batch.loc[flip, LABEL] = 1 - batch.loc[flip, LABEL]
    return batch


def run(name: str, batch: pd.DataFrame, **params) -> dict[str, CheckResult]:
    reference, _ = census()
    check = registry.create(name, {"features": FEATURES, **params})
    return {r.target: r for r in run_check(check, batch, COLUMNS, reference=reference, strict=True)}


def in_subset(frame: pd.DataFrame, feature: str, label: str) -> pd.DataFrame:
    """The rows of one categorical subset (a category's label is its value as text)."""
    return frame[frame[feature].astype(str) == label]


def level(results: dict[str, CheckResult]) -> float:
    """The per-test confidence of the run: 99% Bonferroni-divided over its graded results."""
    graded = sum("change_bound" in r.metrics for r in results.values())
    return 1 - 0.01 / graded


# --- bounds against independent computations --------------------------------------------------------


def best_of_bound(change: float, se: float, tests: int, level: float) -> float:
    """The bound of the best of `tests` subsets, from scipy: the standard error widened by the ratio of
    the one-sided 99% quantiles at 0.01 / tests and 0.01, or more when the Bonferroni p-value
    (`tests` times the subset's own, up to 0.4) needs it."""
    scale = se * stats.norm.isf(0.01 / tests) / stats.norm.isf(0.01)
    if change > 0:
        scale = max(scale, change / stats.norm.isf(min(tests * stats.norm.sf(change / se), 0.4)))
    return change - stats.norm.ppf(level) * scale


def hanley_mcneil_variance(auc: float, positives: int, negatives: int) -> float:
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    return (auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)) / (
        positives * negatives
    )


def auc_and_variance(rows: pd.DataFrame) -> tuple[float, float]:
    auc = roc_auc_score(rows[LABEL], rows["score"])
    positives = int(rows[LABEL].sum())
    return auc, hanley_mcneil_variance(auc, positives, len(rows) - positives)


def test_auc_change_is_bounded_with_both_sides_hanley_mcneil_variances() -> None:
    reference, pool = census()
    batch = pool.iloc[:2500]
    results = run("subset.auc", batch)
    checked = 0
    for feature in ("SCHL", "MAR"):
        result = results[feature]
        for entry in result.details["subsets"]:
            if entry["not_graded"] or entry["subset"] in ("(other)", "(missing)"):
                continue
            checked += 1
            auc, var = auc_and_variance(in_subset(batch, feature, entry["subset"]))
            ref_auc, ref_var = auc_and_variance(in_subset(reference, feature, entry["subset"]))
            assert entry["value"] == pytest.approx(auc, abs=1e-12)
            assert entry["reference_value"] == pytest.approx(ref_auc, abs=1e-12)
            assert entry["change"] == pytest.approx(ref_auc - auc, abs=1e-12)
            assert entry["change_std_error"] == pytest.approx(math.sqrt(var + ref_var), rel=1e-9)
        (shown,) = [s for s in result.details["subsets"] if s["subset"] == result.details["subset"]]
        tests = result.details["graded_subsets"]
        bound = best_of_bound(shown["change"], shown["change_std_error"], tests, level(results))
        assert result.metrics["change_bound"] == pytest.approx(bound, rel=1e-9)
    assert checked >= 8


def agresti_caffo_se(hits: int, rows: int, ref_hits: int, ref_rows: int) -> float:
    """Agresti–Caffo, never below the no-change standard error of the two rates pooled, plus half a
    row per side (Yates) spread over the standard error at the 99% quantile."""
    a, b = (hits + 1) / (rows + 2), (ref_hits + 1) / (ref_rows + 2)
    pooled = (hits + ref_hits + 1) / (rows + ref_rows + 2)
    no_change = math.sqrt(pooled * (1 - pooled) * (1 / (rows + 2) + 1 / (ref_rows + 2)))
    continuity = (1 / rows + 1 / ref_rows) / 2 / stats.norm.ppf(0.99)
    return max(math.sqrt(a * (1 - a) / (rows + 2) + b * (1 - b) / (ref_rows + 2)), no_change) + continuity


def test_accuracy_change_is_bounded_with_agresti_caffo() -> None:
    reference, pool = census()
    batch = pool.iloc[:1200]
    results = run("subset.accuracy", batch)
    result = results["MAR"]
    graded = [entry for entry in result.details["subsets"] if not entry["not_graded"]]
    assert len(graded) >= 4
    for entry in graded:
        rows, ref_rows = (
            in_subset(batch, "MAR", entry["subset"]),
            in_subset(reference, "MAR", entry["subset"]),
        )
        hits = int((rows[LABEL] == rows["prediction"]).sum())
        ref_hits = int((ref_rows[LABEL] == ref_rows["prediction"]).sum())
        assert entry["value"] == pytest.approx(accuracy_score(rows[LABEL], rows["prediction"]))
        assert entry["change"] == pytest.approx(ref_hits / len(ref_rows) - hits / len(rows))
        se = agresti_caffo_se(hits, len(rows), ref_hits, len(ref_rows))
        assert entry["change_std_error"] == pytest.approx(se, rel=1e-12)
    (shown,) = [s for s in result.details["subsets"] if s["subset"] == result.details["subset"]]
    bound = best_of_bound(shown["change"], shown["change_std_error"], len(graded), level(results))
    assert result.metrics["change_bound"] == pytest.approx(bound, rel=1e-9)


def test_f1_standard_error_matches_a_row_bootstrap() -> None:
    _, pool = census()
    batch = pool.iloc[:3000]
    result = run("subset.f1", batch)["MAR"]
    rng = np.random.default_rng(3)
    checked = 0
    for entry in result.details["subsets"]:
        rows = in_subset(batch, "MAR", entry["subset"])
        if entry["not_graded"] or len(rows) < 300:
            continue
        checked += 1
        y, p = rows[LABEL].to_numpy(), rows["prediction"].to_numpy()
        draws = rng.integers(0, len(rows), size=(1000, len(rows)))
        tp, fp, fn = ((y[draws] == a) & (p[draws] == b) for a, b in ((1, 1), (0, 1), (1, 0)))
        tp, fp, fn = tp.sum(axis=1), fp.sum(axis=1), fn.sum(axis=1)
        simulated = np.std(2 * tp / (2 * tp + fp + fn), ddof=1)
        assert entry["value"] == pytest.approx(f1_score(y, p))
        assert entry["std_error"] == pytest.approx(simulated, rel=0.15)
    assert checked >= 2


# --- false alarms on clean batches, detection of a real change ---------------------------------------

CLEAN_CHECKS = [
    ("subset.auc", {}),
    ("subset.accuracy", {}),
    ("subset.f1", {}),
    ("subset.precision", {}),
    ("subset.recall", {}),
    ("subset.fpr", {}),
    ("subset.variance", {}),
    ("subset.variance_positive", {}),
]


def worst(results: dict[str, CheckResult]) -> int:
    return max(SEVERITIES.index(r.severity) for r in results.values())


@pytest.mark.parametrize(("name", "params"), CLEAN_CHECKS, ids=[n for n, _ in CLEAN_CHECKS])
def test_clean_census_batches_stay_quiet(name: str, params: dict) -> None:
    reference, _ = census()
    check = registry.create(name, {"features": FEATURES, **params})
    profile = check.fit(reference, COLUMNS)
    alarms = sum(
        worst({r.target: r for r in run_check(check, batch, COLUMNS, profile=profile)}) >= 2
        for batch in clean_batches()
    )
    assert alarms <= ALLOWED_ALARMS


@pytest.mark.parametrize("name", ["subset.mae", "subset.rmse"])
def test_clean_census_batches_stay_quiet_for_errors(name: str) -> None:
    """The score as a regression of the 0/1 label: its absolute and squared errors per subset."""
    reference, _ = census()
    columns = Columns(label=LABEL, prediction="score", categorical=("SCHL", "MAR", "DIS"), numeric=("AGEP",))
    columns = Columns(**{**columns.__dict__, "task": "regression"})
    check = registry.create(name, {"features": FEATURES})
    profile = check.fit(reference, columns)
    alarms = sum(
        worst({r.target: r for r in run_check(check, batch, columns, profile=profile)}) >= 2
        for batch in clean_batches(seed=2)
    )
    assert alarms <= ALLOWED_ALARMS


@pytest.mark.parametrize("name", ["subset.auc", "subset.accuracy"])
def test_labels_flipped_in_one_age_band_are_caught(name: str) -> None:
    results = run(name, flipped(2000, 0.3))
    age = results["AGEP"]
    assert age.details["subset"] == AGE_BAND
    assert age.severity != "none" and age.metrics["change_bound"] >= 0.05
    assert age.failing_rows == int(flipped(2000, 0.3)["AGEP"].between(43, 60).sum())
    assert run(name, flipped(2000, 0.0))["AGEP"].severity == "none"
