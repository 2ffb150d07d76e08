"""`driftline evaluate --model` and `evaluate(model=...)`: both tables are scored by the model before
the checks run, as a monitor run scores its reference and batch; numbers pinned with scikit-learn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, recall_score, roc_auc_score
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.config.spec import ExecutionSpec
from driftline.tasks.run.evaluate import evaluate
from tests.tasks.model_fixture import load

runner = CliRunner()
MODEL = "tests.tasks.model_fixture:load"
ROLES = ["-p", "label=y", "-p", "numeric=[a, b]", "-p", "categorical=[]", "-p", "protected=[sex]"]
CHECKS = ["-c", "performance.overall", "-c", "fairness.tpr", "-c", "drift.numeric"]


def table(seed: int, rows: int, shift: float) -> pd.DataFrame:
    """Two features the fixture's model reads, a label that follows them, a protected group and the
    predictions production stored (`stored`, a rule of its own)."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(shift, 1.0, rows), rng.normal(0.0, 1.0, rows)
    y = (a + b + rng.normal(0.0, 0.8, rows) > 0).astype(int)
    sex = rng.choice(["f", "m"], rows)
    return pd.DataFrame({"a": a, "b": b, "sex": sex, "y": y, "stored": (a > 0).astype(int)})


@pytest.fixture
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return table(1, 800, 0.0), table(2, 600, 0.7)


def written(frames: tuple[pd.DataFrame, pd.DataFrame], folder: Path, suffix: str) -> list[str]:
    """The reference (without stored predictions, like a training set) and current files."""
    reference, current = folder / f"reference{suffix}", folder / f"current{suffix}"
    for frame, path in ((frames[0].drop(columns="stored"), reference), (frames[1], current)):
        frame.to_parquet(path) if suffix == ".parquet" else frame.to_csv(path, index=False)
    return ["-r", str(reference), "--current", str(current)]


def by_target(results: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["check"], r["target"]): r for r in results}


def expected_performance(frame: pd.DataFrame, predicted: np.ndarray) -> dict[str, float]:
    """Accuracy of `predicted` and AUC of the fixture model's score, computed here."""
    score = load().predict_proba(frame[["a", "b"]].to_numpy())[:, 1]
    return {"accuracy": accuracy_score(frame["y"], predicted), "auc": roc_auc_score(frame["y"], score)}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_model_scores_both_files_before_performance_and_fairness(tables, tmp_path, suffix) -> None:
    done = runner.invoke(
        app, ["evaluate", *CHECKS, *written(tables, tmp_path, suffix), *ROLES, "--model", MODEL, "--json"]
    )
    assert done.exit_code == 0, done.output
    found = by_target(json.loads(done.stdout))
    model = load()
    reference, current = tables
    for name, frame, side in ((0, reference, "reference"), (1, current, "current")):
        expected = expected_performance(frame, model.predict(frame[["a", "b"]].to_numpy()))
        for metric, value in expected.items():
            assert found[("performance.overall", metric)]["metrics"][side] == pytest.approx(value), name
    records = {r["subgroup"]["sex"]: r for r in found[("fairness.tpr", "sex")]["details"]["records"]}
    predicted = model.predict(current[["a", "b"]].to_numpy())
    for group in ("f", "m"):
        rows = current["sex"] == group
        assert records[group]["tpr"] == pytest.approx(recall_score(current["y"][rows], predicted[rows]))
    # feature drift (evaluated a group of columns at a time on Parquet) sees the model's predictions too
    assert found[("drift.numeric", "a")]["model_impact"] is not None


def test_a_declared_prediction_the_current_file_stores_is_used_and_the_model_fills_the_reference(
    tables, tmp_path
) -> None:
    """`prediction=stored`: the reference lacks it, so the model fills it there; the current file's
    stored predictions are its own; the score comes from the model on both."""
    args = [*written(tables, tmp_path, ".parquet"), *ROLES, "-p", "prediction=stored", "--model", MODEL]
    done = runner.invoke(app, ["evaluate", "-c", "performance.overall", *args, "--json"])
    assert done.exit_code == 0, done.output
    found = by_target(json.loads(done.stdout))
    reference, current = tables
    expected_reference = expected_performance(reference, load().predict(reference[["a", "b"]].to_numpy()))
    expected_current = expected_performance(current, current["stored"].to_numpy())
    for metric in ("accuracy", "auc"):
        metrics = found[("performance.overall", metric)]["metrics"]
        assert metrics["reference"] == pytest.approx(expected_reference[metric])
        assert metrics["current"] == pytest.approx(expected_current[metric])


def test_without_a_model_performance_is_skipped_and_a_bad_model_is_named(tables, tmp_path) -> None:
    files = written(tables, tmp_path, ".parquet")
    plain = runner.invoke(app, ["evaluate", "-c", "performance.overall", *files, *ROLES, "--json"])
    assert plain.exit_code == 0, plain.output
    [skipped] = json.loads(plain.stdout)
    assert skipped["status"] == "skipped"
    bad = runner.invoke(app, ["evaluate", "-c", "performance.overall", *files, "--model", "nowhere_mod:load"])
    assert bad.exit_code == EXIT_USAGE
    assert "model 'nowhere_mod:load'" in bad.stderr and "No module named 'nowhere_mod'" in bad.stderr


def test_the_python_api_takes_a_model_or_its_import_path(tables) -> None:
    reference, current = tables
    roles = {"label": "y", "numeric": ["a", "b"], "categorical": [], "protected": ["sex"]}
    options = {"columns": roles, "execution": ExecutionSpec(isolation="thread")}
    by_path = evaluate(["performance.overall"], reference, current, model=MODEL, **options)
    by_object = evaluate(["performance.overall"], reference, current, model=load(), **options)
    assert [r.to_dict() for r in by_path] == [r.to_dict() for r in by_object]
    auc = next(r for r in by_object if r.target == "auc")
    score = load().predict_proba(current[["a", "b"]].to_numpy())[:, 1]
    assert auc.metrics["current"] == pytest.approx(roc_auc_score(current["y"], score))
    assert "prediction" not in current.columns  # the caller's frames are not changed
