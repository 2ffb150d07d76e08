"""A custom check says what its results are about (`Check.role`), and every view reads that: one
declared as output drift is ranked with the model's outputs, ahead of features; the same check
declaring nothing is ranked as a feature."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from driftline.checks import registry
from driftline.checks.catalog_index import CATALOG
from driftline.tasks.views.ranking import model_level, ranked
from tests.declared_checks import declared, registered


@pytest.fixture(autouse=True)
def two_checks() -> Iterator[None]:
    """A custom check declared as output drift, and the same check declaring no role."""
    with registered(declared("business.score_shift", "output_drift"), declared("business.undeclared_shift")):
        yield


def high(check: str, target: str, share: float | None = None) -> dict[str, Any]:
    importance = {} if share is None else {"importance": {"share": share, "rank": 1, "of": 3}}
    return {"check": check, "target": target, "status": "ok", "severity": "high", "details": importance}


def test_a_custom_output_drift_check_is_ranked_with_the_model_outputs() -> None:
    results = [
        high("drift.numeric", "AGEP", share=0.4),
        high("business.undeclared_shift", "score"),
        high("business.score_shift", "score"),
        high("drift.prediction", "prediction"),
    ]
    order = [r["check"] for r in ranked(results)]
    assert order == ["business.score_shift", "drift.prediction", "drift.numeric", "business.undeclared_shift"]
    assert model_level("business.score_shift") and not model_level("business.undeclared_shift")


def test_a_role_outside_the_declared_ones_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="role 'output' is not one of"):
        declared("business.misdeclared", "output")


def test_an_estimate_names_what_it_estimates() -> None:
    with pytest.raises(TypeError, match="names the check it `estimates`"):
        declared("business.unanchored", "estimate")


def test_thresholds_declared_outside_declared_metrics_are_refused() -> None:
    with pytest.raises(TypeError, match="declare metrics in `declared_metrics`, not default_thresholds"):
        type("OldStyle", (declared("business.old_style"),), {"default_thresholds": {"shift": (0.1,)}})


def test_every_catalog_check_declares_a_role() -> None:
    undeclared = [name for name in CATALOG if registry.get(name).role == "other"]
    assert undeclared == []
