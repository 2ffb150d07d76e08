"""Item 8: a reference replaced by other content of the same size, its modification time restored
(`cp -p`, `rsync -t`, tar), is read again instead of answered from the cached facts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from driftline import load_spec, run_monitor
from driftline.tasks.sources import identity as source_identity
from driftline.tasks.sources.identity import file_identity
from tests.tasks.test_reference_cache import frames, metrics, reads, write_monitor  # noqa: F401


def write_fixed_size(frame: pd.DataFrame, path: Path, statistics: bool = False) -> None:
    """Parquet whose size does not depend on the values: uncompressed, plain-encoded."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, path, compression="none", use_dictionary=False, write_statistics=statistics)


def replace_keeping_size_and_time(path: Path, frame: pd.DataFrame, **options: bool) -> None:
    stat = path.stat()
    write_fixed_size(frame, path, **options)
    assert path.stat().st_size == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_same_size_replacement_with_its_time_restored_is_read_again(
    tmp_path: Path,
    reads: list[str],  # noqa: F811 (the fixture imported above)
) -> None:
    spec = load_spec(write_monitor(tmp_path, ["drift.numeric"]))
    path = tmp_path / "data" / "reference.parquet"
    original = frames(0, 2000)
    write_fixed_size(original, path)
    before = metrics(run_monitor(spec, "b1"))[("drift.numeric", "f0")]["psi"]
    assert metrics(run_monitor(spec, "b1"))[("drift.numeric", "f0")]["psi"] == before
    assert len(reads) == 1  # unchanged: answered from the cached facts

    replaced = original.assign(f0=original["f0"] + 0.5)  # now the batch's shift is in the reference too
    replace_keeping_size_and_time(path, replaced)
    after = run_monitor(spec, "b1")
    assert len(reads) == 2
    shutil.rmtree(tmp_path / ".driftline" / "profiles")
    truth = run_monitor(spec, "b1")  # nothing cached: the replaced reference as it is
    assert metrics(after) == metrics(truth)
    assert metrics(after)[("drift.numeric", "f0")]["psi"] < before / 2


def test_on_a_large_file_a_change_seen_only_by_the_parquet_statistics_is_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sampling shrunk to the file's first and last bytes: the footer's row-group statistics still
    tell the new content apart, and an untouched file keeps its identity."""
    monkeypatch.setattr(source_identity, "SAMPLE_BLOCKS", 2)
    monkeypatch.setattr(source_identity, "BLOCK_BYTES", 16)
    path = tmp_path / "reference.parquet"
    original = frames(0, 2000)
    write_fixed_size(original, path, statistics=True)
    identity = file_identity(path)
    assert file_identity(path) == identity
    replace_keeping_size_and_time(path, original.assign(f0=original["f0"] + 0.5), statistics=True)
    assert file_identity(path) != identity
