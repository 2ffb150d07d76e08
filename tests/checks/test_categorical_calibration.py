"""Calibration of the categorical checks on sparse columns, pinned by seeded simulations: clean batches
of columns with thousands of categories stay quiet and their p-values hold their level at every batch
size; the rare and unseen categories' clean rates are unbiased and their standard errors match the
spread of clean draws; a new category is still caught; identifier-like columns are named, not graded."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.abnormal_categories import RareCategories, UnseenCategorical
from driftline.checks.binning import category_psi_evidence
from driftline.checks.columns import Columns
from driftline.checks.evidence import grade_results
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.checks.schema import SchemaCheck
from driftline.data.demo import DATA_FILE

COLUMNS = Columns(categorical=("c",))
CONFIDENCE = 0.99
# Clean runs per simulation; a rate's simulation error is its binomial standard error over them.
RUNS = 300


def allowed(level: float, runs: int = RUNS) -> float:
    """The most a share of runs can show when the true rate is at most `level`: the level plus three
    binomial standard errors over `runs` runs (about 1 in 700 for a calibrated rate to exceed it)."""
    return level + 3 * math.sqrt(level * (1 - level) / runs)


def population(levels: int, shape: str) -> np.ndarray:
    """Category shares: Zipf-like (1 / rank) or uniform."""
    weights = 1.0 / np.arange(1, levels + 1) if shape == "zipf" else np.ones(levels)
    return weights / weights.sum()


def sample(rng: np.random.Generator, shares: np.ndarray, rows: int) -> pd.DataFrame:
    """A frame of one categorical column `c` drawn from `shares`, its categories named by their
    numbers (declared categorical, they are categories like any string)."""
    return pd.DataFrame({"c": rng.choice(len(shares), rows, p=shares)})


# --- drift.categorical on sparse columns -------------------------------------------------------------


@pytest.mark.parametrize(
    ("levels", "shape", "reference_rows", "sizes"),
    [
        (1000, "zipf", 2000, (100, 1000, 10_000, 50_000)),
        (1000, "uniform", 5000, (100, 1000, 10_000, 50_000)),
        (10_000, "zipf", 5000, (100, 1000, 5000)),
        (10_000, "uniform", 20_000, (100, 1000, 5000)),
    ],
)
def test_clean_batches_of_sparse_columns_stay_quiet_and_p_values_hold(
    levels: int, shape: str, reference_rows: int, sizes: tuple[int, ...]
) -> None:
    """Clean reference and batch drawn afresh each run from one population of 1,000 or 10,000
    categories, graded as a run does (`grade_results` at 0.99): at most 1% of runs low or worse, and
    P(p <= alpha) <= alpha for the PSI's and the chi-square's p-values (within three simulation
    errors). Pooling unseen values in a bin the reference can never hold rows in, with a no-change
    simulation that gave the reference rows there, raised 25 to 100% of these batches."""
    shares = population(levels, shape)
    check = registry.create("drift.categorical", {"compute_impact": False, "skip_identifiers": False})
    rng = np.random.default_rng(levels + reference_rows)
    graded, psi_p, chi2_p = [], [], []
    for run in range(RUNS):
        reference = sample(rng, shares, reference_rows)
        batch = sample(rng, shares, sizes[run % len(sizes)])
        [result] = grade_results(run_check(check, batch, COLUMNS, reference=reference), CONFIDENCE)
        graded.append(severity_rank(result.severity) >= severity_rank("low"))
        psi_p.append(result.metrics["psi_p"])
        chi2_p.append(result.metrics["chi2_pvalue"])
    assert np.mean(graded) <= allowed(0.01)
    for alpha in (0.01, 0.05):
        assert np.mean(np.array(psi_p) <= alpha) <= allowed(alpha)
        assert np.mean(np.array(chi2_p) <= alpha) <= allowed(alpha)


def capped_psi(reference: np.ndarray, current: np.ndarray, min_rows: int = 5) -> float:
    """Add-one smoothed PSI over the categories with `min_rows` reference rows and one bin for the
    rest, written apart from the project's helpers."""
    own = reference >= min_rows
    ref = np.append(reference[own], reference[~own].sum())
    cur = np.append(current[own], current[~own].sum())
    if ref[-1] + cur[-1] == 0:
        ref, cur = ref[:-1], cur[:-1]
    p, q = (ref + 1) / (ref.sum() + len(ref)), (cur + 1) / (cur.sum() + len(cur))
    return float(np.sum((q - p) * np.log(q / p)))


