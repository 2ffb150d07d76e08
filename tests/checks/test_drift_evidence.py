"""Drift checks graded on evidence: the PSI's fitted noise against direct simulations, the label-share
bound against exact binomial draws, false alarms on clean resamples of real data, detection of real
shifts (an older census population, a label prior shift, a change of text domain)."""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import driftline.checks.text  # noqa: F401  (registers the text drift checks)
from driftline.checks import registry
from driftline.checks.binning import CategoryCounts, psi_evidence
from driftline.checks.columns import Columns
from driftline.checks.drift import share_change
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.data.demo import DATA_FILE, aged_sample
from driftline.data.text.sentiment_model import load_sentences

CATEGORICAL = ("SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR")
CATEGORICAL += ("DEYE", "DREM", "SEX", "RAC1P")
CENSUS = Columns(numeric=("AGEP",), categorical=CATEGORICAL, label="employed", score="score", task="binary")
SIZES = (100, 300, 1000, 3000, 5000)
RESAMPLES = 120
# Runs with a medium-or-worse result may be at most 1% of clean runs, give or take binomial noise.
FALSE_ALARM_LIMIT = 0.01 + 3 * math.sqrt(0.01 * 0.99 / RESAMPLES)


def independent_psi(reference: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Add-one smoothed PSI of each row pair, written apart from the project's helper."""
    p = (reference + 1) / (reference.sum(axis=1, keepdims=True) + reference.shape[1])
    q = (current + 1) / (current.sum(axis=1, keepdims=True) + current.shape[1])
    return ((q - p) * np.log(q / p)).sum(axis=1)


def read_census() -> pd.DataFrame:
    with resources.as_file(DATA_FILE) as path:
        return pd.read_parquet(path)


@pytest.fixture(scope="module")
def census() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Survey year 2015 split in two halves of one population: a reference and a pool of clean rows,
    with a fixed logistic score of age and schooling standing for a model."""
    data = read_census()
    year = data[data["year"] == 2015].sample(frac=1.0, random_state=0).reset_index(drop=True)
    logit = (year["AGEP"].to_numpy() - 45) / 20 + (year["SCHL"].astype(int).to_numpy() - 16) / 5
    year["score"] = 1 / (1 + np.exp(-logit))
    return year.iloc[: len(year) // 2], year.iloc[len(year) // 2 :].reset_index(drop=True)


def clean_alarm_rate(check_name: str, reference: pd.DataFrame, pool: pd.DataFrame, columns: Columns) -> float:
    """Share of runs of a check on clean batches (drawn from `pool`, the reference's population, at
    sizes from 100 to 5,000 rows) with a medium-or-worse result."""
    check = registry.create(check_name)
    profile = check.fit(reference, columns)
    rng = np.random.default_rng(17)
    alarms = 0
    for i in range(RESAMPLES):
        rows = rng.choice(len(pool), SIZES[i % len(SIZES)], replace=False)
        results = run_check(check, pool.iloc[rows], columns, profile=profile)
        assert any(r.status == "ok" for r in results)
        alarms += max(severity_rank(r.severity) for r in results) >= severity_rank("medium")
    return alarms / RESAMPLES


# --- the PSI's noise model ---------------------------------------------------------------------------


@pytest.mark.parametrize("bins", [10, 87])
@pytest.mark.parametrize("rows", [100, 2000])
def test_psi_noise_fit_matches_a_direct_simulation(bins: int, rows: int) -> None:
    """The fitted scaled chi-square's 99th and 99.9th percentiles against those of 20,000 PSIs of fresh
    clean samples (an even 10-bin split, or 87 categories of very uneven size)."""
    rng = np.random.default_rng(bins + rows)
    shares = np.full(10, 0.1) if bins == 10 else rng.dirichlet(np.full(87, 0.3))
    evidence = psi_evidence(rng.multinomial(20_000, shares), rng.multinomial(rows, shares))
    truth = independent_psi(
        rng.multinomial(20_000, shares, size=20_000), rng.multinomial(rows, shares, size=20_000)
    )
    assert evidence.noise == "scaled_chi2"
    assert evidence.margin(0.99) == pytest.approx(np.quantile(truth, 0.99), rel=0.1)
    assert evidence.margin(0.999) == pytest.approx(np.quantile(truth, 0.999), rel=0.15)


def test_check_bound_is_its_psi_less_the_simulated_noise(census) -> None:
    """The graded bound of a categorical column's PSI is the PSI less the 99% no-change quantile of
    PSIs simulated at the same sizes from the pooled shares."""
    reference, pool = census
    batch = pool.iloc[:300]
    [result] = run_check(
        registry.create("drift.categorical"), batch, Columns(categorical=("RELP",)), reference=reference
    )
    ref = reference["RELP"].value_counts().sort_index()
    cur = batch["RELP"].value_counts().reindex(ref.index, fill_value=0)
    pooled = (ref + cur).to_numpy() / (ref.sum() + cur.sum())
    rng = np.random.default_rng(3)
    null = independent_psi(rng.multinomial(ref.sum(), pooled, 20_000), rng.multinomial(300, pooled, 20_000))
    assert result.metrics["psi"] == pytest.approx(
        independent_psi(ref.to_numpy()[None], cur.to_numpy()[None])[0]
    )
    margin = result.metrics["psi"] - result.metrics["psi_bound"]
    assert margin == pytest.approx(np.quantile(null, 0.99), rel=0.1)


def test_partitioned_counts_give_the_same_evidence(census) -> None:
    """Evaluated in partitions and merged, the PSI's evidence is exactly the whole batch's."""
    reference, pool = census
    columns = Columns(numeric=("AGEP",), categorical=("SCHL", "RELP"))
    for name in ("drift.numeric", "drift.categorical"):
        check = registry.create(name, {"compute_impact": False})
        profile = check.fit(reference, columns)
        batch = pool.iloc[:900]
        single = check.evaluate(batch, profile, columns)
        states = [check.partial(batch.iloc[a : a + 300], profile, columns) for a in (0, 300, 600)]
        merged = check.finish(check.merge(states), profile, columns)
        assert [r.evidence for r in merged] == [r.evidence for r in single]
        assert all(r.evidence["psi"]["noise"] == "scaled_chi2" for r in single)


# --- the label's share change ------------------------------------------------------------------------


def binary_counts(zeros: int, ones: int) -> pd.Series:
    return pd.Series({"0": zeros, "1": ones})


def test_label_share_bound_is_the_agresti_caffo_bound() -> None:
    """A default rate 0.219 -> 0.281 on 5,000 rows: bound from scipy's normal quantile, at the level
    of the best of two one-sided tests (the rate may rise or fall), 1 - 0.01 / 2, with Yates's
    continuity correction."""
    reference = pd.DataFrame({"default": np.repeat([0, 1], [15_620, 4_380])})  # rate 0.219
    current = pd.DataFrame({"default": np.repeat([0, 1], [3_595, 1_405])})  # rate 0.281
    [result] = run_check(
        registry.create("drift.label"), current, Columns(label="default", task="binary"), reference=reference
    )
    p1, p0 = 1406 / 5002, 4381 / 20_002
    se = math.sqrt(p1 * (1 - p1) / 5002 + p0 * (1 - p0) / 20_002)  # above the pooled no-change one
    se += (1 / 5000 + 1 / 20_000) / 2 / stats.norm.ppf(0.99)  # half a row per side (Yates)
    assert result.metrics["share_change"] == pytest.approx(0.062)
    assert result.metrics["share_change_bound"] == pytest.approx(0.062 - stats.norm.ppf(0.995) * se, rel=1e-9)
    assert result.details["changed_class"] == "1"
    assert result.severity == "medium"


def test_label_share_bound_holds_at_the_threshold_on_exact_binomial_draws() -> None:
    """A rate that truly moves by the medium threshold, 0.219 -> 0.249, on 3,000 rows against 20,000:
    the 99% lower bound reaches 0.03 in about 1% of exact binomial draws, and no more."""
    rng = np.random.default_rng(23)
    draws = 3000
    ref_hits = stats.binom.rvs(20_000, 0.219, size=draws, random_state=rng)
    hits = stats.binom.rvs(3000, 0.249, size=draws, random_state=rng)
    bounds = np.array(
        [
            share_change(CategoryCounts(("0", "1"), np.array([20_000 - r, r])), binary_counts(3000 - h, h))[
                0
            ].bound(0.99)
            for r, h in zip(ref_hits, hits, strict=True)
        ]
    )
    reached = np.mean(bounds >= 0.03)
    assert reached <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / draws)
    assert reached > 0.002  # not so wide that the bound never comes near the true change


def test_label_prior_shift_is_detected_and_a_clean_label_is_quiet(census) -> None:
    """Employment rate 0.50 -> about 0.58 in a 3,000-row batch drawn with employed rows over-sampled."""
    reference, pool = census
    rng = np.random.default_rng(5)
    weights = np.where(pool["employed"] == 1, 1.4, 1.0)
    shifted = pool.iloc[rng.choice(len(pool), 3000, replace=False, p=weights / weights.sum())]
    columns = Columns(label="employed", task="binary")
    [result] = run_check(registry.create("drift.label"), shifted, columns, reference=reference)
    assert result.metrics["share_change"] > 0.05
    assert result.severity == "medium"
    [clean] = run_check(registry.create("drift.label"), pool.iloc[:3000], columns, reference=reference)
    assert clean.severity == "none"


# --- false alarms on clean resamples of real data ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("drift.numeric", Columns(numeric=("AGEP",))),
        ("drift.categorical", Columns(categorical=CATEGORICAL)),
        ("drift.label", Columns(label="employed", task="binary")),
        ("drift.label_psi", Columns(label="employed", task="binary")),
        ("drift.prediction", Columns(score="score")),
        ("drift.predicted_label", Columns(score="score")),
        ("drift.correlation", Columns(numeric=("AGEP", "score"), label="employed")),
        ("drift.mutual_info_features", Columns(categorical=("SCHL", "MAR", "RELP"))),
        (
            "drift.mutual_info_label",
            Columns(numeric=("AGEP",), categorical=("SCHL", "MAR"), label="employed"),
        ),
    ],
)
def test_clean_census_batches_rarely_alarm(census, name: str, columns: Columns) -> None:
    reference, pool = census
    assert clean_alarm_rate(name, reference, pool, columns) <= FALSE_ALARM_LIMIT


@pytest.mark.parametrize("name", ["drift.unigrams", "drift.bigrams"])
def test_clean_sentence_batches_rarely_alarm(name: str) -> None:
    """Clean batches of 30 to 1,000 sentences of the same mix of domains as the reference."""
    sentences = load_sentences().sample(frac=1.0, random_state=0).reset_index(drop=True)
    reference, pool = sentences.iloc[:4000], sentences.iloc[4000:].reset_index(drop=True)
    check = registry.create(name)
    columns = Columns(text=("text",))
    profile = check.fit(reference, columns)
    rng = np.random.default_rng(29)
    alarms = 0
    for i in range(RESAMPLES):
        rows = rng.choice(len(pool), (30, 100, 300, 1000)[i % 4], replace=False)
        [result] = run_check(check, pool.iloc[rows], columns, profile=profile)
        alarms += severity_rank(result.severity) >= severity_rank("medium")
    assert alarms / RESAMPLES <= FALSE_ALARM_LIMIT


# --- detection of real shifts ------------------------------------------------------------------------


def test_older_population_is_detected(census) -> None:
    """The demo's ageing batches of 2018 (sampling weight exp(strength · (age − 45) / 15)): at strength 1
    age and the categorical columns tied to it drift high; at 1.5 the employment rate falls by over
    0.06, a medium or high label drift."""
    reference, _ = census
    data = read_census()
    year = data[data["year"] == 2018].drop(columns="year")
    batch = aged_sample(year, 1.0, np.random.default_rng(7))
    [age] = run_check(
        registry.create("drift.numeric"), batch, Columns(numeric=("AGEP",)), reference=reference
    )
    assert age.severity == "high" and age.metrics["psi_bound"] > 0.3
    categorical = run_check(registry.create("drift.categorical"), batch, CENSUS, reference=reference)
    assert {r.target for r in categorical if r.severity == "high"} >= {"MAR", "RELP", "ESP", "MIL"}
    older = aged_sample(year, 1.5, np.random.default_rng(7))
    [label] = run_check(registry.create("drift.label"), older, CENSUS, reference=reference)
    assert label.metrics["share_change"] > 0.06
    assert severity_rank(label.severity) >= severity_rank("medium")


def test_change_of_text_domain_is_detected() -> None:
    """Tweets against a reference without tweets: their unigrams drift at least medium."""
    sentences = load_sentences()
    tweets = sentences[sentences["domain"] == "tweets"].sample(500, random_state=1)
    reference = sentences[sentences["domain"] != "tweets"]
    [result] = run_check(
        registry.create("drift.unigrams"), tweets, Columns(text=("text",)), reference=reference
    )
    assert severity_rank(result.severity) >= severity_rank("medium")
