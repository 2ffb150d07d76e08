"""Diagnoses of a target's likely cause: silent on clean resamples of real data (Adult, the ACS census),
right on real data broken the common ways, read from results as the history store gives them back."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from driftline.checks import registry
from driftline.checks.abnormal_values import MEDIAN_ACCURACY
from driftline.checks.columns import Columns
from driftline.checks.evidence import grade_results
from driftline.checks.runner import run_check
from driftline.data import ADULT_CATEGORICAL, ADULT_NUMERIC
from driftline.data.demo import DATA_FILE, aged_sample
from driftline.flows.cli import app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.query import latest_results
from driftline.tasks.history.store import record_run
from driftline.tasks.tools.safe_text import CONTROL
from driftline.tasks.views.diagnosis import (
    COLUMN_NULL,
    NEW_CATEGORY,
    SIGN_FLIP,
    UNIT_CHANGE,
    VALUE_CHARACTERS,
    changed_scale,
    column_gone_null,
    diagnose,
)

ADULT = Path(__file__).parents[2] / "data" / "adult" / "adult.parquet"
ADULT_COLUMNS = Columns(categorical=ADULT_CATEGORICAL, numeric=ADULT_NUMERIC)
CENSUS_COLUMNS = Columns(categorical=("SCHL", "MAR", "RELP", "CIT", "SEX", "RAC1P"), numeric=("AGEP",))
CHECKS = ("abnormal.nulls", "abnormal.out_of_range", "abnormal.unseen_categorical")
SIZES = (100, 300, 1000, 3000)
CLEAN_BATCHES = 20
UNSEEN_TAIL = ", never seen in the reference — a new category or an encoding change"


class Monitor:
    """The three checks fitted once on a reference; a batch's results graded together, as a run grades
    them, in the stored form (a JSON round trip of `CheckResult.to_dict()`)."""

    def __init__(self, reference: pd.DataFrame, columns: Columns) -> None:
        self.columns = columns
        self.fitted = [(c, c.fit(reference, columns)) for c in map(registry.create, CHECKS)]

    def results(self, batch: pd.DataFrame) -> list[dict]:
        results = [r for c, p in self.fitted for r in run_check(c, batch, self.columns, profile=p)]
        return json.loads(json.dumps([r.to_dict() for r in grade_results(results)]))


def halves(frame: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows split at random into a reference and a pool that batches are drawn from."""
    order = np.random.default_rng(seed).permutation(len(frame))
    half = len(frame) // 2
    return frame.iloc[order[:half]].reset_index(drop=True), frame.iloc[order[half:]].reset_index(drop=True)


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame, Monitor]:
    reference, pool = halves(pd.read_parquet(ADULT), seed=11)
    return reference, pool, Monitor(reference, ADULT_COLUMNS)


@pytest.fixture(scope="module")
def census() -> tuple[pd.DataFrame, pd.DataFrame, Monitor]:
    data = pd.read_parquet(DATA_FILE)
    reference, pool = halves(data[data["year"] == 2015], seed=12)
    return reference, pool, Monitor(reference, CENSUS_COLUMNS)


def percent(share: float) -> str:
    """A share as the lines show it, written out independently: whole percents from 10%."""
    return f"{round(100 * share)}%" if share >= 0.1 else f"{100 * share:.2g}%"


# --- clean batches --------------------------------------------------------------------------------


@pytest.mark.parametrize("data", ["adult", "census"])
def test_clean_batches_get_no_diagnosis(data: str, request: pytest.FixtureRequest) -> None:
    _, pool, monitor = request.getfixturevalue(data)
    rng = np.random.default_rng(13)
    for _ in range(CLEAN_BATCHES):
        batch = pool.iloc[rng.choice(len(pool), int(rng.choice(SIZES)), replace=False)]
        results = monitor.results(batch)
        assert diagnose(results) == []
        # Not only held back by the severity: the signatures of a fault do not fit clean data.
        for result in results:
            reader = {"abnormal.nulls": column_gone_null, "abnormal.out_of_range": changed_scale}
            if result["status"] == "ok" and result["check"] in reader:
                assert reader[result["check"]](result) is None


def test_a_population_shift_gets_no_diagnosis(census) -> None:
    """The demo's ageing batches (later survey years, older respondents drawn more often) shift the
    population: the checks may see it, but no fault's signature fits."""
    _, _, monitor = census
    data = pd.read_parquet(DATA_FILE)
    rng = np.random.default_rng(23)
    for year, strength in [(2017, 0.5), (2018, 1.0), (2018, 1.5)]:
        batch = aged_sample(data[data["year"] == year].reset_index(drop=True), strength, rng)
        assert diagnose(monitor.results(batch)) == []


# --- broken batches -------------------------------------------------------------------------------