@pytest.mark.parametrize("rows", [300, 3000])
def test_psi_noise_fit_matches_fresh_clean_samples(rows: int) -> None:
    """The fitted no-change margin of a sparse column (500 Zipf-like categories, a reference of 2,000
    rows) against the 99th percentile of 4,000 PSIs of fresh clean reference/batch pairs."""
    rng = np.random.default_rng(rows)
    shares = population(500, "zipf")
    evidence = category_psi_evidence(rng.multinomial(2000, shares), rng.multinomial(rows, shares))
    truth = [capped_psi(rng.multinomial(2000, shares), rng.multinomial(rows, shares)) for _ in range(4000)]
    assert evidence.margin(0.99) == pytest.approx(np.quantile(truth, 0.99), rel=0.15)


def test_rare_and_unseen_categories_share_one_bin_the_reference_holds_rows_in() -> None:
    """Categories with fewer than 5 reference rows and those the reference never had are pooled in
    one bin on both sides; the PSI is the add-one smoothed PSI over the frequent categories and it."""
    reference = pd.DataFrame({"c": ["a"] * 40 + ["b"] * 20 + ["r1"] * 4 + ["r2"] * 2})
    batch = pd.DataFrame({"c": ["a"] * 30 + ["b"] * 20 + ["r1"] * 3 + ["new"] * 7})
    [result] = run_check(registry.create("drift.categorical"), batch, COLUMNS, reference=reference)
    ref, cur = np.array([40, 20, 6]), np.array([30, 20, 10])
    p, q = (ref + 1) / (ref.sum() + 3), (cur + 1) / (cur.sum() + 3)
    assert result.metrics["psi"] == pytest.approx(float(np.sum((q - p) * np.log(q / p))))
    assert set(result.details["largest_changes"]) == {"a", "b", "<rare or unseen>"}
    assert result.details["pooled_categories"] == 2
    assert result.details["unseen_share"] == pytest.approx(7 / 60)


def test_a_new_category_in_a_tenth_of_the_rows_is_caught() -> None:
    """Census relationship codes (every code held by many reference rows): a clean batch of 1,000 rows
    with a tenth of its rows recoded to a code the reference never had drifts medium or worse."""
    data = pd.read_parquet(DATA_FILE)
    year = data[data["year"] == 2015].sample(frac=1.0, random_state=0).reset_index(drop=True)
    reference, pool = year.iloc[:10_000], year.iloc[10_000:11_000].copy()
    pool["RELP"] = pool["RELP"].astype(str)
    pool.iloc[:100, pool.columns.get_loc("RELP")] = "new code"
    columns = Columns(categorical=("RELP",))
    [result] = grade_results(
        run_check(registry.create("drift.categorical"), pool, columns, reference=reference), CONFIDENCE
    )
    assert severity_rank(result.severity) >= severity_rank("medium")
    assert result.details["unseen_share"] == pytest.approx(0.1)


# --- identifier-like columns -------------------------------------------------------------------------


