"""A batch stored as one Parquet file, streamed by a partitioned run in parts of consecutive row groups
planned from the footer: the stored rows equal a whole-batch run's whatever the row groups, a file of
one row group is one part, an empty file runs, late labels are joined part by part, and the peak memory
of the process tree stays flat as the batch doubles."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from sklearn.metrics import accuracy_score, roc_auc_score

from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results
from driftline.tasks.run import partitioned
from driftline.tasks.run.driver import Driver
from driftline.tasks.run.partitioned import RowGroups, plan_batch, plan_row_groups, run_partitioned
from driftline.tasks.run.pipeline import RunSummary, run_monitor
from driftline.tasks.sources import SourceError
from tests.scale.conftest import BATCH, write_monitor
from tests.scale.helpers import assert_same_history, mixed_frame

ROWS = 3000
# Row groups of the same batch, and the parts (first group, stop, offset, rows) of 1,000 rows at most.
LAYOUTS = {
    "even": ([500] * 6, [(0, 2, 0, 1000), (2, 4, 1000, 1000), (4, 6, 2000, 1000)]),
    "uneven": (
        [1, 1200, 3, 5, 800, 991],
        [(0, 1, 0, 1), (1, 2, 1, 1200), (2, 5, 1201, 808), (5, 6, 2009, 991)],
    ),
}


def write_row_groups(path: Path, frame: pd.DataFrame, sizes: list[int]) -> Path:
    """`frame` as one Parquet file whose row groups have the given sizes, in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pq.ParquetWriter(path, table.schema) as writer:
        for start, size in zip(np.cumsum([0, *sizes])[:-1], sizes, strict=True):
            writer.write_table(table.slice(int(start), size))
    return path


@pytest.fixture(scope="module")
def row_group_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """reference.parquet and, for each layout and for one row group, <layout>/<batch>.parquet holding
    the same batch."""
    root = tmp_path_factory.mktemp("row_groups")
    mixed_frame(4000, seed=11).to_parquet(root / "reference.parquet", index=False)
    batch = mixed_frame(ROWS, seed=12, shift=0.5)
    for layout, (sizes, _) in LAYOUTS.items():
        write_row_groups(root / layout / f"{BATCH}.parquet", batch, sizes)
    write_row_groups(root / "one" / f"{BATCH}.parquet", batch, [ROWS])
    return root


