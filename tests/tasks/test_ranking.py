"""The one order of results: severity, model-level before feature-level, then the feature's importance."""

from __future__ import annotations

import sys
from typing import Any

from driftline.checks import registry
from driftline.tasks.views.ranking import importance_text, model_level, ranked, stored_importance


def result(
    check: str, target: str, severity: str, share: float | None = None, status: str = "ok"
) -> dict[str, Any]:
    details = (
        {}
        if share is None
        else {"importance": {"share": share, "rank": 0, "of": 21, "method": "permutation"}}
    )
    return {"check": check, "target": target, "status": status, "severity": severity, "details": details}


def test_prediction_drift_and_performance_come_before_sixteen_drifted_features() -> None:
    """Sixteen high drift.numeric results in column order, then the model-level ones: the model-level
    results of each severity come first, the features by importance, those without one last."""
    shares = {f"X{i}": (i + 1) / 200 for i in range(15)}  # X14 matters most
    features = [result("drift.numeric", name, "high", share) for name, share in shares.items()]
    features.append(result("drift.numeric", "ID", "high"))  # not a model feature: no importance
    results = [
        *features,
        result("drift.prediction", "score", "high"),
        result("performance.estimated", "roc_auc", "medium"),
        result("abnormal.out_of_range", "X3", "medium", shares["X3"]),
        result("fairness.statistical_parity", "SEX", "high"),
        result("drift.numeric", "X0", "none", shares["X0"]),
        result("subset.auc", "X1", "error", status="error"),
    ]
    order = [(r["check"], r["target"]) for r in ranked(results)]
    assert order[:2] == [("drift.prediction", "score"), ("fairness.statistical_parity", "SEX")]
    assert [t for c, t in order[2:18]] == [f"X{i}" for i in range(14, -1, -1)] + ["ID"]
    assert order[18:] == [
        ("performance.estimated", "roc_auc"),
        ("abnormal.out_of_range", "X3"),
        ("drift.numeric", "X0"),
        ("subset.auc", "X1"),
    ]


def test_ranking_is_stable_and_reads_items_through_result_of() -> None:
    items = [("a", result("drift.numeric", "x", "low")), ("b", result("drift.numeric", "y", "low"))]
    assert [name for name, _ in ranked(items, lambda item: item[1])] == ["a", "b"]


def test_model_level_checks() -> None:
    assert (
        model_level("drift.prediction") and model_level("drift.label") and model_level("performance.overall")
    )
    assert model_level("fairness.tpr") and model_level("performance.estimated")
    # A name no class declares is read as an input-level check, whatever its prefix.
    assert not model_level("performance.never_registered")
    assert (
        not model_level("drift.numeric")
        and not model_level("abnormal.nulls")
        and not model_level("subset.auc")
    )


def test_a_stored_check_name_that_looks_like_code_is_never_imported() -> None:
    assert registry.known("tests_never_imported_module:Check") is None
    assert "tests_never_imported_module" not in sys.modules
    assert registry.known("drift.numeric") is not None and registry.known("no.such_check") is None


def test_stored_importance_is_read_and_shown_only_when_well_formed() -> None:
    good = {"details": {"importance": {"share": 0.3141, "rank": 1, "of": 21, "method": "permutation"}}}
    assert stored_importance(good) == {"share": 0.3141, "rank": 1, "of": 21}
    assert importance_text(good) == "importance 31.4% (rank 1 of 21)"
    for bad in ({"share": "x", "rank": 1, "of": 2}, {"share": float("nan"), "rank": 1, "of": 2}, "0.3", None):
        assert stored_importance({"details": {"importance": bad}}) is None
    assert importance_text({"details": {}}) == ""
