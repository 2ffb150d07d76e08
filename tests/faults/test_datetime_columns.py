"""Date and time columns take the `time` role: never a feature, so no drift check compares them
category by category (each timestamp its own category), unless declared as one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from driftline import load_spec, run_monitor
from driftline.checks.columns import Columns, infer_columns


def loans(n: int, seed: int, start: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    opened = pd.date_range(start, periods=n, freq="h")
    return pd.DataFrame(
        {
            "amount": rng.normal(1_000, 100, n),
            "grade": rng.choice(["a", "b", "c"], n),
            "opened": opened,  # datetime64
            "opened_utc": opened.tz_localize("UTC"),  # with a time zone
            "birthday": [dt.date(1980, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 9_000, n)],
            "closed_at": opened.strftime("%Y-%m-%dT%H:%M:%S"),  # ISO text, as a CSV holds it
            "label": label,
            "prediction": np.where(rng.random(n) < 0.8, label, 1 - label),
        }
    )


TIMES = ("opened", "opened_utc", "birthday", "closed_at")


def test_dates_and_times_of_every_form_take_the_time_role() -> None:
    columns = infer_columns(loans(50, 0, "2024-01-01"))
    assert columns.time == TIMES
    assert columns.numeric == ("amount",) and columns.categorical == ("grade",)
    assert Columns.from_dict(columns.to_dict()) == columns


@pytest.mark.parametrize(
    "values",
    [["2024-01-01", "soon"], ["2024-01-01 is a Monday"], ["20240101"], [None, None]],
)
def test_text_that_is_not_all_dates_is_not_a_time(values: list) -> None:
    frame = pd.DataFrame({"note": pd.Series(values, dtype="str"), "label": [0] * len(values)})
    assert infer_columns(frame).time == ()


def test_a_declared_role_wins_over_the_time_role() -> None:
    columns = infer_columns(
        loans(50, 0, "2024-01-01"), {"categorical": ["grade", "closed_at"], "time": ["opened"]}
    )
    assert columns.time == ("opened",) and columns.categorical == ("grade", "closed_at")
    assert not {"opened_utc", "birthday"} & set(columns.features)  # undeclared dates stay out of the features


def test_a_run_keeps_times_out_of_drift(tmp_path: Path) -> None:
    (tmp_path / "batches").mkdir()
    loans(600, 0, "2024-01-01").to_csv(tmp_path / "reference.csv", index=False)
    loans(400, 1, "2024-06-01").to_csv(tmp_path / "batches" / "b1.csv", index=False)
    spec = {
        "name": "loans",
        "reference": {"path": "reference.csv"},
        "batches": {"path": "batches/{batch}.csv"},
        "columns": {"time": ["opened", "opened_utc"]},
        "checks": ["drift.numeric", "drift.categorical", "abnormal.nulls"],
        "execution": {"isolation": "thread"},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    summary = run_monitor(load_spec(tmp_path / "monitor.yaml"), "b1", alerts=False, retrain=False)
    results = {(r["check"], r["target"]) for r in summary.to_dict()["results"]}
    targets = {(c, t) for c, t in results if c not in ("schema.columns", "data.summary")}
    assert ("drift.categorical", "grade") in targets and ("drift.numeric", "amount") in targets
    assert not {target for _, target in targets} & set(TIMES)
    assert {t for c, t in results if c == "data.summary"} >= set(TIMES)  # described, never graded
    assert summary.status == "passed"
