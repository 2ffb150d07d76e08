"""A partitioned batch through the plain engine end to end: partitions evaluated in worker processes,
merged, stored and alerted like a single-file run, whose stored rows it reproduces."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.tasks.config.spec import SpecError, load_spec
from driftline.tasks.run import partitioned
from driftline.tasks.run.partitioned import run_partitioned
from driftline.tasks.run.pipeline import run_monitor
from driftline.tasks.sources import SourceError, list_batch_ids, load_file_batch
from tests.scale.conftest import BATCH, SIZES, write_monitor
from tests.scale.helpers import assert_same_history, stored


def test_partitioned_run_stores_the_rows_of_the_single_file_run(
    specs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merging two states at a time (the third partition is merged into the first two's merge)."""
    monkeypatch.setattr(partitioned, "MERGE_EVERY", 2)
    single, parted = specs
    one = run_monitor(load_spec(single), BATCH, alerts=False, retrain=False)
    many = run_partitioned(load_spec(parted), BATCH, alerts=False, retrain=False)
    assert many.rows == one.rows == sum(SIZES)
    assert (many.status, many.worst_severity) == (one.status, one.worst_severity)
    assert many.stored.startswith("stored run") and one.stored.startswith("stored run")
    assert_same_history(parted, single, BATCH)
    rows_many = stored(parted, BATCH)
    checks = {r["check"] for r in rows_many}
    assert {
        "schema.columns",
        "drift.numeric",
        "abnormal.nulls",
        "performance.overall",
        "drift.label",
    } <= checks
    label = next(r for r in rows_many if r["check"] == "drift.label")
    assert label["status"] == "ok"  # gathered: the batch is under the gather limit


def test_a_check_that_does_not_merge_is_skipped_on_a_large_batch(monitor_data: Path, tmp_path: Path) -> None:
    parted = write_monitor(monitor_data, tmp_path, str(monitor_data / "parts" / "{batch}" / "*.parquet"))
    summary = run_partitioned(load_spec(parted), BATCH, alerts=False, retrain=False, gather_rows=100)
    (label,) = [r for r in summary.to_dict()["results"] if r["check"] == "drift.label"]
    assert label["status"] == "skipped" and "not supported on partitioned batches" in label["reason"]
    assert all(r["status"] != "error" for r in summary.to_dict()["results"])


def test_partitioned_sources(monitor_data: Path) -> None:
    """Glob and folder templates list their batch ids and load the concatenated batch; a single-file
    template keeps its behaviour; a CSV batch is refused for a partitioned run."""
    glob_template = str(monitor_data / "parts" / "{batch}" / "*.parquet")
    folder_template = str(monitor_data / "parts" / "{batch}") + "/"
    assert list_batch_ids(glob_template) == list_batch_ids(folder_template) == [BATCH]
    whole = load_file_batch(folder_template, None)
    assert whole.batch_id == BATCH and len(whole.frame) == sum(SIZES)
    assert whole.frame.equals(load_file_batch(str(monitor_data / "single" / "{batch}.parquet"), BATCH).frame)
    with pytest.raises(SourceError, match="no Parquet partition"):
        load_file_batch(glob_template, "2030-01-01")
    with pytest.raises(SourceError, match="names a folder"):
        list_batch_ids(str(monitor_data / "parts" / "x-{batch}*.parquet"))


def test_partitioned_run_refuses_a_csv_batch(monitor_data: Path, tmp_path: Path) -> None:
    single = write_monitor(monitor_data, tmp_path, str(tmp_path / "{batch}.csv"))
    with pytest.raises(SpecError, match="Parquet partitions"):
        run_partitioned(load_spec(single), BATCH)
