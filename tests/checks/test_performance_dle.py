"""performance.estimated_regression (direct loss estimation): the loss model's trees against
scikit-learn's predictions, every reported number against a loss model fitted here by hand, the bands
and grades on clean census resamples, detection of a shift into rows the model predicts worse, bad
input, and the contract battery on a regression frame."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, root_mean_squared_error
from threadpoolctl import threadpool_limits

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.performance_dle import EstimatedRegressionPerformance, LossModel
from driftline.checks.profile_format import dump_profile, load_profile
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.checks.testing import CONTRACT_COLUMNS, Case, contract_cases, contract_frame
from driftline.data.demo import DATA_FILE

LABEL, PREDICTION = "AGEP", "predicted_age"
CATEGORICAL = ("MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE", "DREM")
COLUMNS = Columns(
    label=LABEL,
    prediction=PREDICTION,
    numeric=("SCHL",),
    categorical=(*CATEGORICAL, "SEX", "RAC1P"),
    task="regression",
)
# What the check's loss model is documented to be (LightGBM's defaults, as NannyML's DLE).
HAND_MODEL = {
    "max_iter": 100,
    "learning_rate": 0.1,
    "max_leaf_nodes": 31,
    "min_samples_leaf": 20,
    "early_stopping": False,
    "random_state": 0,
}
CLEAN_SEEDS = 20
CLEAN_ROWS = 1000


def by_target(results):
    return {r.target: r for r in results}


@pytest.fixture(scope="module")
def census() -> dict[str, pd.DataFrame]:
    """A regression model predicting age from the other census answers, trained on 5,000 rows of
    2015 and scored on two disjoint held-out sets of the same year: the reference (8,000 rows) and a
    pool of clean batches (7,000 rows). Schooling (`SCHL`, ordinal) is numeric, the rest categorical."""
    data = pd.read_parquet(DATA_FILE)
    data["SCHL"] = data["SCHL"].astype("int64")
    base = data[data["year"] == 2015].drop(columns=["year", "id", "employed"])
    base = base.sample(frac=1.0, random_state=0)
    features = list(COLUMNS.features)
    with threadpool_limits(1):
        model = HistGradientBoostingRegressor(categorical_features="from_dtype", max_iter=50, random_state=0)
        model.fit(base.iloc[:5000][features], base.iloc[:5000][LABEL])

    def scored(rows: pd.DataFrame) -> pd.DataFrame:
        return rows.assign(**{PREDICTION: model.predict(rows[features])}).reset_index(drop=True)

    return {"reference": scored(base.iloc[5000:13000]), "pool": scored(base.iloc[13000:])}


@pytest.fixture(scope="module")
def fitted(census) -> tuple[EstimatedRegressionPerformance, object]:
    check = EstimatedRegressionPerformance()
    return check, check.fit(census["reference"], COLUMNS)


def realised(frame: pd.DataFrame) -> dict[str, float]:
    return {
        "mae": mean_absolute_error(frame[LABEL], frame[PREDICTION]),
        "rmse": root_mean_squared_error(frame[LABEL], frame[PREDICTION]),
    }


# --- the loss model ------------------------------------------------------------------------------------


def test_loss_model_predicts_what_the_fitted_estimator_predicts():
    """The trees as arrays, walked all at once, give scikit-learn's predictions, missing values included."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 4))
    x[rng.random(x.shape) < 0.05] = np.nan
    y = np.abs(np.nan_to_num(x[:, 0]) * 2 + rng.normal(size=3000)) + np.nan_to_num(x[:, 1])
    with threadpool_limits(1):
        estimator = HistGradientBoostingRegressor(**HAND_MODEL).fit(x, y)
    probe = rng.normal(size=(10_000, 4)) * 2
    probe[rng.random(probe.shape) < 0.1] = np.nan
    model = LossModel.from_estimator(estimator)
    np.testing.assert_allclose(model.predict(probe), estimator.predict(probe), rtol=1e-12, atol=1e-12)
    assert model.predict(probe[:0]).shape == (0,)


# --- every number against a hand computation ------------------------------------------------------------


