"""Empty strings, capitalization variants and required characters against the document's examples."""

from __future__ import annotations

import pandas as pd
import pytest

from driftline.checks.abnormal_strings import Capitalization, EmptyString, RequiredCharacters
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.golden import golden_cases

COLUMNS = Columns(categorical=("c",))


def flagged(check, reference: list, batch: list, dtype: str | None = None) -> list:
    """Batch values the check fails, read back through the failing ids (the index)."""
    current = pd.DataFrame({"c": pd.Series(batch, dtype=dtype)})
    (result,) = check.run(pd.DataFrame({"c": pd.Series(reference, dtype=dtype)}), current, COLUMNS)
    assert result.status == "ok", result.reason
    return current["c"].loc[result.details["failing_ids"]].tolist()


@pytest.mark.parametrize("dtype", [None, "category", "object"])
def test_empty_strings_fail_where_the_reference_has_nulls(dtype: str | None) -> None:
    reference = ["Ann", None, "Bob", "Cy"]
    batch = ["Ann", "", None, "", "Dee"]
    assert flagged(EmptyString(), reference, batch, dtype) == ["", ""]


def test_empty_string_result_metrics() -> None:
    reference = pd.DataFrame({"c": ["Ann", None, "Bob", None]})
    current = pd.DataFrame({"c": ["Ann", "", None, "", "Dee"]})
    (result,) = EmptyString().run(reference, current, COLUMNS)
    assert result.failing_rows == 2 and result.rows == 4
    assert result.metrics["failing_share"] == pytest.approx(0.5)
    assert result.details["reference_null_rate"] == pytest.approx(0.5)


def test_empty_string_skips_features_without_reference_nulls() -> None:
    frame = pd.DataFrame({"c": ["Ann", "Bob"] * 5})
    (result,) = run_check(EmptyString(), frame, COLUMNS, reference=frame, strict=True)
    assert result.status == "skipped" and "nulls" in result.reason


@pytest.mark.parametrize("case", golden_cases("capitalization"), ids=lambda c: c["id"])
@pytest.mark.parametrize("dtype", [None, "category"])
def test_capitalization_golden(case: dict, dtype: str | None) -> None:
    inputs = case["inputs"]
    assert flagged(Capitalization(), inputs["ref_values"], inputs["eval_values"], dtype) == case["expected"]


def test_capitalization_ignores_seen_variants_and_unrelated_values() -> None:
    reference = ["USA", "usa", "Canada"]
    batch = ["usa", "USA", "Usa", "CANADA", "Mexico", "mexico", None]
    assert flagged(Capitalization(), reference, batch) == ["Usa", "CANADA"]


def test_capitalization_on_a_numeric_batch_is_an_error_naming_the_column() -> None:
    reference = pd.DataFrame({"c": ["USA", "Canada"]})
    (result,) = Capitalization().run(reference, pd.DataFrame({"c": [1, 2]}), COLUMNS)
    assert result.status == "error" and "'c'" in result.reason


@pytest.mark.parametrize("case", golden_cases("required_chars"), ids=lambda c: c["id"])
def test_required_characters_golden(case: dict) -> None:
    inputs = case["inputs"]
    reference = ["ann@example", "bob@host", "c@d"]
    profile = RequiredCharacters().fit(pd.DataFrame({"c": reference}), COLUMNS)
    assert profile["targets"]["c"]["required"] == list(inputs["required"])
    assert flagged(RequiredCharacters(), reference, inputs["values"]) == case["expected"]


def test_required_characters_are_those_in_every_reference_value() -> None:
    reference = pd.DataFrame({"c": ["a-b/c", "d/e-f", "g-h/i/j", None]})
    profile = RequiredCharacters().fit(reference, COLUMNS)
    assert profile["targets"]["c"]["required"] == ["-", "/"]
    assert flagged(RequiredCharacters(), reference["c"].tolist(), ["x-y", "x/y", "xy", ""]) == ["xy", ""]


def test_letters_are_required_only_when_asked() -> None:
    reference = pd.DataFrame({"c": ["USA", "FRA"]})
    assert RequiredCharacters().fit(reference, COLUMNS)["targets"] == {}
    profile = RequiredCharacters(symbols_only=False).fit(reference, COLUMNS)
    assert profile["targets"]["c"]["required"] == ["A"]
    assert flagged(RequiredCharacters(symbols_only=False), ["USA", "FRA"], ["usa", "ITA", "DEU"]) == [
        "usa",
        "DEU",
    ]


def test_non_string_features_are_not_string_targets() -> None:
    frame = pd.DataFrame({"c": [1, 2, 3]})
    for check in (Capitalization(), RequiredCharacters()):
        (result,) = run_check(check, frame, COLUMNS, reference=frame, strict=True)
        assert result.status == "skipped"


def test_all_null_reference_columns_are_not_string_targets() -> None:
    reference = pd.DataFrame({"c": [None, None], "d": ["a-b", None]})
    columns = Columns(categorical=("c", "d"))
    for check in (EmptyString(), Capitalization(), RequiredCharacters()):
        assert list(check.fit(reference, columns)["targets"]) == ["d"]
