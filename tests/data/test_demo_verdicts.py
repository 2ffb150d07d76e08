"""The demo tells its story with the shipped scores: the plain 2016 batch passes, the aged 2018-12
batch fails on drift and on the model's performance, with the F1 and AUC the table of docs/spec.md gives,
computed here by scikit-learn from the files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.pipeline import run_monitor
from tests.demo import write_spec

CHECKS = ["drift.numeric", "drift.prediction", "performance.overall"]


@pytest.fixture(scope="module")
def verdicts(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each end of the story on the local engine, with the drift and performance checks only."""
    folder = tmp_path_factory.mktemp("verdicts")
    spec = load_spec(
        write_spec(demo_data, folder, store_url=f"sqlite:///{folder / 'h.db'}", checks=CHECKS, retrain=None)
    )
    return {batch: run_monitor(spec, batch, alerts=False).to_dict() for batch in ("2016-06", "2018-12")}


def severities(summary: dict) -> dict[tuple[str, str], str]:
    return {(r["check"], r["target"]): r["severity"] for r in summary["results"] if r["status"] == "ok"}


def test_the_plain_batch_passes_and_the_aged_one_fails_on_drift_and_performance(verdicts: dict) -> None:
    clean, aged = verdicts["2016-06"], verdicts["2018-12"]
    assert clean["status"] == "passed" and set(severities(clean).values()) == {"none"}
    graded = severities(aged)
    assert aged["status"] == "failed" and aged["worst_severity"] == "high"
    assert graded[("drift.numeric", "AGEP")] == graded[("drift.prediction", "score")] == "high"
    assert graded[("performance.overall", "f1")] == "high"


@pytest.mark.parametrize(("batch", "f1", "auc"), [("2016-06", 0.8277, 0.8932), ("2018-12", 0.7359, 0.8608)])
def test_f1_and_auc_are_scikit_learns_on_the_files_and_the_docs(
    verdicts: dict, demo_data: Path, batch: str, f1: float, auc: float
) -> None:
    """The reported current values equal scikit-learn's on the batch file, and docs/spec.md's table."""
    frame = pd.read_parquet(demo_data.parent / "data" / "batches" / f"{batch}.parquet")
    expected = {
        "f1": f1_score(frame["employed"], frame["prediction"]),
        "auc": roc_auc_score(frame["employed"], frame["score"]),
    }
    reported = {
        r["target"]: r["metrics"]["current"]
        for r in verdicts[batch]["results"]
        if r["check"] == "performance.overall" and r["target"] in expected
    }
    assert reported == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx({"f1": f1, "auc": auc}, abs=5e-5)
