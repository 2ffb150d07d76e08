"""A monitor that declares some roles and lets the rest be inferred: declared roles win, `ignore:` works
from the spec to the results, and the CSV's row numbers are never monitored as a feature."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from driftline import load_spec, run_monitor


def census(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "zip": rng.integers(10_000, 10_006, n),
            "grade": rng.integers(1, 5, n),
            "income": rng.normal(50_000, 5_000, n).round(2),
            "debug_counter": rng.integers(0, 1_000, n),
            "label": label,
            "prediction": np.where(rng.random(n) < 0.8, label, 1 - label),
        }
    )


def write_monitor(tmp_path: Path) -> Path:
    """A reference and one batch written by `to_csv` with its index (the `Unnamed: 0` column)."""
    (tmp_path / "batches").mkdir()
    census(600, 0).to_csv(tmp_path / "reference.csv")
    census(400, 1).to_csv(tmp_path / "batches" / "2024-01.csv")
    spec = {
        "name": "roles",
        "reference": {"path": "reference.csv"},
        "batches": {"path": "batches/{batch}.csv"},
        "columns": {
            "label": "label",
            "prediction": "prediction",
            "categorical": ["zip", "grade"],
            "ignore": ["debug_counter"],
        },
        "checks": ["drift.numeric", "drift.categorical", "abnormal.nulls", "subset.accuracy"],
        "execution": {"isolation": "thread"},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_declared_inferred_and_ignored_columns_reach_the_right_checks(tmp_path: Path) -> None:
    summary = run_monitor(load_spec(write_monitor(tmp_path)), "2024-01", alerts=False, retrain=False)
    targets: dict[str, list[str]] = {}
    for result in summary.to_dict()["results"]:
        assert result["status"] == "ok", result
        targets.setdefault(result["check"], []).append(result["target"])
    assert targets["drift.numeric"] == ["income"]
    assert targets["drift.categorical"] == ["zip", "grade"]
    assert sorted(targets["subset.accuracy"]) == ["grade", "income", "zip"]
    assert sorted(targets["abnormal.nulls"]) == ["grade", "income", "prediction", "zip"]
