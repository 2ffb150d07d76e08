"""The safe runner (skips, errors, strict mode), the registry's errors and the schema check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.runner import run_check
from driftline.checks.schema import SchemaCheck


@dataclass(kw_only=True)
class Exploding(Check):
    """Raises whatever it is told to (not registered)."""

    name: ClassVar[str] = "test.exploding"
    family: ClassVar[str] = "test"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    error: type[Exception] = ZeroDivisionError

    def fit(self, reference, columns):
        return None

    def evaluate(self, current, profile, columns):
        raise self.error("boom on column x")


FRAME = pd.DataFrame({"x": [1.0, 2.0, 3.0], "label": [0, 1, 0]})
COLS = Columns(label="label", numeric=("x",))


@pytest.mark.parametrize(
    ("error", "status"),
    [(CheckInputError, "error"), (NotApplicable, "skipped"), (ZeroDivisionError, "error")],
)
def test_exceptions_become_results(error, status) -> None:
    [result] = run_check(Exploding(error=error), FRAME, COLS, reference=FRAME)
    assert result.status == status and "boom on column x" in result.reason


def test_strict_mode_reraises_unexpected_exceptions() -> None:
    with pytest.raises(ZeroDivisionError):
        run_check(Exploding(), FRAME, COLS, reference=FRAME, strict=True)
    [result] = run_check(Exploding(error=CheckInputError), FRAME, COLS, reference=FRAME, strict=True)
    assert result.status == "error"


def test_missing_role_and_missing_column() -> None:
    [skipped] = run_check(Exploding(), FRAME, Columns(numeric=("x",)), reference=FRAME)
    assert skipped.status == "skipped" and "no label column" in skipped.reason
    [error] = run_check(Exploding(), FRAME.drop(columns="label"), COLS, reference=FRAME)
    assert error.status == "error" and "batch has no column(s) ['label']" in error.reason


def test_empty_reference_and_no_reference() -> None:
    [r] = run_check(Exploding(), FRAME, COLS, reference=FRAME.iloc[:0])
    assert r.status == "error" and "reference is empty" in r.reason
    [r] = run_check(Exploding(), FRAME, COLS)
    assert r.status == "error" and "no reference" in r.reason


def test_registry_errors_name_the_problem() -> None:
    with pytest.raises(CheckInputError, match=r"did you mean schema\.columns"):
        registry.create("schema.column")
    with pytest.raises(CheckInputError, match=r"unknown parameter\(s\) \['bogus'\]"):
        registry.create("schema.columns", {"bogus": 1})
    with pytest.raises(CheckInputError, match="no threshold for metric"):
        registry.create("schema.columns", {"thresholds": {"psi": [0.1]}})


def test_schema_check_finds_missing_extra_and_changed_columns() -> None:
    reference = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5], "d": [1, 2]})
    current = pd.DataFrame(
        {"a": [1.5, 2.5], "b": pd.Categorical(["x", "z"]), "c": ["0.5", "oops"], "e": [1, 2]}
    )
    results = SchemaCheck().run(reference, current, infer_columns(reference))
    by_target = {r.target: r for r in results}
    assert by_target["*"].severity == "high"
    assert by_target["*"].metrics == {
        "missing_columns": 1.0,
        "changed_kinds": 1.0,
        "extra_columns": 1.0,
        "out_of_domain": 0.0,
    }
    assert by_target["d"].details["problem"] == "missing from the batch"
    assert by_target["c"].details == {
        "problem": "values changed from numeric to categorical (dtype str)",
        "expected": "numeric",
        "found": "categorical",
    }
    assert by_target["e"].severity == "low"
    assert "a" not in by_target and "b" not in by_target  # int->float and str->category are the same kind


def test_schema_check_passes_identical_frames() -> None:
    [summary] = SchemaCheck().run(FRAME, FRAME, COLS)
    assert summary.severity == "none" and summary.metrics["missing_columns"] == 0
