"""Inconsistent value pairs: the document's threshold, Cramér's V against scipy, flags against a loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency
from scipy.stats.contingency import association

from driftline.checks.abnormal_pairs import Inconsistencies, cramers_v, inconsistent_cells
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.golden import golden_cases

PAIR = Columns(categorical=("country", "tz"))


def country_reference(together: int) -> pd.DataFrame:
    """1000 rows: country US with frequency 0.5, tz CET with 0.2, (US, CET) seen `together` times."""
    cells = {("US", "CET"): together, ("DE", "CET"): 200 - together}
    cells |= {("US", "EST"): 500 - together, ("DE", "EST"): 300 + together}
    rows = [pair for pair, count in cells.items() for _ in range(count)]
    return pd.DataFrame(rows, columns=["country", "tz"])


BATCH = pd.DataFrame({"country": ["US", "DE", "US", "DE"], "tz": ["CET", "CET", "EST", "EST"]})


@pytest.mark.parametrize("case", golden_cases("inconsistency"), ids=lambda c: c["id"])
def test_inconsistency_golden(case: dict) -> None:
    inputs, expected = case["inputs"], case["expected"]
    assert inputs["freq_a"] * inputs["freq_b"] * inputs["ratio"] == pytest.approx(expected["threshold"])
    for joint, flag in zip(inputs["joint_freqs"], expected["flagged"], strict=True):
        reference = country_reference(round(joint * 1000))
        (result,) = Inconsistencies(ratio=inputs["ratio"]).run(reference, BATCH, PAIR)
        assert result.target == "country|tz"
        assert result.details["failing_ids"] == ([0] if flag else [])


def test_inconsistent_cells_threshold_is_strict() -> None:
    # freq_a = 0.5, freq_b = 0.2, ratio 0.02: threshold 0.002 of 1000 rows = 2 rows.
    for together, flag in ((1, True), (2, False), (3, False)):
        table = pd.crosstab(*country_reference(together).T.to_numpy()).to_numpy()
        cells = inconsistent_cells(table, 0.02)
        assert cells.sum() == flag  # only (US, CET) can fall below its threshold


def bergsma_v(table: np.ndarray) -> float:
    """Bias-corrected Cramér's V from scipy's chi-square statistic."""
    n = table.sum()
    r, c = table.shape
    phi2 = chi2_contingency(table, correction=False).statistic / n
    phi2 = max(0.0, phi2 - (r - 1) * (c - 1) / (n - 1))
    return np.sqrt(phi2 / min(r - (r - 1) ** 2 / (n - 1) - 1, c - (c - 1) ** 2 / (n - 1) - 1))


@pytest.mark.parametrize("seed", [0, 1])
def test_cramers_v_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.integers(1, 60, size=(4, 3)) + np.diag([200, 150, 100, 0])[:, :3]
    assert cramers_v(table) == pytest.approx(bergsma_v(table), rel=1e-12)
    # For a large table the correction vanishes and V is scipy's plain Cramér's V.
    big = table * 100_000
    assert cramers_v(big) == pytest.approx(association(big, method="cramer"), rel=1e-4)


def test_cramers_v_undefined_cases() -> None:
    assert np.isnan(cramers_v(np.array([[5, 0], [0, 0]])))
    assert np.isnan(cramers_v(np.array([[1]])))


def associated_frame(n: int, seed: int) -> pd.DataFrame:
    """Two associated categorical columns (b mostly follows a) and one independent column."""
    rng = np.random.default_rng(seed)
    a = rng.choice(list("pqrs"), size=n, p=[0.4, 0.3, 0.2, 0.1])
    follow = {"p": "w", "q": "x", "r": "y", "s": "z"}
    b = np.where(rng.random(n) < 0.97, [follow[v] for v in a], rng.choice(list("wxyz"), size=n))
    return pd.DataFrame({"a": a, "b": b, "noise": rng.choice(list("klm"), size=n)})


def test_flags_match_a_row_by_row_computation() -> None:
    reference, current = associated_frame(20_000, 0), associated_frame(5_000, 1)
    columns = Columns(categorical=("a", "b", "noise"))
    (result,) = Inconsistencies().run(reference, current, columns)
    assert result.target == "a|b"
    joint = reference.value_counts(["a", "b"], normalize=True).to_dict()
    freq_a = reference["a"].value_counts(normalize=True).to_dict()
    freq_b = reference["b"].value_counts(normalize=True).to_dict()
    expected = [
        i
        for i, (a, b) in enumerate(zip(current["a"], current["b"], strict=True))
        if joint.get((a, b), 0.0) < freq_a[a] * freq_b[b] * 0.02
    ]
    assert result.details["failing_ids"] == expected[:100]
    assert result.failing_rows == len(expected) > 0
    assert result.details["association"] == pytest.approx(
        bergsma_v(pd.crosstab(reference["a"], reference["b"]).to_numpy())
    )


def test_unseen_values_and_nulls_are_not_judged() -> None:
    reference = country_reference(1)
    current = pd.DataFrame({"country": ["US", "FR", None, "US"], "tz": ["CET", "CET", "CET", None]})
    (result,) = Inconsistencies().run(reference, current, PAIR)
    assert result.failing_rows == 1 and result.rows == 2
    assert result.details["unjudged_rows"] == 1 and result.details["dropped_rows"] == 2
    assert result.details["top_failing_pairs"] == [["US", "CET", 1]]


def test_unassociated_features_are_skipped_with_a_reason() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"country": rng.choice(["US", "DE"], 4000), "tz": rng.choice(["CET", "EST"], 4000)})
    (result,) = run_check(Inconsistencies(), frame, PAIR, reference=frame, strict=True)
    assert result.status == "skipped" and "Cramér's V" in result.reason


def test_high_cardinality_features_are_left_out() -> None:
    reference = country_reference(1)
    assert Inconsistencies(max_categories=2).fit(reference, PAIR)["targets"]
    reference.loc[0, "country"] = "FR"
    assert not Inconsistencies(max_categories=2).fit(reference, PAIR)["targets"]


def test_missing_batch_column_is_an_error_naming_it() -> None:
    (result,) = Inconsistencies().run(country_reference(1), BATCH.drop(columns="tz"), PAIR)
    assert result.status == "error" and "'tz'" in result.reason


def test_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="ratio"):
        Inconsistencies(ratio=0)