def identifier_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A reference of 3,000 rows whose `tail` holds 2,400 distinct values and a batch of new ones."""
    rng = np.random.default_rng(5)
    reference = pd.DataFrame(
        {"tail": [f"N{i}" for i in rng.integers(0, 2400, 3000)], "kind": rng.choice(["a", "b"], 3000)}
    )
    reference.loc[:2399, "tail"] = [f"N{i}" for i in range(2400)]
    batch = pd.DataFrame({"tail": [f"M{i}" for i in range(500)], "kind": rng.choice(["a", "b"], 500)})
    return reference, batch


def test_schema_names_an_identifier_like_column_and_how_to_leave_it_out() -> None:
    reference, batch = identifier_frames()
    columns = Columns(categorical=("tail", "kind"))
    results = SchemaCheck().run(reference, batch, columns)
    [note] = [r for r in results if r.target == "tail"]
    assert note.severity == "none"
    assert note.reason == (
        "column 'tail' looks like an identifier: 2,400 distinct values in 3,000 reference rows; "
        "leave it out of drift checks with `columns: ignore: ['tail']`"
    )
    assert note.details["note"] == note.reason
    assert not [r for r in results if r.target == "kind"]


def test_drift_skips_an_identifier_like_column_unless_told_otherwise() -> None:
    reference, batch = identifier_frames()
    columns = Columns(categorical=("tail", "kind"))
    tail, kind = run_check(registry.create("drift.categorical"), batch, columns, reference=reference)
    assert tail.status == "skipped" and "looks like an identifier: 2,400 distinct values" in tail.reason
    assert kind.status == "ok"
    check = registry.create("drift.categorical", {"skip_identifiers": False})
    assert all(r.status == "ok" for r in run_check(check, batch, columns, reference=reference))


# --- abnormal.rare_categories and abnormal.unseen_categorical ----------------------------------------


def brute_force_rare_rows(check: RareCategories, values: list[str]) -> int:
    """Reference rows whose value the check, fitted on the other rows, calls rare (one fit per row)."""
    hits = 0
    for i, value in enumerate(values):
        profile = check.fit(pd.DataFrame({"c": values[:i] + values[i + 1 :]}), COLUMNS)
        hits += value in set(profile["targets"]["c"]["rare"])
    return hits


@pytest.mark.parametrize("rules", [{}, {"min_num_occurrences": 3}, {"min_pct_occurrences": 0.05}])
def test_rare_clean_rate_is_the_leave_one_out_count(rules: dict) -> None:
    values = [*"aaaaaaaaaaaaaaaaaaaa", *"bbbbbbbbbb", "c", "c", "c", "d", "d", "e", "f"]
    check = RareCategories(**rules)
    hits, rows = check.fit(pd.DataFrame({"c": values}), COLUMNS)["targets"]["c"]["clean"]
    assert (hits, rows) == (brute_force_rare_rows(check, values), len(values))


def clean_rate_runs(check, shares: np.ndarray, reference_rows: int, rows: int, runs: int, seed: int):
    """The graded increase of the failing rate, its standard error and p-value on `runs` clean
    reference/batch pairs drawn afresh."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        reference, batch = sample(rng, shares, reference_rows), sample(rng, shares, rows)
        [result] = grade_results(run_check(check, batch, COLUMNS, reference=reference), CONFIDENCE)
        evidence = result.evidence["failing_rate_increase"]
        out.append((evidence["estimate"], evidence["scale"], result.metrics["failing_rate_increase_p"]))
    return np.array(out)


@pytest.mark.parametrize("check_class", [RareCategories, UnseenCategorical])
def test_clean_rates_are_unbiased_and_their_standard_errors_match_the_spread(check_class) -> None:
    """400 clean reference/batch pairs of 2,000 rows from 200 Zipf-like categories: the increase
    averages 0 (within three simulation errors), its standard deviation is the stated standard
    error within 10% (the simulation's own error on an SD is about 3.5%), and P(p <= alpha) <= alpha.
    The reference's own share of rows in the rare categories it chose understated the clean rate by
    1.8 points here (the low threshold is 0.1 of a point), and a binomial error on the share of values
    seen once understated the unseen increase's SD 1.46 times (2,000 draws)."""
    draws = clean_rate_runs(check_class(), population(200, "zipf"), 2000, 2000, 400, seed=11)
    increase, se, p = draws[:, 0], draws[:, 1], draws[:, 2]
    spread = float(np.std(increase, ddof=1))
    assert abs(np.mean(increase)) <= 3 * spread / math.sqrt(len(increase))
    assert spread == pytest.approx(math.sqrt(np.mean(se**2)), rel=0.1)
    for alpha in (0.01, 0.05):
        assert np.mean(p <= alpha) <= allowed(alpha, len(p))


