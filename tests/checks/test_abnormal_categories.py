"""Rare categories and unseen values (categorical, URL, domain, e-mail) against the document's examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftline.checks.abnormal_categories import (
    RareCategories,
    UnseenCategorical,
    UnseenDomain,
    UnseenEmail,
    UnseenURL,
    rare_mask,
)
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.golden import golden_cases

COLUMNS = Columns(categorical=("c",))


def flagged(check, reference: list, batch: list, dtype: str | None = None) -> list:
    """Batch values the check fails, read back through the failing ids (the index)."""
    current = pd.DataFrame({"c": pd.Series(batch, dtype=dtype)})
    (result,) = check.run(pd.DataFrame({"c": pd.Series(reference, dtype=dtype)}), current, COLUMNS)
    return current["c"].loc[result.details["failing_ids"]].tolist()


@pytest.mark.parametrize("case", golden_cases("rare_categories"), ids=lambda c: c["id"])
def test_rare_categories_golden(case: dict) -> None:
    inputs = case["inputs"]
    counts = inputs["counts"]
    reference = [value for value, count in counts.items() for _ in range(count)]
    check = RareCategories(
        min_num_occurrences=inputs["min_num_occurrences"], min_pct_occurrences=inputs["min_pct_occurrences"]
    )
    profile = check.fit(pd.DataFrame({"c": reference}), COLUMNS)
    assert list(profile["targets"]["c"]["rare"]) == case["expected"]
    batch = ["35-55", "0-18", "35-55", "0-18", None]
    assert flagged(check, reference, batch) == ["0-18", "0-18"]


def test_rare_rules_apply_separately_and_strictly() -> None:
    counts = np.array([2, 3, 95])
    # Count rule alone: 2 < 3 is rare, 3 < 3 is not.
    assert rare_mask(counts, 3, None, 0.1).tolist() == [True, False, False]
    # Share rule alone: 0.03 is not below 0.03, 0.02 is.
    assert rare_mask(counts, None, 0.03, 0.1).tolist() == [True, False, False]
    # Either rule flags a category.
    assert rare_mask(counts, 1, 0.03, 0.1).tolist() == [True, False, False]
    assert rare_mask(counts, 4, 0.0, 0.1).tolist() == [True, True, False]


def test_rare_fallback_is_ratio_over_number_of_classes() -> None:
    # Four classes: rare below 0.1 / 4 = 0.025 of the rows.
    counts = np.array([50, 45, 4, 1])
    assert rare_mask(counts, None, None, 0.1).tolist() == [False, False, False, True]
    assert rare_mask(counts, None, None, 0.2).tolist() == [False, False, True, True]
    reference = ["a"] * 50 + ["b"] * 45 + ["c"] * 4 + ["d"]
    assert flagged(RareCategories(), reference, ["d", "c", "a", "e"]) == ["d"]


def test_rare_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="min_pct_occurrences"):
        RareCategories(min_pct_occurrences=3)
    with pytest.raises(ValueError, match="min_num_occurrences"):
        RareCategories(min_num_occurrences=-1)


@pytest.mark.parametrize("case", golden_cases("unseen_values"), ids=lambda c: c["id"])
@pytest.mark.parametrize("dtype", [None, "category"])
def test_unseen_categorical_golden(case: dict, dtype: str | None) -> None:
    inputs = case["inputs"]
    assert (
        flagged(UnseenCategorical(), inputs["ref_values"], inputs["eval_values"], dtype) == case["expected"]
    )


def test_unseen_categorical_result_details() -> None:
    reference = pd.DataFrame({"c": ["Cat", "Dog", None, "Cat"]})
    current = pd.DataFrame({"c": ["Mouse", "Cat", None, "Mouse", "Owl", "Dog"]})
    (result,) = UnseenCategorical().run(reference, current, COLUMNS)
    assert result.failing_rows == 3 and result.rows == 5 and result.details["dropped_rows"] == 1
    assert result.metrics["failing_share"] == pytest.approx(3 / 5)
    assert result.details["top_failing_values"] == [["Mouse", 2], ["Owl", 1]]
    assert result.details["reference_values"] == 2


def test_batch_of_another_dtype_is_all_unseen() -> None:
    assert flagged(UnseenCategorical(), ["1", "2"], [1, 2]) == [1, 2]


DOC_EXAMPLES = [
    (UnseenURL, ["http://google.com", "http://yahoo.com"], "http://xyzabc.com"),
    (UnseenDomain, ["gmail.com", "hotmail.com"], "xyzabc.com"),
    (UnseenEmail, ["ann@gmail.com", "bob@hotmail.com"], "eve@xyzabc.com"),
]


@pytest.mark.parametrize(("check_class", "reference", "unseen"), DOC_EXAMPLES)
def test_unseen_pattern_document_examples(check_class, reference: list[str], unseen: str) -> None:
    assert flagged(check_class(), reference, [reference[0], unseen, reference[1]]) == [unseen]


def test_pattern_columns_are_inferred_from_the_reference() -> None:
    reference = pd.DataFrame(
        {
            "url": ["https://a.org/x?q=1", "ftp://files.example.com/f", "http://b.io"],
            "domain": ["gmail.com", "mail.example.co.uk", "x-y.io"],
            "email": ["a.b@c.com", "first+tag@sub.example.org", "z@y.fr"],
            "word": ["USA", "FRA", "DEU"],
            "number": ["3.14", "2.71", "1.41"],
        }
    )
    columns = Columns(categorical=tuple(reference.columns))
    for check_class, column in ((UnseenURL, "url"), (UnseenDomain, "domain"), (UnseenEmail, "email")):
        assert list(check_class().fit(reference, columns)["targets"]) == [column]


def test_pattern_share_threshold() -> None:
    # 9 of 10 distinct values are e-mail addresses: enough with 0.9, not with 0.95.
    values = [f"user{i}@example.com" for i in range(9)] + ["not an address"]
    reference = pd.DataFrame({"c": values})
    assert list(UnseenEmail().fit(reference, COLUMNS)["targets"]) == ["c"]
    assert UnseenEmail(min_match_share=0.95).fit(reference, COLUMNS)["targets"] == {}
    # Only the first `sample_size` distinct values are looked at.
    assert UnseenEmail(sample_size=9, min_match_share=1.0).fit(reference, COLUMNS)["targets"] != {}


def test_no_pattern_column_is_skipped_with_a_reason() -> None:
    frame = pd.DataFrame({"c": ["USA", "FRA"]})
    (result,) = run_check(UnseenURL(), frame, COLUMNS, reference=frame, strict=True)
    assert result.status == "skipped" and "url" in result.reason


def test_unused_categories_are_not_part_of_the_vocabulary() -> None:
    dtype = pd.CategoricalDtype(["Cat", "Dog", "Mouse"])
    reference = pd.DataFrame({"c": pd.Series(["Cat", "Dog"], dtype=dtype)})
    current = pd.DataFrame({"c": pd.Series(["Mouse", "Cat"], dtype=dtype)})
    (result,) = UnseenCategorical().run(reference, current, COLUMNS)
    assert result.failing_rows == 1 and result.details["failing_ids"] == [0]


def test_all_null_reference_columns_are_not_pattern_targets_but_are_reported_as_categorical() -> None:
    reference = pd.DataFrame({"c": [None, None]})
    assert UnseenEmail().fit(reference, COLUMNS) == {"targets": {}, "issues": {}}
    (result,) = UnseenCategorical().run(reference, pd.DataFrame({"c": ["a"]}), COLUMNS)
    assert result.status == "skipped" and "'c'" in result.reason
