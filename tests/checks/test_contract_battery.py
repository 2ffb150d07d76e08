"""The contract battery can fail: a small sound check passes it, and each copy of that check with one
defect fails exactly the case that catches the defect, with a message naming the check and the case."""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import NotApplicable
from driftline.checks.result import CheckResult
from driftline.checks.testing import assert_same, check_contract, contract_cases


@dataclass(frozen=True)
class Sums:
    """Rows, finite values and their sum: partitions add up."""

    rows: int
    n: int
    total: float

    def __add__(self, other: Sums) -> Sums:
        return Sums(self.rows + other.rows, self.n + other.n, self.total + other.total)


@dataclass(kw_only=True)
class MeanShift(Check):
    """Shift of the first numeric feature's mean from the reference's, in reference standard deviations."""

    name: ClassVar[str] = "test.mean_shift"
    family: ClassVar[str] = "test"
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})
    declared_metrics: ClassVar[dict[str, Metric]] = {"shift": Metric(thresholds=(0.5, 1.0, 2.0))}
    mergeable: ClassVar[bool] = True

    def values(self, frame: pd.DataFrame, columns: Columns) -> np.ndarray:
        values = pd.to_numeric(frame[columns.numeric[0]], errors="coerce").to_numpy(dtype=float)
        return values[np.isfinite(values)]

    def fit(self, reference: pd.DataFrame, columns: Columns) -> Any:
        values = self.values(reference, columns)
        return float(values.mean()), float(values.std())

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        return self.finish(self.partial(current, profile, columns), profile, columns)

    def merge_limit(self) -> str | None:
        return None

    def partial(self, current: pd.DataFrame, profile: Any, columns: Columns) -> Sums:
        values = self.values(current, columns)
        return Sums(len(current), len(values), float(values.sum()))

    def merge(self, states: list[Sums]) -> Sums:
        return functools.reduce(operator.add, states)

    def finish(self, state: Sums, profile: Any, columns: Columns) -> list[CheckResult]:
        if state.n == 0:
            raise NotApplicable("no finite value in the batch")
        mean, std = profile[:2]
        return [self.result("*", {"shift": abs(state.total / state.n - mean) / std}, rows=state.rows)]


@dataclass(kw_only=True)
class MutatesBatch(MeanShift):
    """Writes a column into the batch it evaluates."""

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        current["seen"] = True
        return super().evaluate(current, profile, columns)


@dataclass(kw_only=True)
class DependsOnRowOrder(MeanShift):
    """Measures the first fifty rows only, which rows those are depending on the batch's order."""

    def values(self, frame: pd.DataFrame, columns: Columns) -> np.ndarray:
        return super().values(frame, columns)[:50]


@dataclass(kw_only=True)
class KeyErrorOnMissingColumn(MeanShift):
    """Needs no role, so the runner lets a batch without its column through to a KeyError."""

    needs: ClassVar[frozenset[str]] = frozenset()


@dataclass(kw_only=True)
class UnstorableProfile(MeanShift):
    """Keeps a lambda in its profile."""

    def fit(self, reference: pd.DataFrame, columns: Columns) -> Any:
        mean, std = super().fit(reference, columns)
        return mean, std, lambda v: (v - mean) / std


@dataclass(kw_only=True)
class NoReasonOnError(MeanShift):
    """Marks a batch without values as an error by flipping the status, giving no reason."""

    def finish(self, state: Sums, profile: Any, columns: Columns) -> list[CheckResult]:
        if state.n:
            return super().finish(state, profile, columns)
        result = self.result("*", {}, rows=state.rows)
        result.status = "error"
        return [result]


@dataclass(kw_only=True)
class MergesWrongly(MeanShift):
    """Merges by keeping the first partition's state."""

    def merge(self, states: list[Sums]) -> Sums:
        return states[0]


@dataclass(kw_only=True)
class ThresholdsDescending(MeanShift):
    """Declares a higher-is-worse metric with descending thresholds."""

    declared_metrics: ClassVar[dict[str, Metric]] = {"shift": Metric(thresholds=(2.0, 1.0, 0.5))}


