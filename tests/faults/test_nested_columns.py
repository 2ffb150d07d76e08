"""Parquet list, map and struct columns: hashed by content (no `TypeError: unhashable type`), given no
role by inference, and named by the schema check as read by no check; the run completes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from driftline import load_spec, run_monitor
from driftline.checks.columns import infer_columns
from driftline.checks.fingerprint import frame_fingerprint

UNREAD = "nested values (lists, arrays or mappings): no check reads this column"


def table(n: int, seed: int) -> pa.Table:
    """A model's data with a list column, a struct column and a map column beside plain ones."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    return pa.table(
        {
            "income": rng.normal(50_000, 5_000, n),
            "tags": pa.array([rng.integers(0, 5, i % 3).tolist() for i in range(n)], pa.list_(pa.int64())),
            "address": pa.array([{"zip": int(z), "city": "x"} for z in rng.integers(0, 9, n)]),
            "extra": pa.array([[("k", float(i))] for i in range(n)], pa.map_(pa.string(), pa.float64())),
            "label": label,
            "prediction": np.where(rng.random(n) < 0.8, label, 1 - label),
        }
    )


def read(tmp_path: Path, t: pa.Table) -> pd.DataFrame:
    pq.write_table(t, tmp_path / "t.parquet")
    return pd.read_parquet(tmp_path / "t.parquet")


def test_the_fingerprint_hashes_nested_values_by_content(tmp_path: Path) -> None:
    frame = read(tmp_path, table(50, 0))
    assert frame_fingerprint(frame) == frame_fingerprint(frame.copy())
    changed = frame.copy()
    changed.at[7, "tags"] = np.array([4, 4, 4])
    assert frame_fingerprint(changed) != frame_fingerprint(frame)
    plain = frame[["income", "label"]]
    expected = hashlib.sha256(json.dumps([["income", "float64"], ["label", "int64"]]).encode())
    expected.update(pd.util.hash_pandas_object(plain, index=False).to_numpy().tobytes())
    assert frame_fingerprint(plain) == expected.hexdigest()  # plain frames hash as before: caches stay valid


def test_nested_columns_get_no_inferred_role_and_a_nested_label_no_task(tmp_path: Path) -> None:
    frame = read(tmp_path, table(50, 0))
    columns = infer_columns(frame)
    assert set(columns.all_columns()) == {"income", "label", "prediction"}
    spans = infer_columns(frame, {"label": "tags", "prediction": "prediction"})
    assert spans.label == "tags" and spans.task is None


def test_a_run_over_parquet_with_nested_columns_names_them(tmp_path: Path) -> None:
    (tmp_path / "batches").mkdir()
    pq.write_table(table(600, 0), tmp_path / "reference.parquet")
    pq.write_table(table(400, 1), tmp_path / "batches" / "b1.parquet")
    spec = {
        "name": "nested",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric", "drift.categorical", "abnormal.nulls", "performance.overall"],
        "execution": {"isolation": "thread"},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    summary = run_monitor(load_spec(tmp_path / "monitor.yaml"), "b1", alerts=False, retrain=False)
    assert summary.status == "passed"
    unread = {
        r["target"]: r
        for r in summary.to_dict()["results"]
        if r["check"] == "schema.columns" and r["status"] == "skipped"
    }
    assert set(unread) == {"tags", "address", "extra"}
    assert {r["reason"] for r in unread.values()} == {UNREAD}
    checked = {r["target"] for r in summary.to_dict()["results"] if r["check"] != "schema.columns"}
    assert not checked & {"tags", "address", "extra"}
    assert all(r["status"] != "error" for r in summary.to_dict()["results"])
