"""Multivariate drift on the demo's census data: clean resamples stay quiet, two decorrelated features
that no per-column check sees are caught by both methods, bad input is skipped or an error with a
reason, and the reconstruction error is pinned against scikit-learn's PCA computed by hand."""

from __future__ import annotations

import io
import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import StandardScaler

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.drift_multivariate import MultivariateDrift
from driftline.checks.errors import CheckInputError
from driftline.checks.profile_format import dump_profile, load_profile
from driftline.checks.runner import run_check
from driftline.checks.testing import contract_cases
from driftline.data.demo import DATA_FILE, LABEL

METHODS = ("reconstruction", "classifier")
NUMERIC = ("AGEP", "SCHL")  # age and schooling attainment (its codes rank the levels): correlation 0.51
REFERENCE_ROWS = 6000
BATCH_ROWS = 3000
FOLDS = 5


@pytest.fixture(scope="module")
def census() -> tuple[pd.DataFrame, pd.DataFrame, Columns]:
    """ACS 2015, shuffled: the reference's 6,000 rows and a pool of the other 14,000, and the roles
    (SCHL read as its ordinal code)."""
    with resources.as_file(DATA_FILE) as path:
        data = pd.read_parquet(path)
    data = data[data["year"] == 2015].drop(columns="year").sample(frac=1.0, random_state=0)
    data["SCHL"] = data["SCHL"].astype(int)
    categorical = tuple(c for c in data.columns if c not in ("id", LABEL, *NUMERIC))
    columns = Columns(id="id", label=LABEL, numeric=NUMERIC, categorical=categorical)
    reference = data.iloc[:REFERENCE_ROWS].reset_index(drop=True)
    return reference, data.iloc[REFERENCE_ROWS:].reset_index(drop=True), columns


@pytest.fixture(scope="module")
def profiles(census) -> dict[str, object]:
    reference, _, columns = census
    return {m: MultivariateDrift(method=m).fit(reference, columns) for m in METHODS}


