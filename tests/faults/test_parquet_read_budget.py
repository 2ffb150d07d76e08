"""A few kilobytes of dictionary-encoded Parquet text can decode to gigabytes in the run's own process
(the check workers' `memory_mb` does not cover it): such a file is refused before its values are
expanded, with one line naming the file, the column and the budget."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.config.spec import ExecutionSpec
from driftline.tasks.sources import SourceError, read_table
from driftline.tasks.sources.read_limits import ReadLimits

runner = CliRunner()
MB = 1024 * 1024


def _repeated_text(path: Path, entry_mb: int, rows: int) -> Path:
    """A file whose column `note` repeats one `entry_mb` MB string on every row, stored as one dictionary
    entry and read back as plain text (no Arrow schema in the footer), beside a numeric column."""
    entry = pa.array(["x" * (entry_mb * MB)])
    note = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), entry)
    table = pa.table({"age": np.arange(rows, dtype=np.float64), "note": note})
    pq.write_table(table, path, compression="zstd", store_schema=False)
    return path


def test_a_dictionary_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    """20 MB × 300 rows decodes to 6,000 MB: the default budget (2,048 MB) refuses it at once."""
    path = _repeated_text(tmp_path / "bomb.parquet", 20, 300)
    assert path.stat().st_size < 2 * MB
    started = time.perf_counter()
    with pytest.raises(SourceError) as caught:
        read_table(path)
    assert time.perf_counter() - started < 5
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: decodes to 6,000 MB")
    assert "read budget of 2,048 MB (execution.read_memory_mb)" in message
    assert "column 'note' alone takes 6,000 MB" in message


def test_a_file_within_its_budget_reads_as_pandas_reads_it(tmp_path: Path) -> None:
    path = _repeated_text(tmp_path / "small.parquet", 1, 30)
    frame = read_table(path, ReadLimits(memory_mb=64))
    pd.testing.assert_frame_equal(frame, pd.read_parquet(path))
    with pytest.raises(SourceError, match="decodes to 30 MB, more than the read budget of 16 MB"):
        read_table(path, ReadLimits(memory_mb=16))


def test_the_default_budget_follows_the_workers_memory() -> None:
    assert ExecutionSpec().read_limits.memory_mb == 2048
    assert ExecutionSpec(memory_mb=8192).read_limits.memory_mb == 8192
    assert ExecutionSpec(memory_mb=8192, read_memory_mb=100).read_limits.memory_mb == 100


def test_a_run_refuses_a_batch_past_its_budget(tmp_path: Path) -> None:
    """`driftline run` names the batch file and exits 2 before recording anything."""
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.normal(size=200)}).to_parquet(tmp_path / "reference.parquet")
    (tmp_path / "batches").mkdir()
    _repeated_text(tmp_path / "batches" / "2024-05-01.parquet", 1, 40)
    spec = {
        "name": "budget",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "execution": {"read_memory_mb": 32},
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["run", str(tmp_path / "monitor.yaml"), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "2024-05-01.parquet: decodes to 40 MB" in lines[0]
    assert "read budget of 32 MB" in lines[0] and "column 'note'" in lines[0]
    assert not (tmp_path / "driftline.db").exists()
