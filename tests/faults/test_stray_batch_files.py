"""A stray file in the batch folder whose name is no batch id (an editor's lock file, a name with a
bidi override) is skipped with one warning instead of failing every default run, and a digit-like
character that is no decimal digit (`²`) sorts as text instead of crashing the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.sources import list_batch_ids
from tests.faults.small_monitor import write_monitor

runner = CliRunner()


def _run(spec: Path, *options: str):
    return runner.invoke(app, ["run", str(spec), "--engine", "local", "--json", *options])


def test_stray_files_are_skipped_with_one_warning(tmp_path: Path) -> None:
    spec = write_monitor(tmp_path)
    batches = tmp_path / "batches"
    for stray in ("~lock.2024-05-09", "2024-05-09\u202e", "x|y"):
        shutil.copy(batches / "2024-05-01.parquet", batches / f"{stray}.parquet")
    result = _run(spec)
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["batch_id"] == "2024-05-01"
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "skipped 3 file(s) whose name is not a batch id" in warnings[0]
    assert "\u202e" not in result.stderr


def test_a_stray_file_asked_for_by_name_is_still_refused(tmp_path: Path) -> None:
    spec = write_monitor(tmp_path)
    result = _run(spec, "--batch", "x|y")
    assert result.exit_code == EXIT_USAGE and "'x|y' is not allowed" in result.stdout


def test_a_superscript_digit_sorts_as_text(tmp_path: Path) -> None:
    """`b1²` is a batch id; natural order puts it after `b1` and before `b2` and `b10`."""
    spec = write_monitor(tmp_path)
    batches = tmp_path / "batches"
    for batch_id in ("b1", "b1²", "b2", "b10"):
        shutil.copy(batches / "2024-05-01.parquet", batches / f"{batch_id}.parquet")
    (batches / "2024-05-01.parquet").unlink()
    assert list_batch_ids(str(batches / "{batch}.parquet")) == ["b1", "b1²", "b2", "b10"]
    result = _run(spec)
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["batch_id"] == "b10"