def hand_dle(reference: pd.DataFrame, batch: pd.DataFrame, features: list[str]) -> dict[str, dict]:
    """DLE written out: halves are alternate rows in the order of a hash of each reference row (its
    features, prediction and label as floats), each half's HistGradientBoostingRegressor predicts the
    other half's losses, the batch's losses are the two models' mean; predictions clipped at 0."""
    x = reference[[*features, PREDICTION]].to_numpy(dtype=float)
    truth = reference[LABEL].to_numpy(dtype=float)
    hashed = pd.util.hash_pandas_object(pd.DataFrame(np.column_stack([x, truth])), index=False)
    order = np.argsort(hashed.to_numpy(), kind="stable")
    x, truth = x[order], truth[order]
    first = np.arange(len(x)) % 2 == 0
    xb = batch[[*features, PREDICTION]].to_numpy(dtype=float)
    out = {}
    for metric, loss in (("mae", np.abs), ("rmse", np.square)):
        losses = loss(truth - x[:, -1])
        with threadpool_limits(1):
            a = HistGradientBoostingRegressor(**HAND_MODEL).fit(x[first], losses[first])
            b = HistGradientBoostingRegressor(**HAND_MODEL).fit(x[~first], losses[~first])
        held = np.where(first, b.predict(x), a.predict(x)).clip(0)
        on_batch = (a.predict(xb).clip(0) + b.predict(xb).clip(0)) / 2
        out[metric] = {"losses": losses, "held": held, "batch": on_batch}
    return out


def per_row_spread(losses: np.ndarray, metric: str) -> float:
    """√n times the standard error of the metric: of the mean loss, and for RMSE by the delta method
    (d√m = dm / 2√m)."""
    spread = losses.std(ddof=1)
    return spread if metric == "mae" else spread / (2 * np.sqrt(losses.mean()))


def test_every_number_matches_a_loss_model_fitted_by_hand(census):
    """Numeric features only (the hand computation needs no category codes): estimates, band, reference
    values, relative rise, its standard error and its confidence bound, to 1e-9."""
    features = ["SCHL", "MAR", "RELP", "ESP", "MIL"]
    columns = Columns(label=LABEL, prediction=PREDICTION, numeric=tuple(features), task="regression")
    frame = census["reference"].iloc[:2000].astype({c: "int64" for c in features})
    reference, batch = frame.iloc[:1500], frame.iloc[1500:].drop(columns=LABEL)
    results = by_target(run_check(EstimatedRegressionPerformance(), batch, columns, reference=reference))
    hand = hand_dle(reference, batch, features)
    n, n_ref = len(batch), len(reference)
    z = stats.norm.ppf(1 - 0.01 / 2)  # two graded metrics at 99%
    for metric, h in hand.items():
        root = np.sqrt if metric == "rmse" else float
        estimated, estimated_reference = root(h["batch"].mean()), root(h["held"].mean())
        se_batch = per_row_spread(h["batch"], metric) / np.sqrt(n)
        se_reference = per_row_spread(h["held"], metric) / np.sqrt(n_ref)
        band = per_row_spread(h["losses"], metric) / np.sqrt(n)
        relative = estimated / estimated_reference - 1
        error = np.sqrt(se_batch**2 + se_reference**2) / estimated_reference
        m = results[metric].metrics
        expected = {
            "estimated": estimated,
            "estimated_reference": estimated_reference,
            "reference": realised(reference)[metric],
            "sampling_error": band,
            "lower": estimated - 3 * band,
            "upper": estimated + 3 * band,
            "relative_degradation": relative,
            "standard_error": error,
            "relative_degradation_bound": relative - z * error,
        }
        for name, value in expected.items():
            assert m[name] == pytest.approx(value, rel=1e-9), (metric, name)


def test_the_stored_profile_is_data_and_gives_the_same_results(census, fitted):
    """The loss models are arrays: the profile survives the cache's pickle-free format unchanged."""
    check, profile = fitted
    restored = load_profile(io.BytesIO(dump_profile(profile, "key")), "key")
    batch = census["pool"].iloc[:500].drop(columns=LABEL)
    after = [r.metrics for r in check.evaluate(batch, restored, COLUMNS)]
    assert after == [r.metrics for r in check.evaluate(batch, profile, COLUMNS)]


