"""Shared behaviour of the abnormal checks: severity, model impact, failing ids, null rate, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score

from driftline.checks import registry
from driftline.checks.abnormal import NullRate
from driftline.checks.abnormal_values import OutOfRange
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError
from driftline.checks.result import CheckResult
from driftline.checks.runner import run_check

NAMES = [
    "abnormal.capitalization",
    "abnormal.empty_string",
    "abnormal.inconsistencies",
    "abnormal.nulls",
    "abnormal.numeric_outliers",
    "abnormal.out_of_range",
    "abnormal.rare_categories",
    "abnormal.required_characters",
    "abnormal.unseen_categorical",
    "abnormal.unseen_domain",
    "abnormal.unseen_email",
    "abnormal.unseen_url",
]
LABELLED = Columns(numeric=("x",), label="label", prediction="prediction", task="binary")
REFERENCE_ROWS = 5000


def agresti_caffo_bound(
    hits: int, rows: int, reference_hits: int, reference_rows: int, confidence: float = 0.99
) -> float:
    """Lower bound of a rate's increase, written out: one success and one failure added per side, the
    standard error never below the pooled no-change one, plus half a row per side spread at 99%."""
    p, q = (hits + 1) / (rows + 2), (reference_hits + 1) / (reference_rows + 2)
    pooled = (hits + reference_hits + 1) / (rows + reference_rows + 2)
    se = max(
        np.sqrt(p * (1 - p) / (rows + 2) + q * (1 - q) / (reference_rows + 2)),
        np.sqrt(pooled * (1 - pooled) * (1 / (rows + 2) + 1 / (reference_rows + 2))),
    )
    se += (1 / rows + 1 / reference_rows) / 2 / stats.norm.ppf(0.99)
    return hits / rows - reference_hits / reference_rows - stats.norm.ppf(confidence) * se


def test_public_names_are_registered() -> None:
    assert set(NAMES) <= set(registry.names())
    for name in NAMES:
        entry = registry.describe(name)
        assert entry["family"] == "abnormal" and entry["summary"]


def range_frames(failing: int, rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A reference of 5000 distinct x in [0, 10] and a batch whose first `failing` rows have x = 20."""
    rng = np.random.default_rng(seed)
    reference = pd.DataFrame({"x": np.linspace(0, 10, REFERENCE_ROWS)})
    x = np.where(np.arange(rows) < failing, 20.0, rng.uniform(0, 10, rows))
    label = rng.integers(0, 2, rows)
    prediction = np.where(rng.random(rows) < 0.8, label, 1 - label)
    prediction[:failing] = np.where(np.arange(failing) % 2 == 0, label[:failing], 1 - label[:failing])
    score = np.where(np.arange(rows) < failing, 0.9, rng.uniform(0, 0.5, rows))
    current = pd.DataFrame({"x": x, "label": label, "prediction": prediction, "score": score})
    return reference, current


def test_model_impact_is_accuracy_on_passing_minus_failing_rows() -> None:
    reference, current = range_frames(failing=40, rows=400)
    (result,) = OutOfRange().run(reference, current, LABELLED)
    passing, failing = current.iloc[40:], current.iloc[:40]
    expected = accuracy_score(passing["label"], passing["prediction"]) - accuracy_score(
        failing["label"], failing["prediction"]
    )
    assert result.failing_rows == 40
    assert result.model_impact == pytest.approx(expected)
    assert result.metrics["model_impact"] == pytest.approx(expected)


def test_model_impact_without_labels_is_the_change_in_mean_score() -> None:
    reference, current = range_frames(failing=40, rows=400)
    (result,) = OutOfRange().run(reference, current, Columns(numeric=("x",), score="score"))
    expected = abs(current["score"].iloc[:40].mean() - current["score"].iloc[40:].mean())
    assert result.model_impact == pytest.approx(expected)


def test_no_failing_rows_means_no_impact_and_no_severity() -> None:
    reference, current = range_frames(failing=0, rows=100)
    (result,) = OutOfRange().run(reference, current, LABELLED)
    assert result.failing_rows == 0 and result.model_impact is None and result.severity == "none"
    assert "model_impact" not in result.metrics


