"""`evaluate_files`: checks on two Parquet files, feature drift a group of columns at a time, with the
results `evaluate` gives on the whole frames and memory that stays flat as the columns grow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmarks.wide_tables import TreeMemory, write_tables
from driftline.checks.columns import infer_columns
from driftline.checks.drift import NumericDrift
from driftline.flows.cli import app
from driftline.tasks.config.spec import ExecutionSpec
from driftline.tasks.run import evaluate as evaluate_module
from driftline.tasks.run.evaluate import ROLE_HEAD_ROWS, ParquetPair, evaluate, evaluate_files
from driftline.tasks.sources import SourceError, read_table

NUMERIC = 100
CATEGORIES = list("abcde")


def frame(rng: np.random.Generator, rows: int, shift: float) -> pd.DataFrame:
    """`NUMERIC` float32 features (every third shifted by `shift`), a float64 and an integer feature,
    eight text ones, a label and a prediction: 114 columns with NaN, ±inf and an all-NaN column."""
    data: dict[str, np.ndarray] = {}
    for i in range(NUMERIC):
        data[f"x{i:03d}"] = (rng.standard_normal(rows) + shift * (i % 3 == 0)).astype(np.float32)
    data["x005"][: rows // 50] = np.nan
    data["x007"][: rows // 100] = np.inf
    data["x008"][rows // 2 : rows // 2 + 7] = -np.inf
    data["x009"][:] = np.nan
    data["wide"] = rng.lognormal(0, 2 + shift, rows)
    data["count"] = rng.poisson(3 + shift, rows)
    for j in range(8):
        data[f"cat{j}"] = rng.choice(CATEGORIES[: 3 + j % 3], rows)
    data["label"] = rng.integers(0, 2, rows)
    data["prediction"] = np.where(rng.random(rows) < 0.8, data["label"], 1 - data["label"])
    return pd.DataFrame(data)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """5,000 reference rows and 4,000 current ones that miss one numeric and one text feature."""
    rng = np.random.default_rng(11)
    folder = tmp_path_factory.mktemp("wide")
    reference, current = frame(rng, 5_000, 0.0), frame(rng, 4_000, 1.0).drop(columns=["x050", "cat2"])
    reference.to_parquet(folder / "reference.parquet")
    current.to_parquet(folder / "current.parquet")
    return folder / "reference.parquet", folder / "current.parquet"


CHECKS = ["drift.numeric", "drift.prediction", "drift.categorical"]
# Declared roles: a text column among the numeric features, which its own target reports.
DECLARED = {"numeric": ["x000", "x001", "cat0", *(f"x{i:03d}" for i in range(2, 60))], "label": "label"}


@pytest.mark.parametrize("roles", [None, DECLARED], ids=["inferred", "declared"])
def test_files_give_the_results_of_the_whole_frames(files, roles) -> None:
    reference, current = files
    checks = [*CHECKS, NumericDrift(tests=("ks", "wasserstein"))]
    whole = evaluate(checks, read_table(reference), read_table(current), columns=roles)
    grouped = evaluate_files(checks, reference, current, columns=roles, group_columns=16)
    assert [r.to_dict() for r in grouped] == [r.to_dict() for r in whole]
    features = 102 if roles is None else 61  # several groups of 16
    numeric = [r for r in grouped if r.check == "drift.numeric"]
    assert len(numeric) == 2 * features
    by_target = {r.target: r for r in numeric[:features]}
    assert by_target["x050"].status == "error" and "x050" in by_target["x050"].reason
    assert by_target["x003"].severity == "high" and by_target["x001"].severity == "none"
    if roles is None:
        assert by_target["x009"].status == "skipped"
        assert by_target["x007"].details["inf_rows"] == 4_000 // 100
    else:
        assert by_target["cat0"].status == "error" and "not numeric" in by_target["cat0"].reason


def test_a_worker_reads_its_group_and_the_role_columns_as_stored(files, monkeypatch) -> None:
    reference, current = files
    reads: list[tuple[str, list[str], set[str]]] = []
    read = evaluate_module.read_parquet_columns

    def recorded(path: Path, columns: list[str]) -> pd.DataFrame:
        frame = read(path, columns)
        reads.append((path.stem, columns, {str(t) for t in frame.dtypes}))
        return frame

    monkeypatch.setattr(evaluate_module, "read_parquet_columns", recorded)
    execution = ExecutionSpec(isolation="thread")  # the reads happen in this process
    evaluate_files(["drift.numeric"], reference, current, execution=execution, group_columns=40)
    groups = sorted(columns for stem, columns, _ in reads if stem == "reference" and columns != ["label"])
    features = [c for columns in groups for c in columns if c not in ("label", "prediction")]
    assert [len(columns) for columns in groups] == [42, 42, 23]  # 101 features both files have, 2 roles
    assert features == [c for c in infer_columns(read_table(reference)).numeric if c != "x050"]
    assert {"float32", "float64", "int64"} == set().union(*(dtypes for _, _, dtypes in reads))


def test_progress_is_told_after_each_round_of_workers(files) -> None:
    reference, current = files
    told: list[tuple[int, int]] = []
    execution = ExecutionSpec(workers=2)
    found = evaluate_files(
        ["drift.numeric"],
        reference,
        current,
        execution=execution,
        group_columns=25,
        progress=lambda *a: told.append(a),
    )
    assert told == [(2, 5), (4, 5), (5, 5)] and len(found) == 102


def test_roles_come_from_the_head_and_the_task_from_the_whole_label(tmp_path) -> None:
    rows = ROLE_HEAD_ROWS + 2_000
    rng = np.random.default_rng(2)
    label = np.r_[rng.integers(0, 2, ROLE_HEAD_ROWS), np.full(2_000, 2)]  # a third class after the head
    data = pd.DataFrame(
        {"label": label, "x": rng.standard_normal(rows), "city": rng.choice(CATEGORIES, rows)}
    )
    data.to_parquet(tmp_path / "reference.parquet")
    roles = ParquetPair.of(tmp_path / "reference.parquet", tmp_path / "reference.parquet").roles(None)
    assert roles == infer_columns(data) and roles.task == "multiclass"


def test_a_missing_file_is_named(files, tmp_path) -> None:
    reference, _ = files
    with pytest.raises(SourceError, match=r"nope\.parquet: no such file"):
        evaluate_files(["drift.numeric"], reference, tmp_path / "nope.parquet")


def test_cli_shows_group_progress_on_parquet_files_unless_json(tmp_path) -> None:
    rng = np.random.default_rng(5)
    wide = {f"f{i:03d}": rng.standard_normal(200).astype(np.float32) for i in range(260)}
    pd.DataFrame(wide).to_parquet(tmp_path / "ref.parquet")
    pd.DataFrame(wide).iloc[:150].to_parquet(tmp_path / "cur.parquet")
    args = ["evaluate", "-c", "drift.numeric", "-r", str(tmp_path / "ref.parquet"), "--current"]
    shown = CliRunner().invoke(app, [*args, str(tmp_path / "cur.parquet")])
    assert shown.exit_code == 0, shown.output
    assert "column groups evaluated: 4/6" in shown.stderr and "column groups evaluated: 6/6" in shown.stderr
    quiet = CliRunner().invoke(app, [*args, str(tmp_path / "cur.parquet"), "--json"])
    assert quiet.exit_code == 0 and "column groups" not in quiet.stderr
    assert [r["target"] for r in json.loads(quiet.stdout)] == list(wide)


# A process that evaluates drift.numeric on two files, 25 columns a group (so that even 100 columns
# keep the default four workers busy).
MEASURED = (
    "import sys\nfrom pathlib import Path\nfrom driftline.tasks.run.evaluate import evaluate_files\n"
    "evaluate_files(['drift.numeric'], Path(sys.argv[1]), Path(sys.argv[2]), group_columns=25)\n"
)


def peak_memory(folder: Path, rows: int, columns: int) -> int:
    """The peak resident memory (summed over the process tree) of `MEASURED` on fresh files."""
    folder.mkdir()
    reference, current = write_tables(folder, rows, columns)
    process = subprocess.Popen([sys.executable, "-c", MEASURED, str(reference), str(current)])
    with TreeMemory(process.pid) as memory:
        assert process.wait() == 0
    return memory.peak_rss


@pytest.mark.e2e
def test_memory_stays_flat_as_the_columns_grow(tmp_path) -> None:
    peaks = {columns: peak_memory(tmp_path / str(columns), 200_000, columns) for columns in (100, 200, 400)}
    data_growth = 300 * 200_000 * 4 * 2  # 300 more float32 columns in each file
    assert peaks[400] < 1.5 * peaks[100], peaks
    assert peaks[400] - peaks[100] < data_growth / 4, peaks