# --- clean resamples and a real shift ------------------------------------------------------------------


def test_clean_resamples_are_held_by_the_band_and_grade_no_severity(census, fitted):
    """Batches of 1,000 rows drawn from the held-out pool: the band (± 3 sampling errors) holds the
    realised MAE and RMSE (scikit-learn's, from the hidden labels) in at least 18 of 20 seeds (20 of
    20 measured), and no batch raises a severity."""
    check, profile = fitted
    inside = dict.fromkeys(("mae", "rmse"), 0)
    for seed in range(CLEAN_SEEDS):
        batch = census["pool"].sample(CLEAN_ROWS, random_state=seed)
        results = by_target(run_check(check, batch.drop(columns=LABEL), COLUMNS, profile=profile))
        truth = realised(batch)
        for metric in inside:
            m = results[metric].metrics
            inside[metric] += m["lower"] <= truth[metric] <= m["upper"]
            assert abs(m["estimated"] - truth[metric]) < 0.1 * truth[metric], (seed, metric)
            assert results[metric].severity == "none", (seed, metric, results[metric].reason)
    assert min(inside.values()) >= 18, inside


def test_held_out_reference_estimate_is_close_to_the_realised_loss(census, fitted):
    """Cross-fitting keeps the estimator's own value on the reference honest (not in-sample optimistic)."""
    _, profile = fitted
    truth = realised(census["reference"])
    for metric, fitted_loss in profile.losses.items():
        assert fitted_loss.reference == pytest.approx(truth[metric], rel=1e-12)
        assert fitted_loss.estimated_reference == pytest.approx(truth[metric], rel=0.02), metric
        assert fitted_loss.coverage >= 0.9, metric


def test_shift_into_rows_the_model_predicts_worse_is_estimated_and_graded(census, fitted):
    """Master's degrees and above (SCHL >= 22, the upper tail of schooling): adults of every age, whose
    age the model guesses worse. The estimated and the realised MAE both rise by about a quarter, and
    the check grades medium or worse."""
    check, profile = fitted
    shifted = census["pool"][census["pool"]["SCHL"] >= 22]
    results = by_target(run_check(check, shifted.drop(columns=LABEL), COLUMNS, profile=profile))
    truth, before = realised(shifted), realised(census["reference"])
    mae = results["mae"].metrics
    assert truth["mae"] > 1.2 * before["mae"]
    assert mae["estimated"] > 1.2 * mae["estimated_reference"]
    assert mae["lower"] <= truth["mae"] <= mae["upper"]
    assert results["rmse"].metrics["estimated"] > results["rmse"].metrics["estimated_reference"]
    worst = max(results.values(), key=lambda r: severity_rank(r.severity))
    assert severity_rank(worst.severity) >= severity_rank("medium"), worst.reason


# --- bad input ------------------------------------------------------------------------------------------


def test_bad_input_gives_clear_results(census, fitted):
    check, profile = fitted
    reference = census["reference"].iloc[:1000]
    batch = census["pool"].iloc[:200].drop(columns=LABEL)
    without_prediction = Columns(label=LABEL, numeric=("SCHL",), task="regression")
    [skipped] = run_check(check, batch, without_prediction, reference=reference)
    assert skipped.status == "skipped" and "prediction" in skipped.reason
    [absent] = run_check(check, batch.drop(columns=PREDICTION), COLUMNS, profile=profile)
    assert absent.status == "error" and PREDICTION in absent.reason
    text_label = reference.assign(**{LABEL: reference[LABEL].astype(str)})
    [text] = run_check(check, batch, COLUMNS, reference=text_label)
    assert text.status == "error" and "not numeric" in text.reason and LABEL in text.reason
    [one_row] = run_check(check, batch.iloc[:1], COLUMNS, profile=profile)
    assert one_row.status == "skipped" and "at least 30" in one_row.reason
    [nan] = run_check(check, batch.assign(**{PREDICTION: np.nan}), COLUMNS, profile=profile)
    assert nan.status == "error" and "finite prediction" in nan.reason
    some_nan = batch.assign(**{PREDICTION: batch[PREDICTION].where(np.arange(200) % 4 != 0)})
    results = run_check(check, some_nan, COLUMNS, profile=profile)
    assert {r.details["dropped_rows"] for r in results} == {50}
    few_usable = batch.assign(**{PREDICTION: batch[PREDICTION].where(np.arange(200) < 20)})
    assert {r.status for r in run_check(check, few_usable, COLUMNS, profile=profile)} == {"skipped"}
    text_prediction = batch.assign(**{PREDICTION: "old"})
    [wrong] = run_check(check, text_prediction, COLUMNS, profile=profile)
    assert wrong.status == "error" and "not numeric" in wrong.reason
    [no_feature] = run_check(check, batch.drop(columns="MAR"), COLUMNS, profile=profile)
    assert no_feature.status == "error" and "'MAR'" in no_feature.reason


