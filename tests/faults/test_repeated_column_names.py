"""A table that gives one name to two columns (through the pandas metadata of a Parquet file, or a SQL
query's aliases) is refused when it is loaded, with one line naming the repeated columns (exit 2),
instead of reaching the checks, which failed with AttributeError while the run passed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.sources import SourceError, read_sql
from tests.faults.small_monitor import write_monitor

runner = CliRunner()


def _renamed(source: Path, target: Path, renames: dict[str, str]) -> Path:
    """`source` written to `target` with its pandas metadata naming columns `renames` says (the Arrow
    field names stay distinct; pandas gives the frame the metadata's names)."""
    table = pq.read_table(source)
    meta = json.loads(table.schema.metadata[b"pandas"])
    for column in meta["columns"]:
        column["name"] = renames.get(column["name"], column["name"])
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}), target)
    assert list(pd.read_parquet(target).columns).count("age") == 2
    return target


def _one_error_line(result, name: str) -> str:
    assert result.exit_code == EXIT_USAGE, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error") or "Traceback" in line]
    assert len(lines) == 1 and name in lines[0], result.stderr
    assert "column name(s) ['age'] appear more than once" in lines[0]
    return lines[0]


@pytest.mark.parametrize("where", ["batch", "reference"])
def test_a_run_refuses_repeated_names_from_pandas_metadata(tmp_path: Path, where: str) -> None:
    spec = write_monitor(tmp_path)
    path = tmp_path / ("batches/2024-05-01.parquet" if where == "batch" else "reference.parquet")
    _renamed(path, path, {"income": "age"})
    result = runner.invoke(app, ["run", str(spec), "--engine", "local"])
    _one_error_line(result, path.name)


def test_evaluate_refuses_them_too(tmp_path: Path) -> None:
    write_monitor(tmp_path)
    bad = _renamed(tmp_path / "reference.parquet", tmp_path / "current.parquet", {"income": "age"})
    result = runner.invoke(
        app,
        ["evaluate", "-c", "drift.numeric", "-r", str(tmp_path / "reference.parquet"), "--current", str(bad)],
    )
    _one_error_line(result, "current.parquet")


def test_a_query_with_repeated_aliases_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'data.db'}"
    pd.DataFrame({"age": np.arange(3), "income": np.arange(3)}).to_sql("t", url, index=False)
    with pytest.raises(
        SourceError, match=r"query on sqlite:///.*data\.db: column name\(s\) \['age'\] appear"
    ):
        read_sql(url, "select age, income as age from t")