def only(diagnoses: list, target: str, cause: str):
    """The single diagnosis, checked to be of `target` and `cause`."""
    assert [(d.target, d.cause) for d in diagnoses] == [(target, cause)]
    return diagnoses[0]


@pytest.mark.parametrize(
    ("column", "factor", "words"),
    [
        ("age", 0.1, "~10× smaller"),
        ("fnlwgt", 0.001, "~1000× smaller"),
        ("hours-per-week", 100, "~100× larger"),
    ],
)
@pytest.mark.parametrize("rows", [300, 2000])
def test_a_unit_change_is_named_with_its_power_of_ten(
    adult, column: str, factor: float, words: str, rows: int
):
    _, pool, monitor = adult
    batch = pool.sample(rows, random_state=14)
    batch = batch.assign(**{column: batch[column] * factor})
    diagnosis = only(diagnose(monitor.results(batch)), column, UNIT_CHANGE)
    assert diagnosis.line.startswith(f"{column}: all values {words} than the reference (median ")
    assert diagnosis.line.endswith(") — looks like a unit change")
    assert diagnosis.rests_on == ("abnormal.out_of_range",)


def test_ages_in_months_read_as_a_unit_change_with_both_medians(census) -> None:
    reference, pool, monitor = census
    batch = pool.sample(500, random_state=15)
    batch = batch.assign(AGEP=batch["AGEP"] * 12)
    diagnosis = only(diagnose(monitor.results(batch)), "AGEP", UNIT_CHANGE)
    # Twelve is within the tolerance of ten; the medians show the factor itself. Children under 8
    # stay within the reference's range of ages: "92% of values", not all.
    outside = (batch["AGEP"] > reference["AGEP"].max()).mean()
    shown = re.fullmatch(
        rf"AGEP: {percent(outside)} of values ~10× larger than the reference \(median (\S+) against (\S+)\)"
        " — looks like a unit change",
        diagnosis.line,
    )
    assert shown is not None
    lower_median = np.quantile(batch["AGEP"], 0.5, method="lower")
    assert float(shown[1]) == pytest.approx(lower_median, rel=MEDIAN_ACCURACY)
    assert float(shown[2]) == np.median(reference["AGEP"])


def test_a_sign_flip_is_named(adult) -> None:
    _, pool, monitor = adult
    batch = pool.sample(400, random_state=16)
    diagnosis = only(diagnose(monitor.results(batch.assign(age=-batch["age"]))), "age", SIGN_FLIP)
    assert diagnosis.line.startswith("age: all values of the opposite sign to the reference's (median -")


@pytest.mark.parametrize("rows", [100, 1500])
def test_a_column_gone_null_is_named_with_the_reference_share(adult, rows: int) -> None:
    reference, pool, monitor = adult
    batch = pool.sample(rows, random_state=17).assign(occupation=None)
    diagnosis = only(diagnose(monitor.results(batch)), "occupation", COLUMN_NULL)
    before = percent(reference["occupation"].isna().mean())
    assert (
        diagnosis.line
        == f"occupation: every value is null (reference {before}) — the column is no longer filled"
    )
    assert diagnosis.rests_on == ("abnormal.nulls",)


def test_a_new_category_is_named_with_its_share(census) -> None:
    _, pool, monitor = census
    batch = pool.sample(600, random_state=18)
    batch["MAR"] = batch["MAR"].astype(str).where(np.random.default_rng(18).random(600) >= 0.35, "9")
    share = (batch["MAR"] == "9").mean()
    diagnosis = only(diagnose(monitor.results(batch)), "MAR", NEW_CATEGORY)
    assert diagnosis.line == f"MAR: new value '9' in {percent(share)} of rows{UNSEEN_TAIL}"


def test_an_encoding_change_names_the_top_new_values(adult) -> None:
    _, pool, monitor = adult
    batch = pool.sample(800, random_state=19)
    batch["sex"] = batch["sex"].map({"Male": "male", "Female": "female"}).astype(str)
    shares = batch["sex"].value_counts(normalize=True)
    diagnosis = only(diagnose(monitor.results(batch)), "sex", NEW_CATEGORY)
    named = ", ".join(f"'{value}' in {percent(share)}" for value, share in shares.items())
    assert diagnosis.line == f"sex: new values {named} of rows{UNSEEN_TAIL}"


def test_many_rare_new_values_are_no_new_category(adult) -> None:
    """Unseen values spread over hundreds of distinct ones: a change, but no category to name."""
    _, pool, monitor = adult
    batch = pool.sample(600, random_state=20)
    batch["native-country"] = [f"place-{i}" for i in range(600)]
    results = monitor.results(batch)
    (unseen,) = [
        r for r in results if r["check"] == "abnormal.unseen_categorical" and r["target"] == "native-country"
    ]
    assert unseen["severity"] == "high"
    assert diagnose(results) == []