def failing_cases(check: Check | type[Check]) -> set[str]:
    """The names of the cases the check fails."""
    failed = set()
    for case in contract_cases(check):
        try:
            case.run()
        except AssertionError:
            failed.add(case.name)
    return failed


def test_a_sound_check_passes_every_case_merge_included() -> None:
    assert "merge" in {c.name for c in contract_cases(MeanShift)}
    check_contract(MeanShift)
    check_contract(MeanShift(thresholds={"shift": [0.2, 0.4]}))


@pytest.mark.parametrize(
    ("check", "case", "says", "also"),
    [
        pytest.param(MutatesBatch, "inputs_unmodified", "the batch was modified", set(), id="mutates"),
        # Partitions start at other rows too.
        pytest.param(DependsOnRowOrder, "row_order", "valid batch shuffled (seed 1)", {"merge"}, id="order"),
        # That case evaluates a batch without the column as well.
        pytest.param(
            KeyErrorOnMissingColumn, "missing_columns", "KeyError: 'x1'", {"inputs_unmodified"}, id="keyerror"
        ),
        pytest.param(
            UnstorableProfile,
            "stored_profile",
            "cannot store a value of type builtins.function",
            set(),
            id="unstorable",
        ),
        pytest.param(
            NoReasonOnError, "all_nan_column", "status 'error' without a reason", set(), id="reason"
        ),
        pytest.param(MergesWrongly, "merge", "valid batch in partitions", set(), id="merge"),
        pytest.param(
            ThresholdsDescending,
            "metadata",
            "thresholds.shift [2.0, 1.0, 0.5] must be ascending",
            set(),
            id="meta",
        ),
        pytest.param(
            MeanShift(thresholds={"shift": [0.4, 0.2]}),
            "metadata",
            "[0.4, 0.2] must be ascending",
            set(),
            id="conf",
        ),
    ],
)
def test_a_broken_check_fails_the_case_that_catches_it(
    check: Any, case: str, says: str, also: set[str]
) -> None:
    assert failing_cases(check) == {case, *also}
    with pytest.raises(AssertionError) as raised:
        check_contract(check)
    lines = str(raised.value).splitlines()
    assert lines[0] == f"{1 + len(also)} contract case(s) failed:"
    assert any(line.startswith(f"test.mean_shift: case {case!r}: ") and says in line for line in lines)


def test_every_failing_case_is_reported_together() -> None:
    @dataclass(kw_only=True)
    class TwoDefects(UnstorableProfile, DependsOnRowOrder):
        """A profile the cache cannot store, and order-dependent values."""

    with pytest.raises(AssertionError, match=r"^3 contract case\(s\) failed") as raised:
        check_contract(TwoDefects)
    for case in ("row_order", "stored_profile", "merge"):
        assert f"test.mean_shift: case {case!r}: " in str(raised.value)


def test_the_merge_case_is_only_for_checks_that_merge_as_configured() -> None:
    @dataclass(kw_only=True)
    class MergeLimited(MeanShift):
        """Declares this configuration unmergeable."""

        def merge_limit(self) -> str | None:
            return "needs every value"

    assert [c.name for c in contract_cases(MergeLimited)] == [c.name for c in contract_cases(MeanShift)][:-1]
    assert contract_cases(MeanShift)[-1].name == "merge"


@pytest.mark.parametrize(
    ("actual", "expected", "same"),
    [
        ({"rows": 3, "psi": 0.25}, {"rows": 3, "psi": 0.25 * (1 + 5e-10)}, True),
        ({"psi": 0.25}, {"psi": 0.25 * (1 + 5e-9)}, False),
        ({"rows": 3}, {"rows": 4}, False),
        ({"psi": math.nan}, {"psi": math.nan}, True),
        ({"psi": None}, {"psi": 0.0}, False),
        ({"psi": 0.0}, {"psi": None}, False),
        ({"ids": [1, 2]}, {"ids": [2, 1]}, False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("high", "medium", False),
    ],
)
def test_assert_same_compares_counts_exactly_and_floats_within_1e9(
    actual: Any, expected: Any, same: bool
) -> None:
    if same:
        assert_same(actual, expected)
    else:
        with pytest.raises(AssertionError):
            assert_same(actual, expected)