def test_other_tasks_and_small_references_are_refused(census):
    check = EstimatedRegressionPerformance()
    batch = census["pool"].iloc[:200].drop(columns=LABEL)
    reference = census["reference"].iloc[:1000]
    binary = Columns(label=LABEL, prediction=PREDICTION, numeric=("SCHL",), task="binary")
    [other] = run_check(check, batch, binary, reference=reference)
    assert other.status == "skipped" and "performance.estimated" in other.reason
    [unlabelled] = run_check(check, batch, Columns(prediction=PREDICTION), reference=reference)
    assert unlabelled.status == "skipped" and "label" in unlabelled.reason
    [small] = run_check(check, batch, COLUMNS, reference=reference.iloc[:80])
    assert small.status == "error" and "at least 100" in small.reason
    perfect = reference.assign(**{PREDICTION: reference[LABEL].astype(float)})
    [zero] = run_check(check, batch, COLUMNS, reference=perfect)
    assert zero.status == "skipped" and "zero" in zero.reason
    for params in ({"band_sigmas": 0}, {"reference_chunks": 1}, {"metrics": ["mape"]}):
        with pytest.raises(CheckInputError):
            EstimatedRegressionPerformance(**params)


def test_metrics_parameter_limits_the_results(census):
    check = EstimatedRegressionPerformance(metrics=["rmse"])
    batch = census["pool"].iloc[:300].drop(columns=LABEL)
    results = run_check(check, batch, COLUMNS, reference=census["reference"].iloc[:2000])
    assert [r.target for r in results] == ["rmse"] and results[0].status == "ok"


# --- the contract ---------------------------------------------------------------------------------------

REGRESSION_COLUMNS = Columns(
    label="label",
    prediction="prediction",
    numeric=CONTRACT_COLUMNS.numeric,
    categorical=CONTRACT_COLUMNS.categorical,
    task="regression",
)


def regression_frame(n: int, seed: int) -> pd.DataFrame:
    """The battery's frame with a numeric label and a prediction that misses it more for one city."""
    frame = contract_frame(n, seed)
    rng = np.random.default_rng(seed + 100)
    noise = rng.normal(size=n) * np.where(frame["city"] == "Oslo", 3.0, 1.0)
    return frame.assign(label=3 * frame["x1"] + noise, prediction=(3 * frame["x1"]).round(1))


CONTRACT = [
    pytest.param(case, id=f"{frames}-{case.name}")
    for frames, cases in (
        ("contract_frames", contract_cases(EstimatedRegressionPerformance)),
        (
            "regression_frames",
            contract_cases(
                EstimatedRegressionPerformance,
                reference=regression_frame(400, 0),
                batch=regression_frame(300, 1),
                columns=REGRESSION_COLUMNS,
            ),
        ),
    )
    for case in cases
]


@pytest.mark.parametrize("case", CONTRACT)
def test_check_keeps_the_contract(case: Case) -> None:
    case.run()


def test_the_check_is_registered_by_its_module():
    assert registry.get("performance.estimated_regression") is EstimatedRegressionPerformance
    reference, batch = regression_frame(400, 0), regression_frame(300, 1)
    results = run_check(EstimatedRegressionPerformance(), batch, REGRESSION_COLUMNS, reference=reference)
    assert {r.status for r in results} == {"ok"}
    assert all(math.isfinite(r.metrics["estimated"]) for r in results)