@pytest.mark.parametrize(
    ("failing", "rows", "severity"),
    [
        (1, 1000, "none"),  # one row beyond the range is what a clean batch may show
        (10, 1000, "low"),  # 1% failing: known to exceed the clean 0.04% by at least 0.1 points
        (40, 1000, "medium"),  # 4%: known to exceed it by at least 1 point
        (150, 1000, "high"),  # 15%: by at least 5 points
    ],
)
def test_severity_from_the_failing_rate_increase(failing: int, rows: int, severity: str) -> None:
    reference, current = range_frames(failing, rows)
    (result,) = OutOfRange().run(reference, current, LABELLED)
    # A clean batch shows 2 of 5000 rows out of range: the reference's unique minimum and maximum.
    assert result.details["clean_rate"] == pytest.approx(2 / REFERENCE_ROWS)
    assert result.metrics["failing_share"] == pytest.approx(failing / rows)
    assert result.metrics["failing_rate_increase"] == pytest.approx(failing / rows - 2 / REFERENCE_ROWS)
    bound = agresti_caffo_bound(failing, rows, 2, REFERENCE_ROWS)
    assert result.metrics["failing_rate_increase_bound"] == pytest.approx(bound)
    assert result.severity == severity


def test_model_impact_is_reported_not_graded() -> None:
    # 10 of 5000 rows (0.2%) fail, half of them misclassified against ~20% elsewhere: impact ~0.3,
    # a comparison within the batch; the failing rate is not known to exceed a clean batch's.
    reference, current = range_frames(failing=10, rows=5000)
    (result,) = OutOfRange().run(reference, current, LABELLED)
    assert result.model_impact > 0.1 and result.metrics["model_impact"] == result.model_impact
    assert result.severity == "none" and set(result.thresholds) == {"failing_rate_increase"}


def test_thresholds_can_be_overridden() -> None:
    reference, current = range_frames(failing=120, rows=1000)
    (default,) = OutOfRange().run(reference, current, LABELLED)
    (result,) = OutOfRange(thresholds={"failing_rate_increase": [0.5]}).run(reference, current, LABELLED)
    assert default.severity == "high"
    assert result.severity == "none" and result.thresholds == {"failing_rate_increase": [0.5]}
    with pytest.raises(CheckInputError, match="failing_share"):
        OutOfRange(thresholds={"failing_share": [0.5]})


def test_failing_ids_come_from_the_id_column_and_are_capped() -> None:
    reference, current = range_frames(failing=30, rows=100)
    current["id"] = [f"row-{i}" for i in range(100)]
    columns = Columns(numeric=("x",), id="id")
    (result,) = OutOfRange(max_failing_ids=5).run(reference, current, columns)
    assert result.details["failing_ids"] == [f"row-{i}" for i in range(5)]
    assert result.details["failing_ids_total"] == 30 == result.failing_rows
    current.index = current.index + 1000
    (by_index,) = OutOfRange(max_failing_ids=3).run(reference, current, Columns(numeric=("x",)))
    assert by_index.details["failing_ids"] == [1000, 1001, 1002]


def test_null_rate_metrics_and_severity() -> None:
    reference = pd.DataFrame(
        {"x": np.tile([1.0, np.nan, 2.0, 3.0], 250), "c": np.tile(["a", "b", "c", "d"], 250)}
    )
    current = pd.DataFrame(
        {"x": np.tile([np.nan, np.nan, 1.0, 2.0], 100), "c": np.tile(["a", None, "b", "c"], 100)}
    )
    results = {
        r.target: r for r in NullRate().run(reference, current, Columns(numeric=("x",), categorical=("c",)))
    }
    x, c = results["x"], results["c"]
    assert x.metrics["failing_share"] == pytest.approx(0.5)
    assert x.metrics["reference_null_rate"] == pytest.approx(0.25)
    assert x.metrics["null_rate_increase"] == pytest.approx(0.25)
    # Two graded rates (nulls, infinities): each bound at 1 - 0.01 / 2.
    bound = agresti_caffo_bound(200, 400, 250, 1000, confidence=0.995)
    assert x.metrics["null_rate_increase_bound"] == pytest.approx(bound)
    assert x.failing_rows == 200 and x.severity == "high"
    assert c.metrics["null_rate_increase"] == pytest.approx(0.25) and c.severity == "high"
    # The batch's own null share, beside the reference's: 2 of every 4 rows of x, 1 of every 4 of c.
    assert x.details["null_rate"] == pytest.approx(current["x"].isna().mean()) == pytest.approx(0.5)
    assert c.details["null_rate"] == pytest.approx(current["c"].isna().mean()) == pytest.approx(0.25)


