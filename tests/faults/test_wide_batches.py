"""A batch of 100,000 columns gave no result in 900 s (each column costs a run its own results): a batch
or reference wider than `execution.max_columns` (default 10,000) is refused at once from the Parquet
footer, with one line naming the file, its width and the key."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.sources import SourceError, read_table
from driftline.tasks.sources.read_limits import ReadLimits
from tests.faults.small_monitor import write_monitor

runner = CliRunner()


def _wide(path: Path, columns: int) -> Path:
    values = np.zeros(3)
    pq.write_table(pa.table({f"c{i}": values for i in range(columns)}), path)
    return path


def test_a_file_past_the_default_limit_is_refused_from_its_footer(tmp_path: Path) -> None:
    path = _wide(tmp_path / "wide.parquet", 10_001)
    started = time.perf_counter()
    with pytest.raises(SourceError) as caught:
        read_table(path)
    assert time.perf_counter() - started < 2
    assert str(caught.value) == (
        f"{path}: 10,001 columns, more than execution.max_columns (10,000); "
        "select the columns to monitor or raise the limit"
    )


def test_a_file_at_the_limit_is_read(tmp_path: Path) -> None:
    path = _wide(tmp_path / "narrow.parquet", 40)
    assert read_table(path, ReadLimits(max_columns=40)).shape == (3, 40)
    csv = tmp_path / "wide.csv"
    csv.write_text(",".join(f"c{i}" for i in range(41)) + "\n" + ",".join("0" * 41) + "\n")
    with pytest.raises(SourceError, match=r"41 columns, more than execution\.max_columns"):
        read_table(csv, ReadLimits(max_columns=40))


def test_a_run_refuses_a_batch_wider_than_its_spec_allows(tmp_path: Path) -> None:
    spec = write_monitor(tmp_path, execution={"max_columns": 50})
    _wide(tmp_path / "batches" / "2024-05-02.parquet", 51)
    started = time.perf_counter()
    result = runner.invoke(app, ["run", str(spec), "--engine", "local"])
    assert time.perf_counter() - started < 10
    assert result.exit_code == EXIT_USAGE, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert errors == [
        f"error: {tmp_path / 'batches' / '2024-05-02.parquet'}: 51 columns, more than execution.max_columns "
        "(50); select the columns to monitor or raise the limit"
    ]


def test_a_result_converts_as_a_deep_copy_would_in_one_walk() -> None:
    """`CheckResult.to_dict` walks the result once (a deep copy first cost a wide batch milliseconds a
    column) and gives what the standard library's `asdict` followed by the JSON conversion gives."""
    from dataclasses import asdict, dataclass

    from driftline.checks.result import CheckResult, json_safe

    @dataclass
    class Edge:
        at: float
        kind: str

    result = CheckResult(
        "drift.numeric",
        "c1",
        metrics={"psi": np.float64(0.25), "psi_p": float("nan")},
        thresholds={"psi": [0.1, 0.2, 0.3]},
        rows=np.int64(200),
        details={"edges": np.linspace(0, 1, 3), "cut": Edge(np.float32(0.5), "left"), "seen": ("a", 1)},
    )
    assert result.to_dict() == json_safe(asdict(result))
    assert result.to_dict()["details"]["cut"] == {"at": 0.5, "kind": "left"}
