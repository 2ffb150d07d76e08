"""Feature importance of the monitored model: pinned against scikit-learn computed here, cached as JSON
once per reference snapshot, attached to the results whose target is a feature."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult
from driftline.tasks.references import importance as module
from driftline.tasks.references.importance import (
    FeatureImportance,
    attach_importance,
    feature_importance,
    reference_importance,
)
from driftline.tasks.references.reference import LazyReference, PreparedReference, ReferenceFacts

FEATURES = ["a", "b", "c"]
COLUMNS = Columns(numeric=tuple(FEATURES), label="y")


def reference(rows: int = 3000) -> pd.DataFrame:
    """Three features on different scales; the label depends on a strongly, b weakly, c not at all."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.normal(0, 1, rows), "b": rng.normal(0, 10, rows), "c": rng.normal(5, 3, rows)}
    )
    frame["y"] = (frame["a"] + 0.05 * frame["b"] + rng.normal(0, 0.5, rows) > 0).astype(int)
    return frame


def shares(values: np.ndarray) -> dict[str, float]:
    values = np.clip(values, 0, None)
    return dict(zip(FEATURES, values / values.sum(), strict=True))


def test_a_tree_ensemble_gives_its_own_importances() -> None:
    frame = reference()
    model = RandomForestClassifier(n_estimators=20, random_state=0).fit(frame[FEATURES], frame["y"])
    found = feature_importance(model, frame, COLUMNS)
    assert found is not None and found.method == "feature_importances_"
    expected = shares(model.feature_importances_)
    assert found.shares == pytest.approx(expected, rel=1e-12)
    assert found.ranks() == {"a": 1, "b": 2, "c": 3}


def test_linear_coefficients_are_scaled_by_each_features_spread() -> None:
    frame = reference()
    model = LogisticRegression().fit(frame[FEATURES], frame["y"])
    found = feature_importance(model, frame, COLUMNS)
    assert found is not None and found.method == "coef_ × std"
    spread = np.array([np.std(frame[c].to_numpy()) for c in FEATURES])
    assert found.shares == pytest.approx(shares(np.abs(model.coef_[0]) * spread), rel=1e-9)


def test_a_pipeline_gets_permutation_importance_against_its_own_predictions() -> None:
    frame = reference()
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(frame[FEATURES], frame["y"])
    found = feature_importance(model, frame, COLUMNS)
    sample = frame.sample(n=2000, random_state=0)[FEATURES]
    independent = permutation_importance(
        model, sample, model.predict(sample), scoring="accuracy", n_repeats=5, random_state=0
    )
    assert found is not None and found.method == "permutation"
    assert found.shares == pytest.approx(shares(independent.importances_mean), rel=1e-12)
    assert found.ranks()["a"] == 1


def test_a_regression_pipeline_is_scored_by_r2_against_its_own_predictions() -> None:
    frame = reference()
    target = 3 * frame["a"] + frame["b"] / 10
    model = make_pipeline(StandardScaler(), Ridge()).fit(frame[FEATURES], target)
    found = feature_importance(model, frame, COLUMNS)
    sample = frame.sample(n=2000, random_state=0)[FEATURES]
    independent = permutation_importance(
        model, sample, model.predict(sample), scoring="r2", n_repeats=5, random_state=0
    )
    assert found is not None
    assert found.shares == pytest.approx(shares(independent.importances_mean), rel=1e-9)


def test_the_time_budget_cuts_repeats_then_rows_then_gives_up() -> None:
    # 3 features: 5 repeats need 16 predictions, one repeat 4; the budget is 30 s.
    assert module._affordable(1.0, 3, 2000) == (2000, 5)  # 16 s
    assert module._affordable(5.0, 3, 2000) == (2000, 1)  # 80 s with 5 repeats, 20 s with one
    assert module._affordable(10.0, 3, 2000) == (1500, 1)  # 40 s: 2000 * 30 / 40 rows
    assert module._affordable(100.0, 3, 2000) is None  # 150 rows < 200


def prepared(model: object, frame: pd.DataFrame | LazyReference) -> PreparedReference:
    return PreparedReference(frame, COLUMNS, "ref-hash", model)


def test_importance_is_cached_as_json_and_the_reference_is_not_read_again(tmp_path: Path) -> None:
    frame = reference()
    model = LogisticRegression().fit(frame[FEATURES], frame["y"])
    first = reference_importance(prepared(model, frame), tmp_path)
    files = list(tmp_path.glob("importance-*.json"))
    assert first is not None and len(files) == 1
    assert json.loads(files[0].read_text())["shares"] == pytest.approx(first.shares)

    def unreadable() -> pd.DataFrame:
        raise AssertionError("the reference was read although its importance is cached")

    facts = ReferenceFacts("ref-hash", COLUMNS.to_dict(), [*FEATURES, "y"], len(frame))
    assert reference_importance(prepared(model, LazyReference(facts, unreadable)), tmp_path) == first

    files[0].write_text("{not json")  # a corrupt entry is measured again, never fatal
    assert reference_importance(prepared(model, frame), tmp_path) == first


def test_no_model_no_importance_and_a_failure_is_not_fatal(tmp_path: Path) -> None:
    assert reference_importance(prepared(None, reference()), tmp_path) is None

    class Broken:
        feature_names_in_ = np.array(FEATURES)

        def predict(self, x: object) -> None:
            raise RuntimeError("boom")

    assert reference_importance(prepared(Broken(), reference()), tmp_path) is None


def test_importance_goes_to_per_feature_results_only() -> None:
    importance = FeatureImportance({"f1": 0.75, "f0": 0.25}, "permutation")
    drift = CheckResult("drift.numeric", "f1")
    metric_named_like_a_feature = CheckResult("performance.overall", "f1")
    other = CheckResult("drift.numeric", "unused")
    attach_importance([drift, metric_named_like_a_feature, other], importance)
    assert drift.details["importance"] == {"share": 0.75, "rank": 1, "of": 2, "method": "permutation"}
    assert "importance" not in metric_named_like_a_feature.details and "importance" not in other.details
