"""A custom check says what its results are about (`Check.role`), and every view reads that: one
declared as output drift is ranked with the model's outputs, ahead of features; the same check
declaring nothing is ranked as a feature."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
import pytest

from driftline.checks import Check, CheckResult, Columns, registry
from driftline.checks.base import Metric
from driftline.checks.catalog_index import CATALOG
from driftline.tasks.ranking import model_level, ranked


@dataclass(kw_only=True)
class ScoreShift(Check):
    """Shift of the model's scores against the reference's, declared as output drift."""

    name: ClassVar[str] = "business.score_shift"
    family: ClassVar[str] = "business"
    role: ClassVar[str] = "output_drift"
    declared_metrics: ClassVar[dict[str, Metric]] = {"shift": Metric((0.1, 0.2, 0.3))}

    def fit(self, reference: pd.DataFrame, columns: Columns) -> Any:
        return None

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        return []


@dataclass(kw_only=True)
class UndeclaredShift(ScoreShift):
    """The same check declaring no role."""

    name: ClassVar[str] = "business.undeclared_shift"
    role: ClassVar[str] = "other"


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    """The two classes registered as a spec would register them, and taken out again."""
    classes = (ScoreShift, UndeclaredShift)
    for cls in classes:
        registry.register(cls)
    yield
    for cls in classes:
        registry._REGISTRY.pop(cls.name, None)


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

        @dataclass(kw_only=True)
        class Misdeclared(ScoreShift):
            role: ClassVar[str] = "output"


def test_an_estimate_names_what_it_estimates() -> None:
    with pytest.raises(TypeError, match="names the check it `estimates`"):

        @dataclass(kw_only=True)
        class Unanchored(ScoreShift):
            role: ClassVar[str] = "estimate"


def test_thresholds_declared_outside_declared_metrics_are_refused() -> None:
    with pytest.raises(TypeError, match="declare metrics in `declared_metrics`, not default_thresholds"):

        @dataclass(kw_only=True)
        class OldStyle(ScoreShift):
            default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {"shift": (0.1,)}


def test_every_catalog_check_declares_a_role() -> None:
    undeclared = [name for name in CATALOG if registry.get(name).role == "other"]
    assert undeclared == []
