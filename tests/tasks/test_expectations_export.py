"""GX export: the suite's values come from the reference (pinned with pandas), it loads with Great
Expectations 1.x, validates its reference with 100 % success and fails a broken batch where expected."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from driftline.checks.columns import Columns
from driftline.flows import cli_export  # registers export-expectations on the app
from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.config.spec import load_spec
from driftline.tasks.references.expectations_export import build_suite, export_from_spec, validate_suite

runner = CliRunner()
COLUMNS = Columns(
    label="label",
    prediction="prediction",
    score="score",
    numeric=("amount",),
    categorical=("country", "email"),
    task="binary",
)


def reference_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 400
    amount = rng.gamma(2.0, 10.0, n)
    amount[:100] = np.nan  # null rate 0.25
    amount[100:104] = np.inf  # 4 of the 300 non-null values are infinite
    score = rng.random(n)
    return pd.DataFrame(
        {
            "amount": amount,
            "country": pd.Series(rng.choice(["FR", "NO", "PE"], n), dtype="str"),
            "email": pd.Series([f"user{i}@host{i % 7}.org" for i in range(n)], dtype="str"),
            "label": rng.integers(0, 2, n),
            "score": score,
            "prediction": (score >= 0.5).astype("int64"),
        }
    )


def by_kind(suite: dict) -> dict[tuple[str, str], dict]:
    return {(e["type"], e["kwargs"]["column"]): e["kwargs"] for e in suite["expectations"]}


def test_suite_values_are_the_reference_facts():
    reference = reference_frame()
    suite = build_suite(reference, COLUMNS, "synthetic")
    kinds = by_kind(suite)
    finite = reference["amount"][np.isfinite(reference["amount"])]
    between = kinds[("expect_column_values_to_be_between", "amount")]
    assert (between["min_value"], between["max_value"]) == (finite.min(), finite.max())
    assert between["mostly"] == pytest.approx(np.floor(296 / 300 * 1e4) / 1e4)
    assert kinds[("expect_column_values_to_not_be_null", "amount")]["mostly"] == 0.75
    assert "mostly" not in kinds[("expect_column_values_to_not_be_null", "country")]
    assert kinds[("expect_column_values_to_be_in_set", "country")]["value_set"] == sorted(
        reference["country"].unique()
    )
    assert kinds[("expect_column_values_to_match_regex", "email")]["regex"] == r"[\.@]"
    assert ("expect_column_values_to_be_in_set", "email") not in kinds  # every value distinct: no set
    assert "email" in suite["meta"]["driftline"]["not_exported"]
    assert kinds[("expect_column_values_to_be_in_set", "label")]["value_set"] == [0, 1]
    assert kinds[("expect_column_values_to_be_between", "score")] == {
        "column": "score",
        "min_value": 0.0,
        "max_value": 1.0,
    }
    assert {c for (kind, c) in kinds if kind == "expect_column_to_exist"} == set(reference.columns)
    json.dumps(suite, allow_nan=False)


def test_suite_loads_with_gx_and_judges_reference_and_broken_batch():
    reference = reference_frame()
    suite = build_suite(reference, COLUMNS, "synthetic")
    assert validate_suite(suite, reference) == {
        "success": True,
        "evaluated": len(suite["expectations"]),
        "successful": len(suite["expectations"]),
        "failed": [],
    }
    broken = reference.copy()
    broken.loc[200:220, "amount"] = 1e6
    broken.loc[0:5, "country"] = "XX"
    broken["email"] = broken["email"].str.replace("@", "-at-").str.replace(".", "-")
    broken.loc[0:200, "prediction"] = 3
    outcome = validate_suite(suite, broken)
    failed = {(f["type"], f["column"]) for f in outcome["failed"]}
    assert failed == {
        ("expect_column_values_to_be_between", "amount"),
        ("expect_column_values_to_be_in_set", "country"),
        ("expect_column_values_to_match_regex", "email"),
        ("expect_column_values_to_be_in_set", "prediction"),
    }


def test_demo_reference_passes_and_a_broken_demo_batch_fails_where_expected(demo_data: Path):
    spec = load_spec(demo_data)
    suite = export_from_spec(spec).suite
    reference = pd.read_parquet(demo_data.parent / "data" / "reference.parquet")
    assert validate_suite(suite, reference)["success"] is True
    assert suite["meta"]["driftline"]["monitor"] == "acs-employment"

    batch = pd.read_parquet(demo_data.parent / "data" / "batches" / "2016-06.parquet")
    # a plain sample of the next year: only RAC1P fails, on a race code the reference never had
    [unseen] = validate_suite(suite, batch)["failed"]
    assert (unseen["type"], unseen["column"]) == ("expect_column_values_to_be_in_set", "RAC1P")
    share = 100 * (~batch["RAC1P"].isin(reference["RAC1P"].unique())).mean()
    assert unseen["unexpected_percent"] == pytest.approx(share) and 0 < share < 0.1
    broken = batch.assign(AGEP=batch["AGEP"].where(batch.index % 50 != 0, 130))
    broken["SCHL"] = broken["SCHL"].where(broken.index % 40 != 0)  # nulls where the reference had none
    broken["score"] = broken["score"].where(broken.index % 60 != 0, 1.5)
    broken = broken.drop(columns="MIL")
    failed = {(f["type"], f["column"]) for f in validate_suite(suite, broken)["failed"]}
    assert failed == {
        ("expect_column_values_to_be_between", "AGEP"),
        ("expect_column_values_to_not_be_null", "SCHL"),
        ("expect_column_values_to_be_between", "score"),
        ("expect_column_to_exist", "MIL"),
        ("expect_column_values_to_not_be_null", "MIL"),
        ("expect_column_values_to_be_in_set", "MIL"),
        ("expect_column_values_to_be_in_set", "RAC1P"),
    }


def test_cli_writes_a_suite_file_and_names_a_missing_spec(demo_data: Path, tmp_path: Path):
    out = tmp_path / "suite.json"
    done = runner.invoke(app, ["export-expectations", str(demo_data), "-o", str(out), "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    suite = json.loads(out.read_text())
    assert summary["expectations"] == len(suite["expectations"]) > 20
    assert suite["name"] == "acs-employment.reference"
    missing = runner.invoke(app, ["export-expectations", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == EXIT_USAGE
    assert "nope.yaml" in missing.output


MODEL_SPEC = """
name: scored
reference: {path: reference.parquet}
batches: {path: "batch_{batch}.parquet"}
model: tests.tasks.model_fixture:load
columns: {label: y, numeric: [a, b], categorical: []}
checks: [performance.overall]
"""


def test_a_monitor_with_a_model_exports_and_verifies_its_scored_reference(tmp_path: Path):
    """The suite describes the reference as a run sees it, the model's columns included; `--verify`
    validates that same scored reference (the raw one lacks the model's columns)."""
    from tests.tasks.model_fixture import load

    rng = np.random.default_rng(3)
    raw = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    raw["y"] = (raw["a"] + raw["b"] > 0).astype(int)
    raw.to_parquet(tmp_path / "reference.parquet")
    (tmp_path / "monitor.yaml").write_text(MODEL_SPEC)
    exported = export_from_spec(load_spec(tmp_path / "monitor.yaml"))
    model = load()
    expected_predictions = model.predict(raw[["a", "b"]].to_numpy())
    np.testing.assert_array_equal(exported.reference["prediction"], expected_predictions)
    assert exported.suite["meta"]["driftline"]["model"] == {
        "import_path": "tests.tasks.model_fixture:load",
        "columns": ["prediction", "score"],
    }
    kinds = by_kind(exported.suite)
    assert kinds[("expect_column_values_to_be_in_set", "prediction")]["value_set"] == [0, 1]
    assert ("expect_column_values_to_be_between", "score") in kinds
    assert validate_suite(exported.suite, raw)["success"] is False  # the model's columns are missing

    done = runner.invoke(app, ["export-expectations", str(tmp_path / "monitor.yaml"), "--verify", "--json"])
    assert done.exit_code == 0, done.output
    validation = json.loads(done.stdout)["reference_validation"]
    assert validation["success"] is True and validation["successful"] == len(exported.suite["expectations"])


def test_a_failed_expectation_without_a_share_is_reported_without_one(capsys):
    summary = {
        "reference_validation": {
            "successful": 1,
            "evaluated": 2,
            "failed": [{"type": "expect_column_to_exist", "column": "[b]x", "unexpected_percent": None}],
        }
    }
    cli_export._report_validation(summary, stderr=False)
    printed = capsys.readouterr().out
    assert "failed: expect_column_to_exist on [b]x" in printed and "None" not in printed