def test_new_nulls_are_graded_and_steady_nulls_are_not() -> None:
    reference = pd.DataFrame(
        {"new": np.arange(1000.0), "steady": np.where(np.arange(1000) % 10 == 0, np.nan, 1.0)}
    )
    current = reference.copy()
    current.loc[:29, "new"] = np.nan  # 3% of the rows, none in the reference
    current["label"] = np.arange(1000) % 2
    # Null rows of "steady" are all misclassified: a large impact, but nulls are as frequent as before.
    current["prediction"] = np.where(current["steady"].isna(), 1 - current["label"], current["label"])
    columns = Columns(numeric=("new", "steady"), label="label", prediction="prediction", task="binary")
    results = {r.target: r for r in NullRate().run(reference, current, columns)}
    assert results["new"].failing_rows == 30 and results["new"].severity == "medium"
    assert results["steady"].model_impact == pytest.approx(1.0)
    assert results["steady"].metrics["null_rate_increase"] == pytest.approx(0.0)
    assert results["steady"].severity == "none"


# -- bad input: every abnormal check, through the runner in strict mode -----------------------------


def base_frame(rows: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(rows),
            "age": rng.integers(0, 30, rows).astype(float),
            "country": rng.choice(["USA", "FRA", None], rows),
            "tz": rng.choice(["EST", "CET"], rows),
            "email": [f"u{i % 7}@mail.com" for i in range(rows)],
            "site": [f"https://s{i % 5}.org/p" for i in range(rows)],
            "host": [f"h{i % 4}.net" for i in range(rows)],
            "label": rng.integers(0, 2, rows),
            "prediction": rng.integers(0, 2, rows),
        }
    )


def bad_inputs() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    reference = base_frame()
    nan_batch = base_frame(seed=1).assign(age=np.nan, country=None)
    inf_batch = base_frame(seed=1).assign(age=np.r_[np.inf, -np.inf, np.full(58, 3.0)])
    swapped = base_frame(seed=1).assign(age=["a"] * 60, country=np.arange(60), email=np.arange(60.0))
    single = base_frame(seed=1).assign(tz="EST", label=1, prediction=1)
    return {
        "empty batch": (reference, reference.iloc[:0]),
        "missing column": (reference, base_frame(seed=1).drop(columns=["age", "email"])),
        "all-NaN batch columns": (reference, nan_batch),
        "all-NaN reference columns": (reference.assign(age=np.nan, country=None), base_frame(seed=1)),
        "inf values": (reference, inf_batch),
        "single class": (reference.assign(tz="EST"), single),
        "mismatched dtypes": (reference, swapped),
        "one row": (reference.iloc[:1], base_frame(seed=1).iloc[:1]),
    }


@pytest.mark.parametrize("case", list(bad_inputs()))
@pytest.mark.parametrize("name", NAMES)
def test_bad_input_never_raises(name: str, case: str) -> None:
    reference, current = bad_inputs()[case]
    columns = infer_columns(base_frame())
    results = run_check(registry.create(name), current, columns, reference=reference, strict=True)
    assert results and all(isinstance(r, CheckResult) for r in results)
    for result in results:
        json.dumps(result.to_dict())
        if result.status != "ok":
            assert result.reason


def test_bad_input_results_name_the_column() -> None:
    reference, current = bad_inputs()["mismatched dtypes"]
    columns = infer_columns(base_frame())
    results = {
        r.target: r
        for r in run_check(registry.create("abnormal.out_of_range"), current, columns, reference=reference)
    }
    assert results["age"].status == "error" and "'age'" in results["age"].reason
    reference, current = bad_inputs()["inf values"]
    (age,) = run_check(registry.create("abnormal.out_of_range"), current, columns, reference=reference)
    assert age.details["inf_rows"] == 2 and age.details["dropped_rows"] == 0 and age.rows == 60
    assert (age.details["below_rows"], age.details["above_rows"]) == (1, 1) and age.failing_rows == 2
