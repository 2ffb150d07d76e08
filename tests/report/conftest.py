"""A small synthetic monitor run over five batches (numeric and categorical drift, a miscalibrated
score, one subset where the model fails), shared by the report tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

BATCHES = ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05"]
SHIFT = {"2024-01": 0.0, "2024-02": 0.0, "2024-03": 0.1, "2024-04": 0.8, "2024-05": 1.5}
SENTINEL = "rawrow-7f3a"  # an id value that must never appear in a report


def make_frame(rows: int, shift: float, seed: int) -> pd.DataFrame:
    """Rows with a numeric and a categorical feature, a label and a score; `shift` moves the numeric
    feature, the category mix, the calibration and the model's quality on category "d"."""
    rng = np.random.default_rng(seed)
    x = rng.normal(shift, 1.0, rows)
    mix = np.array([0.4, 0.3, 0.2, 0.1]) if shift < 0.5 else np.array([0.15, 0.25, 0.25, 0.35])
    c = rng.choice(np.array(["a", "b", "c", "d"]), rows, p=mix)
    logit = 1.6 * (x - shift)
    label = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(int)
    score = 1 / (1 + np.exp(-(logit + rng.normal(0, 0.3, rows))))
    if shift >= 0.5:
        score = np.where(c == "d", rng.random(rows), score**1.8)
    return pd.DataFrame(
        {
            "id": [f"{SENTINEL}-{seed}-{i}" for i in range(rows)],
            "x": x,
            "c": c,
            "label": label,
            "score": score,
        }
    )


@dataclass
class SyntheticRun:
    """The spec path, its history URL and the summaries of the five runs, oldest first."""

    spec_path: Path
    database_url: str
    summaries: list[Any]
    batches: dict[str, pd.DataFrame]
    reference: pd.DataFrame


def write_synthetic_spec(folder: Path, database_url: str) -> Path:
    """Reference, batches and a spec in `folder`."""
    data = folder / "data"
    (data / "batches").mkdir(parents=True)
    make_frame(3000, 0.0, 1).to_parquet(data / "reference.parquet")
    for i, batch in enumerate(BATCHES):
        make_frame(2000, SHIFT[batch], 10 + i).to_parquet(data / "batches" / f"{batch}.parquet")
    spec = {
        "name": "synthetic",
        "reference": {"path": "data/reference.parquet"},
        "batches": {"path": "data/batches/{batch}.parquet"},
        "columns": {"id": "id", "label": "label", "score": "score", "numeric": ["x"], "categorical": ["c"]},
        "checks": [
            "drift.numeric",
            "drift.categorical",
            "drift.prediction",
            "performance.calibration",
            {"check": "subset.auc", "features": ["c"]},
        ],
        "execution": {"isolation": "thread", "workers": 2},
        "store_url": database_url,
        "fail_on": "high",
        "alerts": {"min_severity": "medium", "console": False},
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="package")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> SyntheticRun:
    """Five runs of the synthetic monitor through the plain engine, each writing its HTML report."""
    from driftline.tasks.config.spec import load_spec
    from driftline.tasks.run.pipeline import run_monitor

    folder = tmp_path_factory.mktemp("synthetic")
    url = f"sqlite:///{folder / 'history.db'}"
    spec_path = write_synthetic_spec(folder, url)
    spec = load_spec(spec_path)
    summaries = [run_monitor(spec, batch, alerts=False, retrain=False) for batch in BATCHES]
    batches = {b: pd.read_parquet(folder / "data" / "batches" / f"{b}.parquet") for b in BATCHES}
    return SyntheticRun(
        spec_path, url, summaries, batches, pd.read_parquet(folder / "data" / "reference.parquet")
    )