def decorrelated(batch: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The batch with SCHL shuffled among its rows: both marginals kept, their relation gone."""
    shuffled = np.random.default_rng(seed).permutation(batch["SCHL"].to_numpy())
    return batch.assign(SCHL=shuffled)


def evaluated(census, profiles, method: str, batch: pd.DataFrame):
    [result] = run_check(MultivariateDrift(method=method), batch, census[2], profile=profiles[method])
    return result


# --- verdicts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("seed", "rows"), [(0, 500), (1, 1000), (2, 2000), (3, 2000), (4, 5000)])
def test_clean_resamples_raise_no_severity(census, profiles, method, seed, rows):
    _, pool, _ = census
    result = evaluated(census, profiles, method, pool.sample(rows, random_state=seed))
    assert result.status == "ok"
    assert result.severity == "none", result.reason


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decorrelated_features_are_caught_though_no_column_drifts(census, profiles, method, seed):
    reference, pool, columns = census
    batch = decorrelated(pool.sample(BATCH_ROWS, random_state=seed).reset_index(drop=True), seed)
    per_column = run_check(registry.create("drift.numeric"), batch, columns, reference=reference)
    assert {r.target: r.severity for r in per_column} == dict.fromkeys(NUMERIC, "none")
    result = evaluated(census, profiles, method, batch)
    assert result.severity in ("medium", "high"), result.reason


def test_the_classifier_separates_a_batch_from_another_domain_perfectly(census, profiles):
    """Ages in months: no reference row looks like a batch row, so every fold's AUC is 1."""
    _, pool, _ = census
    batch = pool.sample(500, random_state=5).assign(AGEP=lambda f: f["AGEP"] * 12 + 600)
    result = evaluated(census, profiles, "classifier", batch)
    assert result.details["fold_aucs"] == [1.0] * FOLDS
    assert result.metrics["domain_auc"] == 1.0
    assert result.metrics["domain_auc_change"] == 0.5
    assert result.severity == "high"


# --- numbers pinned against independent computations ------------------------------------------------


def with_gaps(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every 13th age and every 17th MAR missing (offset by `seed`), so imputation is exercised."""
    out = frame.copy()
    out.loc[out.index[seed::13], "AGEP"] = np.nan
    out.loc[out.index[seed::17], "MAR"] = np.nan
    return out


def encoded(train: pd.DataFrame, rows: pd.DataFrame, columns: Columns) -> np.ndarray:
    """`rows` imputed and count-encoded with `train`'s statistics, as NannyML 0.13 does: numeric
    features by scikit-learn's mean imputer, categorical ones filled with their most frequent value,
    then each value replaced by its share of the filled training rows (0 for a value they never show)."""
    numeric = list(columns.numeric)
    parts = [SimpleImputer(strategy="mean").fit(train[numeric]).transform(rows[numeric])]
    for name in columns.categorical:
        mode = train[name].astype(object).value_counts().idxmax()
        shares = train[name].astype(object).fillna(mode).astype(str).value_counts(normalize=True)
        values = rows[name].astype(object).fillna(mode).astype(str)
        parts.append(values.map(shares).fillna(0.0).to_numpy(dtype=float)[:, None])
    return np.hstack(parts)


def sklearn_errors(
    train: pd.DataFrame, rows: pd.DataFrame, columns: Columns, keep: float
) -> tuple[np.ndarray, PCA]:
    """Per-row reconstruction errors of `rows` by StandardScaler and PCA(n_components=keep) fitted on
    the encoded `train`, and the PCA."""
    fitted = encoded(train, train, columns)
    scaler = StandardScaler().fit(fitted)
    pca = PCA(n_components=keep, svd_solver="full", random_state=16).fit(scaler.transform(fitted))
    z = scaler.transform(encoded(train, rows, columns))
    return np.linalg.norm(z - pca.inverse_transform(pca.transform(z)), axis=1), pca


@pytest.fixture(scope="module")
def gappy(census) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A reference and a 1,000-row batch with missing ages and marital statuses, and a relationship
    code the reference never shows in every 50th batch row."""
    reference, pool, _ = census
    batch = with_gaps(pool.sample(1000, random_state=7).reset_index(drop=True), 3)
    batch["RELP"] = batch["RELP"].astype(object)
    batch.loc[batch.index[::50], "RELP"] = "99"
    return with_gaps(reference, 0), batch


def test_the_reconstruction_error_is_scikit_learns_pca_error(census, gappy):
    reference, batch = gappy
    [result] = run_check(MultivariateDrift(), batch, census[2], reference=reference)
    errors, pca = sklearn_errors(reference, batch, census[2], 0.65)
    assert result.details["components"] == pca.n_components_ == 6
    assert result.details["explained_variance"] == pytest.approx(
        pca.explained_variance_ratio_.sum(), rel=1e-9
    )
    assert result.metrics["reconstruction_error"] == pytest.approx(errors.mean(), rel=1e-9)
    assert result.details["imputed_values"] == len(range(3, 1000, 13)) + len(range(3, 1000, 17))
    assert result.details["unseen_values"] == 20


def test_the_reference_error_is_cross_fitted_so_not_biased_low(census, gappy):
    """Five seeded folds (a permutation of the rows modulo 5), each scored by transforms fitted on the
    other four with the components the whole reference keeps."""
    reference, _ = gappy
    columns = census[2]
    profile = MultivariateDrift().fit(reference, columns)
    fold = np.random.default_rng(0).permutation(len(reference)) % FOLDS
    held_out = np.concatenate(
        [sklearn_errors(reference[fold != f], reference[fold == f], columns, 6)[0] for f in range(FOLDS)]
    )
    assert profile.rows == len(reference)
    assert profile.error_mean == pytest.approx(held_out.mean(), rel=1e-9)
    assert profile.error_std == pytest.approx(held_out.std(ddof=1), rel=1e-9)
    in_sample = sklearn_errors(reference, reference, columns, 6)[0].mean()
    assert profile.error_mean > in_sample


def test_the_change_is_relative_with_the_delta_method_standard_error(census, gappy):
    reference, batch = gappy
    check = MultivariateDrift()
    profile = check.fit(reference, census[2])
    [result] = run_check(check, batch, census[2], profile=profile)
    errors, _ = sklearn_errors(reference, batch, census[2], 0.65)
    mean, ref_mean = errors.mean(), profile.error_mean
    variance = errors.var(ddof=1) / len(errors) / ref_mean**2
    variance += mean**2 * profile.error_std**2 / profile.rows / ref_mean**4
    evidence = result.evidence["reconstruction_error_change"]
    assert result.metrics["reconstruction_error_change"] == pytest.approx(mean / ref_mean - 1, rel=1e-9)
    assert evidence["noise"] == "normal"
    assert evidence["scale"] == pytest.approx(math.sqrt(variance), rel=1e-9)


def hanley_mcneil(auc: float, positives: int, negatives: int) -> float:
    """Hanley & McNeil (1982), equation 2."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    variance = auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)
    return math.sqrt(variance / (positives * negatives))


@pytest.mark.parametrize(
    ("sample_rows", "rows", "seen", "used"),
    [(20_000, 800, 800, 2400), (1000, 800, 800, 1000), (1000, 1500, 1000, 1000)],
)
def test_the_classifier_sees_bounded_samples(census, sample_rows, rows, seen, used):
    """At most `sample_rows` batch rows, and `reference_ratio` (3) reference rows per batch row seen,
    from at most `sample_rows`; the AUC's standard error is Hanley–McNeil's at one fold's share of
    those counts (the fold AUCs are correlated: their mean is no surer than one of them)."""
    reference, pool, columns = census
    batch = decorrelated(pool.sample(rows, random_state=11).reset_index(drop=True), 11)
    check = MultivariateDrift(method="classifier", sample_rows=sample_rows)
    [result] = run_check(check, batch, columns, reference=reference)
    auc = result.metrics["domain_auc"]
    assert (result.rows, result.details["batch_rows"], result.details["reference_rows"]) == (rows, seen, used)
    assert auc == pytest.approx(np.mean(result.details["fold_aucs"]), rel=1e-12)
    assert result.metrics["domain_auc_change"] == pytest.approx(auc - 0.5, abs=1e-12)
    expected = hanley_mcneil(auc, seen // FOLDS, used // FOLDS)
    assert result.evidence["domain_auc_change"]["scale"] == pytest.approx(expected)


# --- bad input and parameters -----------------------------------------------------------------------

BAD_BATCHES = {
    "empty": (lambda b: b.iloc[:0], "skipped", "empty"),
    "one row": (lambda b: b.iloc[:1], "skipped", "at least 100"),
    "missing categorical column": (lambda b: b.drop(columns="MAR"), "error", "'MAR'"),
    "missing numeric column": (lambda b: b.drop(columns="SCHL"), "error", "'SCHL'"),
    "all-NaN column": (lambda b: b.assign(AGEP=np.nan), "error", "'AGEP'"),
    "text in a numeric column": (lambda b: b.assign(SCHL=b["SCHL"].astype(str)), "error", "not numeric"),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_a_bad_batch_is_skipped_or_an_error_with_a_reason(census, method, case):
    reference, pool, columns = census
    make, status, reason = BAD_BATCHES[case]
    batch = make(pool.sample(300, random_state=9))
    [result] = run_check(MultivariateDrift(method=method), batch, columns, reference=reference, strict=True)
    assert (result.status, result.severity) == (status, "none")
    assert reason in result.reason


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("roles", "rows", "reason"),
    [
        ({"numeric": ()}, REFERENCE_ROWS, "no numeric columns"),
        ({"numeric": ("AGEP",), "categorical": ()}, REFERENCE_ROWS, "at least two features"),
        ({}, 50, "the reference has 50 row(s)"),
    ],
    ids=["categorical only", "one feature", "small reference"],
)
def test_data_the_check_cannot_compare_is_skipped_with_a_reason(census, method, roles, rows, reason):
    reference, pool, columns = census
    narrowed = Columns(**{**columns.to_dict(), **roles})
    batch = pool.sample(300, random_state=9)
    check = MultivariateDrift(method=method)
    [result] = run_check(check, batch, narrowed, reference=reference.iloc[:rows], strict=True)
    assert result.status == "skipped"
    assert reason in result.reason


@pytest.mark.parametrize(
    "params",
    [{"method": "pca"}, {"variance": 1.0}, {"variance": 0}, {"reference_ratio": 0.5}, {"sample_rows": 10}],
)
def test_bad_parameters_name_themselves(params):
    with pytest.raises(CheckInputError, match=next(iter(params))):
        MultivariateDrift(**params)


# --- the contract -----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_profiles_are_stored_as_data_and_give_the_same_results(census, profiles, method):
    _, pool, columns = census
    restored = load_profile(io.BytesIO(dump_profile(profiles[method], "key")), "key")
    batch = pool.sample(400, random_state=13)
    check = MultivariateDrift(method=method)
    again = run_check(check, batch, columns, profile=restored)
    assert [r.to_dict() for r in again] == [
        r.to_dict() for r in run_check(check, batch, columns, profile=profiles[method])
    ]


@pytest.mark.parametrize(
    "case", contract_cases(MultivariateDrift(method="classifier")), ids=lambda case: case.name
)
def test_the_classifier_keeps_the_contract(case):
    """The catalog's battery runs the default (reconstruction); this runs it on the classifier."""
    case.run()