# --- drift of a label or a prediction with many classes ------------------------------------------------

# 500 classes of Zipf shares against a reference of 1,000 rows: most classes are rare or unseen there.
MANY_CLASSES = population(500, "zipf")
OUTPUT_CHECKS = [
    ("drift.label_psi", Columns(label="c", task="multiclass")),
    ("drift.predicted_label", Columns(prediction="c")),
    ("drift.prediction", Columns(prediction="c")),
]
OUTPUT_DRAWS = 40


@pytest.mark.parametrize(("name", "columns"), OUTPUT_CHECKS, ids=[name for name, _ in OUTPUT_CHECKS])
def test_clean_batches_of_a_label_or_prediction_with_many_classes_stay_quiet(
    name: str, columns: Columns
) -> None:
    """Clean reference (1,000 rows) and batch (30 to 10,000 rows) drawn afresh from 500 Zipf classes,
    graded as a run does: at most 1% low or worse and P(p <= 0.05) <= 0.05 at every size (within
    three simulation errors). With the no-change noise drawn from the pooled shares, which gave the
    reference rows in the unseen classes' bin, 50% of the 300-row batches and every batch from 3,000
    rows were graded (p <= 0.01 on 95-100%)."""
    check = registry.create(name)
    rng = np.random.default_rng(len(name))
    graded, p_values = [], []
    for rows in (30, 300, 3000, 10_000):
        sized = []
        for _ in range(OUTPUT_DRAWS):
            reference, batch = sample(rng, MANY_CLASSES, 1000), sample(rng, MANY_CLASSES, rows)
            [result] = grade_results(run_check(check, batch, columns, reference=reference), CONFIDENCE)
            graded.append(severity_rank(result.severity) >= severity_rank("low"))
            sized.append(result.metrics["psi_p"])
        assert np.mean(np.array(sized) <= 0.05) <= allowed(0.05, OUTPUT_DRAWS), rows
        p_values += sized
    assert np.mean(graded) <= allowed(0.01, len(graded))
    assert np.mean(np.array(p_values) <= 0.01) <= allowed(0.01, len(p_values))


def test_a_predicted_class_that_grew_is_still_caught() -> None:
    """The most frequent of 20 predicted classes up from 28% to 60% of 1,000 rows: medium or worse,
    with the PSI over the reference's classes and one unseen bin, computed here by hand."""
    rng = np.random.default_rng(3)
    classes = population(20, "zipf")
    reference = sample(rng, classes, 1000)
    grown = classes * 0.4 / (1 - classes[0])
    grown[0] = 0.6
    batch = sample(rng, grown, 1000)
    check = registry.create("drift.predicted_label")
    [result] = grade_results(
        run_check(check, batch, Columns(prediction="c"), reference=reference), CONFIDENCE
    )
    assert severity_rank(result.severity) >= severity_rank("medium")
    seen, counts = reference["c"].value_counts(), batch["c"].value_counts()
    unseen = counts[~counts.index.isin(seen.index)].sum()
    ref, cur = seen.to_numpy(), counts.reindex(seen.index, fill_value=0).to_numpy()
    if unseen:
        ref, cur = np.r_[ref, 0], np.r_[cur, unseen]
    p, q = (ref + 1) / (ref + 1).sum(), (cur + 1) / (cur + 1).sum()
    assert result.metrics["psi"] == pytest.approx(float(np.sum((q - p) * np.log(q / p))), rel=1e-9)
