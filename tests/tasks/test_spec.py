"""Monitor spec validation: every mistake names the file and the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from driftline.tasks.config.spec import SpecError, load_spec

VALID = """
name: shop-churn
reference: {path: ref.parquet}
batches: {path: "batches/{batch}.parquet"}
columns: {label: churned, protected: [gender]}
checks:
  - drift.numeric
  - check: schema.columns
fail_on: medium
"""


def write(tmp_path, text: str):
    path = tmp_path / "monitor.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_spec_with_shorthand_and_relative_paths(tmp_path) -> None:
    spec = load_spec(write(tmp_path, VALID))
    assert [c.check for c in spec.checks] == ["drift.numeric", "schema.columns"]
    assert spec.resolve(spec.reference.path) == tmp_path / "ref.parquet"
    assert spec.fail_on == "medium" and spec.alerts.min_severity == "medium"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (VALID + "colums: {}\n", r"colums: Extra inputs are not permitted"),
        (VALID + "base_dir: /etc\n", r"base_dir: Extra inputs are not permitted"),
        (VALID.replace("fail_on: medium", "fail_on: severe"), r"fail_on: Input should be 'none', 'low'"),
        (
            VALID.replace("- drift.numeric", "- drift.numerical"),
            r"checks\.0: unknown check 'drift.numerical'",
        ),
        (
            VALID.replace("- drift.numeric", "- {check: schema.columns, params: {bins: 3}}"),
            r"checks\.0: schema.columns: unknown parameter\(s\) \['bins'\]",
        ),
        (
            VALID.replace("reference: {path: ref.parquet}", "reference: {}"),
            r"reference: Value error, give exactly one",
        ),
        (VALID.replace("name: shop-churn", "name: shop churn!"), r"name: String should match pattern"),
        (VALID.replace("name: shop-churn", "name: '..'"), r"name: String should match pattern"),
        (VALID.replace("name: shop-churn", "name: '.'"), r"name: String should match pattern"),
        (VALID + "schedule: {cron: '61 * * * *'}\n", r"schedule.cron: Value error, Invalid cron string"),
        (VALID + "schedule: {timezone: Mars/Base}\n", r"schedule.timezone: Value error, Invalid timezone"),
        ("name: [unclosed\n", r"malformed YAML at line \d+"),
        ("- just\n- a list\n", r"a monitor spec is a YAML mapping, got list"),
    ],
)
def test_errors_name_file_and_key(tmp_path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml: cannot read the monitor spec"):
        load_spec(tmp_path / "nope.yaml")


def test_thresholds_accept_a_single_number(tmp_path) -> None:
    spec = load_spec(
        write(
            tmp_path,
            VALID.replace("- check: schema.columns", "- check: drift.numeric\n    thresholds: {psi: 0.25}"),
        )
    )
    assert spec.checks[1].check_params()["thresholds"] == {"psi": [0.25]}


def test_past_batch_ids_from_template_given_or_sql(tmp_path) -> None:
    from driftline.tasks.config.spec import past_batch_ids

    (tmp_path / "batches").mkdir()
    for name in ("b-10", "b-2"):
        (tmp_path / "batches" / f"{name}.parquet").write_bytes(b"")
    spec = load_spec(write(tmp_path, VALID))
    assert past_batch_ids(spec, None) == ["b-2", "b-10"]
    assert past_batch_ids(spec, ["x"]) == ["x"]
    sql = VALID.replace(
        'batches: {path: "batches/{batch}.parquet"}', "batches: {sql: {url: 'sqlite://', query: 'q'}}"
    )
    with pytest.raises(SpecError, match="a SQL batch source needs explicit batch ids"):
        past_batch_ids(load_spec(write(tmp_path, sql)), None)
    empty = VALID.replace("batches/{batch}.parquet", "none/{batch}.parquet")
    with pytest.raises(SpecError, match="no batch file matches"):
        past_batch_ids(load_spec(write(tmp_path, empty)), None)


def test_a_misspelt_column_role_is_named_when_the_spec_loads(tmp_path) -> None:
    """`columns: {lable: ...}` fails at load time, before any data is read or any run is recorded."""
    path = write(tmp_path, VALID.replace("{label: churned", "{lable: churned"))
    message = r"columns: Value error, unknown column role\(s\) \['lable'\] \(did you mean label\?\)"
    with pytest.raises(SpecError, match=message):
        load_spec(path)


def test_a_model_may_be_combined_with_the_data_s_prediction_and_score(tmp_path) -> None:
    """The data's columns fill the roles they name; the model fills the others (docs/model.md)."""
    text = VALID.replace("{label: churned", "{label: churned, prediction: p, score: s") + "model: m:build\n"
    spec = load_spec(write(tmp_path, text))
    assert (spec.model, spec.columns["prediction"], spec.columns["score"]) == ("m:build", "p", "s")


def test_a_model_whose_prediction_column_another_role_holds_is_named_when_the_spec_loads(tmp_path) -> None:
    text = VALID.replace("{label: churned", "{label: churned, ignore: [prediction]") + "model: m:build\n"
    message = (
        r"model: Value error, the model's prediction is written to column 'prediction', which "
        r"columns.ignore already names; name the model's column with columns.prediction"
    )
    with pytest.raises(SpecError, match=message):
        load_spec(write(tmp_path, text))
    named = text.replace("ignore: [prediction]", "ignore: [prediction], prediction: model_prediction")
    assert load_spec(write(tmp_path, named)).columns["prediction"] == "model_prediction"


def test_retrain_on_written_as_plain_yaml_is_the_key_on(tmp_path: Path) -> None:
    """YAML 1.1 reads a bare `on:` key as the boolean True; the spec reads YAML 1.2 booleans (true and
    false only), so the documented `retrain: {on: [performance]}` works as written."""
    spec = tmp_path / "monitor.yaml"
    spec.write_text(
        "name: m\nreference: {path: ref.parquet}\nbatches: {path: 'b/{batch}.parquet'}\n"
        "checks: [drift.numeric]\nretrain:\n  on: [performance, drift]\n  command: [echo, hi]\n"
        "alerts:\n  console: true\n"
    )
    loaded = load_spec(spec)
    assert loaded.retrain is not None and loaded.retrain.on == ["performance", "drift"]
    assert loaded.alerts.console is True