def test_one_line_per_target_nulls_first(adult) -> None:
    """Each broken target gets its own line; a target gone null is not also read as out of range."""
    _, pool, monitor = adult
    batch = pool.sample(1000, random_state=21)
    batch = batch.assign(fnlwgt=batch["fnlwgt"] / 1000, workclass=None)
    assert [(d.target, d.cause) for d in diagnose(monitor.results(batch))] == [
        ("fnlwgt", UNIT_CHANGE),
        ("workclass", COLUMN_NULL),
    ]


def test_the_stored_results_give_the_same_diagnoses(adult, tmp_path: Path) -> None:
    _, pool, monitor = adult
    batch = pool.sample(500, random_state=22)
    results = monitor.results(batch.assign(age=batch["age"] / 10, occupation=None))
    engine = open_store(f"sqlite:///{tmp_path / 'history.db'}")
    try:
        record_run(
            engine,
            monitor="m",
            batch_id="b",
            batch_time=datetime(2024, 1, 1, tzinfo=UTC),
            results=results,
            status="failed",
            worst_severity="high",
            rows=len(batch),
        )
        stored = latest_results(engine, "m")
    finally:
        engine.dispose()
    assert diagnose(stored) == diagnose(results)
    assert [d.cause for d in diagnose(stored)] == [UNIT_CHANGE, COLUMN_NULL]
    shown = CliRunner().invoke(
        app, ["runs", "m", "--batch", "b", "--db", f"sqlite:///{tmp_path / 'history.db'}"]
    )
    assert shown.exit_code == 0, shown.output
    causes = [line for line in shown.stdout.splitlines() if line.startswith("likely cause: ")]
    assert [c.split(":")[1].strip() for c in causes] == ["age", "occupation"]
    assert "~10× smaller than the reference" in causes[0] and "every value is null" in causes[1]


# --- the gate and the text, on hand-made results ----------------------------------------------------


def unseen_result(
    target: str, top: list, rows: int = 100, severity: str = "high", status: str = "ok"
) -> dict:
    failing = sum(count for _, count in top)
    return {
        "check": "abnormal.unseen_categorical",
        "target": target,
        "status": status,
        "severity": severity,
        "rows": rows,
        "failing_rows": failing,
        "metrics": {"failing_share": failing / rows},
        "details": {"top_failing_values": top},
    }


@pytest.mark.parametrize(("severity", "status"), [("low", "ok"), ("none", "ok"), ("high", "error")])
def test_no_diagnosis_without_a_claimed_change(severity: str, status: str) -> None:
    assert diagnose([unseen_result("c", [["new", 40]], severity=severity, status=status)]) == []
    assert len(diagnose([unseen_result("c", [["new", 40]], severity="medium")])) == 1


def range_result(batch_median: float, batch_range: list, failing_share: float = 1.0) -> dict:
    return {
        "check": "abnormal.out_of_range",
        "target": "x",
        "status": "ok",
        "severity": "high",
        "metrics": {"failing_share": failing_share},
        "details": {
            "reference_range": [10.0, 90.0],
            "batch_range": batch_range,
            "reference_median": 40.0,
            "batch_median": batch_median,
        },
    }


@pytest.mark.parametrize(
    ("median", "batch_range", "share", "cause"),
    [
        (4000.0, [1000.0, 9000.0], 1.0, UNIT_CHANGE),
        (4000.0, [1000.0, 9000.0], 0.89, None),  # part of the batch still in range
        (120.0, [100.0, 270.0], 1.0, None),  # 3×: no power of ten
        (4000.0, [95000.0, 99000.0], 1.0, None),  # the range does not scale back onto the reference's
        (-40.0, [-90.0, -10.0], 1.0, SIGN_FLIP),
        (-400.0, [-900.0, -100.0], 1.0, None),  # minus ten: no cause named
        (None, None, 1.0, None),  # an older result without the details
    ],
)
def test_scale_signatures(median, batch_range, share: float, cause: str | None) -> None:
    found = diagnose([range_result(median, batch_range, share)])
    assert [d.cause for d in found] == ([cause] if cause else [])


def test_lines_escape_and_clip_what_comes_from_the_data() -> None:
    value = "\x1b[31mred\u202e\nx" + "y" * 60
    (diagnosis,) = diagnose([unseen_result("col\x1b]8;;\u200b\tname", [[value, 60]])])
    assert not CONTROL.search(diagnosis.line) and "\n" not in diagnosis.line and "\t" not in diagnosis.line
    assert diagnosis.line.startswith("col\\x1b]8;;\\u200b\\tname: new value '\\x1b[31mred\\u202e\\nx")
    kept = VALUE_CHARACTERS - 1 - len("\x1b[31mred\u202e\nx")
    assert "x" + "y" * kept + "…' in 60% of rows, never seen" in diagnosis.line