@pytest.fixture(scope="module")
def whole_run(row_group_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec of a plain whole-batch run of the batch, run once."""
    template = str(row_group_data / "one" / "{batch}.parquet")
    spec = write_monitor(row_group_data, tmp_path_factory.mktemp("whole"), template)
    run_monitor(load_spec(spec), BATCH, alerts=False, retrain=False)
    return spec


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> int:
    """Parts of at most 1,000 rows."""
    monkeypatch.setattr(partitioned, "PART_ROWS", 1000)
    return 1000


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_row_group_parts_store_the_rows_of_the_whole_batch_run(
    layout: str, row_group_data: Path, whole_run: Path, tmp_path: Path, small_parts: int
) -> None:
    """Parts evaluated in a pool of two worker processes, merged, the unmergeable drift.label gathered."""
    path = row_group_data / layout / f"{BATCH}.parquet"
    parts = plan_row_groups(path)
    assert [(p.first, p.stop, p.offset, p.rows) for p in parts] == LAYOUTS[layout][1]
    spec = write_monitor(row_group_data, tmp_path, str(row_group_data / layout / "{batch}.parquet"))
    summary = run_partitioned(load_spec(spec), BATCH, alerts=False, retrain=False)
    assert summary.rows == ROWS
    assert_same_history(spec, whole_run, BATCH)
    (label,) = [r for r in summary.results if r.check == "drift.label"]
    assert label.status == "ok"


def test_a_part_reads_its_row_groups_only(row_group_data: Path) -> None:
    path = row_group_data / "uneven" / f"{BATCH}.parquet"
    part = RowGroups(str(path), 2, 5, 1201, 808)
    assert part.name == f"{path}[row groups 2-4]"
    expected = pd.read_parquet(path).iloc[1201:2009].reset_index(drop=True)
    pd.testing.assert_frame_equal(part.read(), expected)
    with pytest.raises(SourceError, match=r"read 808 rows where 900 were planned"):
        RowGroups(str(path), 2, 5, 1201, 900).read()


def test_a_file_of_one_row_group_is_one_part(
    row_group_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, small_parts: int
) -> None:
    """Whatever its size, with a warning when it is larger than a part."""
    path = row_group_data / "one" / f"{BATCH}.parquet"
    spec = load_spec(write_monitor(row_group_data, tmp_path, str(row_group_data / "one" / "{batch}.parquet")))
    with caplog.at_level(logging.WARNING, logger="driftline.run"):
        batch_id, parts, _ = plan_batch(spec, None, Driver())
    assert batch_id == BATCH
    assert parts == [RowGroups(str(path), 0, 1, 0, ROWS)]
    assert parts[0].name == f"{path}[row group 0]"
    assert f"one row group of {ROWS} rows, more than the 1000 rows a part" in caplog.text


def test_a_row_group_within_a_part_logs_nothing(
    row_group_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = load_spec(write_monitor(row_group_data, tmp_path, str(row_group_data / "one" / "{batch}.parquet")))
    with caplog.at_level(logging.WARNING, logger="driftline.run"):
        _, parts, _ = plan_batch(spec, BATCH, Driver())
    assert len(parts) == 1 and parts[0].rows == ROWS
    assert "row group" not in caplog.text


@pytest.mark.parametrize("writer", ["pandas", "no row groups"])
def test_an_empty_file_runs_as_an_empty_whole_batch(
    row_group_data: Path, tmp_path: Path, writer: str
) -> None:
    """pyarrow writes an empty frame as one row group of no rows; another writer may write none."""
    empty = mixed_frame(10, seed=3).iloc[:0]
    path = tmp_path / "empty" / f"{BATCH}.parquet"
    write_row_groups(path, empty, [0] if writer == "pandas" else [])
    assert pq.ParquetFile(path).num_row_groups == (1 if writer == "pandas" else 0)
    (part,) = plan_row_groups(path)
    assert (part.offset, part.rows) == (0, 0) and part.read().columns.equals(empty.columns)
    template = str(tmp_path / "empty" / "{batch}.parquet")
    parted = run_partitioned(
        load_spec(write_monitor(row_group_data, tmp_path / "parts", template)),
        BATCH,
        alerts=False,
        retrain=False,
    )
    whole = run_monitor(
        load_spec(write_monitor(row_group_data, tmp_path / "whole", template)),
        BATCH,
        alerts=False,
        retrain=False,
    )
    assert parted.rows == whole.rows == 0
    assert parted.status == whole.status

    def outcome(summary: RunSummary) -> list[tuple]:
        return [(r.check, r.target, r.status, r.reason) for r in summary.results]

    assert outcome(parted) == outcome(whole)


def test_late_labels_are_joined_part_by_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_parts: int
) -> None:
    """A batch file without its label, in row groups of 700, 800 and 500 rows: when 70% of its labels
    land, the next run reads it one part at a time and stores the label checks of the labelled rows."""
    first, second = "2024-05-01", "2024-05-02"
    mixed_frame(3000, seed=21).assign(id=np.arange(3000)).to_parquet(tmp_path / "reference.parquet")
    batch = mixed_frame(2000, seed=30, shift=0.3).assign(id=np.arange(2000) + 100_000)
    write_row_groups(tmp_path / "batches" / f"{first}.parquet", batch.drop(columns="label"), [700, 800, 500])
    write_row_groups(tmp_path / "batches" / f"{second}.parquet", batch.drop(columns="label"), [2000])
    labels = batch.sample(frac=0.7, random_state=4)[["id", "label"]]
    spec_path = tmp_path / "monitor.yaml"
    raw = {
        "name": "late-row-groups",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "labels": {"path": "labels/{batch}.parquet"},
        "columns": {
            "id": "id",
            "label": "label",
            "score": "score",
            "prediction": "prediction",
            "numeric": ["x", "ties", "wide"],
        },
        "checks": ["drift.numeric", "performance.overall"],
        "execution": {"isolation": "thread", "workers": 1},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    spec_path.write_text(yaml.safe_dump(raw))
    spec = load_spec(spec_path)
    run_partitioned(spec, first, alerts=False, retrain=False)
    (tmp_path / "labels").mkdir()
    labels.to_parquet(tmp_path / "labels" / f"{first}.parquet", index=False)

    reads: list[int] = []
    read = RowGroups.read
    monkeypatch.setattr(RowGroups, "read", lambda part: reads.append(part.rows) or read(part))
    summary = run_partitioned(spec, second, alerts=False, retrain=False)
    assert [(j["batch_id"], j["labelled_rows"]) for j in summary.labels] == [(first, len(labels))]
    assert reads == [2000, 700, 800, 500]  # this batch, then the first one part at a time

    with connected_store(spec.database_url()) as engine:
        stored = latest_results(engine, spec.name, first)
    performance = {r["target"]: r for r in stored if r["check"] == "performance.overall"}
    expected = batch[batch["id"].isin(labels["id"])]
    assert {r["rows"] for r in performance.values()} == {len(labels)}
    accuracy = accuracy_score(expected["label"], expected["prediction"])
    assert performance["accuracy"]["metrics"]["current"] == pytest.approx(accuracy)
    auc = roc_auc_score(expected["label"], expected["score"])
    assert performance["auc"]["metrics"]["current"] == pytest.approx(auc)


# --- memory: the process tree's peak as the batch doubles --------------------------------------------

FEATURES = 20
MEMORY_GROUP_ROWS = 500_000


def write_float_batch(path: Path, rows: int, seed: int) -> None:
    """`rows` × `FEATURES` float32 columns written one row group at a time (never whole in memory)."""
    rng = np.random.default_rng(seed)
    schema = pa.schema([(f"f{i}", pa.float32()) for i in range(FEATURES)])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, MEMORY_GROUP_ROWS):
            n = min(MEMORY_GROUP_ROWS, rows - start)
            columns = [pa.array(rng.normal(0.1, 1, n).astype(np.float32)) for _ in range(FEATURES)]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))


def tree_peak_mb(command: list[str], log: Path) -> float:
    """Run `command`; the peak of its process tree's summed resident memory, sampled every 50 ms."""
    with log.open("wb") as out:
        process = psutil.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        peak = 0
        while process.poll() is None:
            rss = 0
            for member in [process, *process.children(recursive=True)]:
                try:
                    rss += member.memory_info().rss
                except psutil.Error:
                    continue
            peak = max(peak, rss)
            time.sleep(0.05)
    assert process.returncode in (0, 1), log.read_text()[-3000:]
    return peak / 2**20


@pytest.mark.e2e
def test_peak_memory_stays_flat_as_the_batch_file_doubles(tmp_path: Path) -> None:
    """2M and 4M rows × 20 float32 columns, `driftline run --partitioned` in a pool of two workers:
    the 4M run's peak is within 30% of the 2M run's (the batch alone is 160 MB more)."""
    rng = np.random.default_rng(0)
    reference = pd.DataFrame({f"f{i}": rng.normal(0, 1, 100_000).astype(np.float32) for i in range(FEATURES)})
    reference.to_parquet(tmp_path / "reference.parquet", index=False)
    (tmp_path / "batches").mkdir()
    sizes = {"warm": 200_000, "2m": 2_000_000, "4m": 4_000_000}
    for seed, (batch_id, rows) in enumerate(sizes.items()):
        write_float_batch(tmp_path / "batches" / f"{batch_id}.parquet", rows, seed)
    spec = {
        "name": "tall",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "columns": {"numeric": [f"f{i}" for i in range(FEATURES)]},
        "checks": ["drift.numeric", "abnormal.nulls", "abnormal.out_of_range"],
        "execution": {"workers": 2},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    driftline = str(Path(sys.executable).with_name("driftline"))
    peaks = {
        batch_id: tree_peak_mb(
            [
                driftline,
                "run",
                str(tmp_path / "monitor.yaml"),
                "--partitioned",
                "--batch",
                batch_id,
                "--quiet",
            ],
            tmp_path / f"{batch_id}.log",
        )
        for batch_id in sizes  # the warm-up run fits and caches the profiles
    }
    assert peaks["4m"] < 1.3 * peaks["2m"], peaks
