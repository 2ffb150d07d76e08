"""Mergeable checks: evaluated partition by partition and merged, they give the results `evaluate`
gives on the whole batch (counts exactly, sums within rounding), for every mergeable check of the
catalog."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.mergeable import Mergeable, merge_obstacle
from driftline.checks.runner import missing_role
from tests.scale.helpers import assert_same, merged_results, mixed_frame, split

BINARY = Columns(
    numeric=("x", "ties", "wide"), categorical=("cat",), label="label", score="score", prediction="prediction"
)
NO_LABELS = Columns(numeric=("x", "ties", "wide"), categorical=("cat",), score="score")
SIZES = [700, 0, 1300, 450]  # uneven, one empty partition, the rest in the last


def mergeable_checks() -> list[str]:
    """Every check of the catalog that is `Mergeable` and merges in its default configuration."""
    registry.load_catalog()
    return [
        name
        for name in registry.names()
        if issubclass(registry.get(name), Mergeable) and merge_obstacle(registry.create(name)) is None
    ]


MERGEABLE = mergeable_checks()
VARIANTS = [
    ("drift.numeric", {"sketch_size": 50, "bins": 7}),  # KS on a sketch smaller than the distinct values
    ("drift.numeric", {"smoothing": 0.0, "compute_impact": False}),
    ("abnormal.out_of_range", {"max_failing_ids": 25}),
]
CASES = [(name, {}) for name in MERGEABLE] + VARIANTS
# The checks that report the model impact of their failing rows on this data.
IMPACT_CHECKS = ("drift.numeric", "drift.categorical", "abnormal.nulls", "abnormal.out_of_range")


def _check_both(
    name: str, params: dict, columns: Columns, reference: pd.DataFrame, batch: pd.DataFrame
) -> list:
    check = registry.create(name, params)
    profile = check.fit(reference, columns)
    single = [r.to_dict() for r in check.evaluate(batch, profile, columns)]
    merged = merged_results(check, split(batch, SIZES), profile, columns)
    assert_same(merged, single)
    return single


# Every case with labels, and without them where the check has the roles it needs.
WITH_AND_WITHOUT_LABELS = [
    pytest.param(name, params, columns, id=f"{name}-{kind}-{i}")
    for i, (name, params) in enumerate(CASES)
    for kind, columns in (("labels", BINARY), ("no-labels", NO_LABELS))
    if missing_role(registry.create(name, params), columns) is None
]


def test_the_catalog_names_its_mergeable_checks() -> None:
    """The cases come from the registry; the checks known to merge are among them, the label drift
    checks (their classes depend on the whole label column) and the plain checks are not."""
    assert {
        "drift.numeric",
        "drift.categorical",
        "drift.prediction",
        "drift.predicted_label",
        "abnormal.nulls",
        "abnormal.out_of_range",
        "abnormal.numeric_outliers",
        "performance.overall",
    } <= set(MERGEABLE)
    assert not {"drift.label", "drift.label_psi", "abnormal.rare_categories", "drift.correlation"} & set(
        MERGEABLE
    )


@pytest.mark.parametrize(("name", "params", "columns"), WITH_AND_WITHOUT_LABELS)
def test_merged_equals_single_machine(name: str, params: dict, columns: Columns) -> None:
    """Drifted batch with NaN, ±inf, nulls, unseen categories: identical results both ways, and the
    batch drifts enough that severities, failing rows and model impacts are exercised."""
    reference, batch = mixed_frame(3000, seed=1), mixed_frame(2900, seed=2, shift=0.6)
    single = _check_both(name, params, columns, reference, batch)
    assert any(r["status"] == "ok" for r in single)
    if name in IMPACT_CHECKS and params.get("compute_impact", True):
        assert any(r.get("model_impact") is not None for r in single), "impact path not exercised"


def test_performance_regression_and_multiclass_merge() -> None:
    """MAE/RMSE from sums; multiclass accuracy, macro F1 (confusion counts), log loss and AUC (gathered)."""
    rng = np.random.default_rng(5)

    def regression(n: int, noise: float) -> pd.DataFrame:
        x = rng.normal(size=n)
        return pd.DataFrame(
            {"x": x, "y": 2 * x + rng.normal(0, 1, n), "pred": 2 * x + rng.normal(0, noise, n)}
        )

    cols = Columns(numeric=("x",), label="y", prediction="pred", task="regression")
    single = _check_both("performance.overall", {}, cols, regression(2000, 0.5), regression(3000, 1.5))
    assert {r["target"] for r in single} == {"mae", "rmse"}

    def multiclass(n: int) -> pd.DataFrame:
        scores = rng.dirichlet([1, 1, 1], n)
        truth = np.array(["a", "b", "c"])[[rng.choice(3, p=s) for s in scores]]
        frame = pd.DataFrame(scores, columns=["p_a", "p_b", "p_c"])
        return frame.assign(label=truth)

    cols = Columns(label="label", class_scores=("p_a", "p_b", "p_c"), task="multiclass")
    single = _check_both("performance.overall", {}, cols, multiclass(1500), multiclass(2500))
    assert {r["target"] for r in single} == {"accuracy", "f1", "auc", "log_loss"}


def test_merged_ks_is_scipy_two_sample_ks_when_the_sketch_is_exact() -> None:
    """With at most `sketch_size` distinct reference values the merged KS statistic is the exact
    two-sample statistic (scipy), and the merged PSI is the formula on the bin counts by hand."""
    rng = np.random.default_rng(9)
    reference = pd.DataFrame({"v": rng.integers(0, 300, 4000).astype(float)})
    batch = pd.DataFrame({"v": rng.integers(20, 330, 3500).astype(float)})
    columns = Columns(numeric=("v",))
    check = registry.create("drift.numeric", {"bins": 5})
    profile = check.fit(reference, columns)
    (result,) = merged_results(check, split(batch, [1000, 1000]), profile, columns)
    expected = stats.ks_2samp(reference["v"], batch["v"], method="asymp")
    assert result["metrics"]["ks_statistic"] == pytest.approx(expected.statistic, abs=1e-12)
    edges = np.quantile(reference["v"], [0.2, 0.4, 0.6, 0.8], method="inverted_cdf")
    ref_counts = np.bincount(np.searchsorted(np.unique(edges), reference["v"], side="left"))
    cur_counts = np.bincount(
        np.searchsorted(np.unique(edges), batch["v"], side="left"), minlength=len(ref_counts)
    )
    p = (ref_counts + 1) / (ref_counts.sum() + len(ref_counts))
    q = (cur_counts + 1) / (cur_counts.sum() + len(cur_counts))
    assert result["metrics"]["psi"] == pytest.approx(float(np.sum((q - p) * np.log(q / p))), rel=1e-12)


def test_a_missing_column_stops_only_its_target_in_every_partition() -> None:
    """A batch without `wide`: the merged result errors on that target like the single path does."""
    reference, batch = mixed_frame(1000, seed=3), mixed_frame(1000, seed=4, shift=0.3).drop(columns="wide")
    for name in ("drift.numeric", "abnormal.out_of_range", "abnormal.nulls"):
        single = _check_both(name, {}, BINARY, reference, batch)
        assert any(r["target"] == "wide" and r["status"] == "error" for r in single)


def test_what_does_not_merge_says_why() -> None:
    """A configuration that needs every batch value, a check whose state does not add up and a check
    without the protocol each say why instead of merging wrongly."""
    wasserstein = registry.create("drift.numeric", {"tests": ["ks", "wasserstein"]})
    assert "Wasserstein" in merge_obstacle(wasserstein)
    assert merge_obstacle(registry.create("drift.numeric", {})) is None
    assert "whole batch column" in merge_obstacle(registry.create("drift.label", {}))
    assert "do not add up" in merge_obstacle(registry.create("abnormal.rare_categories", {}))
    plain = registry.create("drift.correlation", {})
    assert not isinstance(plain, Mergeable)
    assert merge_obstacle(plain) == "drift.correlation has no mergeable evaluation"


def test_an_unmergeable_configuration_still_evaluates_whole_batches() -> None:
    """With Wasserstein the PSI and KS are those of the mergeable configuration, and the distance is
    scipy's over the finite values."""
    reference, batch = mixed_frame(3000, seed=1), mixed_frame(2900, seed=2, shift=0.6)
    columns = Columns(numeric=("wide",))
    plain, wasserstein = (
        registry.create("drift.numeric", {"tests": tests}) for tests in (["ks"], ["ks", "wasserstein"])
    )
    (one,) = plain.evaluate(batch, plain.fit(reference, columns), columns)
    (other,) = wasserstein.evaluate(batch, wasserstein.fit(reference, columns), columns)
    assert {k: v for k, v in other.metrics.items() if k != "wasserstein"} == one.metrics
    expected = stats.wasserstein_distance(reference["wide"], batch["wide"])
    assert other.metrics["wasserstein"] == pytest.approx(expected, rel=1e-9)


def test_performance_errors_merge_like_the_single_path() -> None:
    """A batch label the reference never had: log loss errors (in the partition that holds it) and
    AUC errors on the gathered columns, both as on the whole batch; accuracy and F1 still merge."""
    rng = np.random.default_rng(8)

    def multiclass(n: int, classes: list[str]) -> pd.DataFrame:
        frame = pd.DataFrame(rng.dirichlet([1, 1, 1], n), columns=["p_a", "p_b", "p_c"])
        return frame.assign(label=rng.choice(classes, n))

    cols = Columns(label="label", class_scores=("p_a", "p_b", "p_c"), task="multiclass")
    batch = multiclass(2000, ["a", "b", "c"])
    batch.loc[1990:, "label"] = "z"  # only in the last partition (rows 1700 on: SIZES)
    single = _check_both("performance.overall", {}, cols, multiclass(1000, ["a", "b", "c"]), batch)
    status = {r["target"]: r["status"] for r in single}
    assert status == {"accuracy": "ok", "f1": "ok", "auc": "error", "log_loss": "error"}
