"""A monitor whose batches store their predictions, with a reference that lacks them (a training set),
and `model:`: the model fills the declared prediction column on the reference and the score on both,
so performance and attribution run instead of being skipped."""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, roc_auc_score

from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.pipeline import run_monitor

MODEL_MODULE = """
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression


def build():
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400)})
    return LogisticRegression().fit(x, (x["a"] + x["b"] > 0).astype(int))
"""


def table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=rows), "b": rng.normal(size=rows)})
    noisy = frame["a"] + frame["b"] + rng.normal(scale=0.8, size=rows)
    return frame.assign(y=(noisy > 0).astype(int))


@pytest.fixture
def monitor(tmp_path: Path) -> Path:
    (tmp_path / "credit_model.py").write_text(MODEL_MODULE)
    table(3000, 1).to_parquet(tmp_path / "reference.parquet")  # no `p`: a training set
    batch = table(2000, 2)
    batch["p"] = (batch["a"] > 0).astype(int)  # what production stored, not what the model says
    (tmp_path / "batches").mkdir()
    batch.to_parquet(tmp_path / "batches" / "b1.parquet")
    spec = tmp_path / "monitor.yaml"
    spec.write_text(
        textwrap.dedent(
            """
            name: credit
            reference: {path: reference.parquet}
            batches: {path: "batches/{batch}.parquet"}
            model: credit_model:build
            columns: {label: y, prediction: p, numeric: [a, b]}
            checks: [performance.overall, attribution.auc]
            """
        )
    )
    return spec


def test_the_model_fills_the_reference_s_declared_prediction_and_the_score(monitor: Path) -> None:
    summary = run_monitor(load_spec(monitor), "b1", alerts=False, retrain=False)
    results = {(r.check, r.target): r for r in summary.results}
    batch = pd.read_parquet(monitor.parent / "batches" / "b1.parquet")
    build = runpy.run_path(str(monitor.parent / "credit_model.py"))["build"]  # the same code, run apart
    score = build().predict_proba(batch[["a", "b"]])[:, 1]
    accuracy = results[("performance.overall", "accuracy")]
    assert accuracy.status == "ok"
    assert accuracy.metrics["current"] == pytest.approx(accuracy_score(batch["y"], batch["p"]))
    auc = results[("performance.overall", "auc")]
    assert auc.metrics["current"] == pytest.approx(roc_auc_score(batch["y"], score))
    assert all(r.status == "ok" for (check, _), r in results.items() if check == "attribution.auc")
