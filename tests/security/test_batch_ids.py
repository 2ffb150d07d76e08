"""Item 3: a batch id is one plain path component. Given on the command line, listed from file names or
named by a SQL window, an id that could leave `batches/` or `.driftline/reports/` (or carry control
characters) is refused with one line naming it and exit 2; nothing is read, written or stored."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.pipeline import report_dir
from driftline.tasks.sources import BatchIdError, list_batch_ids, sql_window, valid_batch_id
from tests.demo import write_spec

runner = CliRunner()
ESCAPE = "../../../../outside/evil"


@pytest.fixture
def monitor(demo_data: Path, tmp_path: Path) -> Path:
    """A one-check monitor four folders deep, with a batch file planted outside its `batches/`."""
    work = tmp_path / "work" / "a" / "b"
    batches = work / "batches"
    batches.mkdir(parents=True)
    source = demo_data.parent / "data" / "batches" / "2016-06.parquet"
    shutil.copy(source, batches / "2016-06.parquet")
    (tmp_path / "outside").mkdir()
    shutil.copy(source, tmp_path / "outside" / "evil.parquet")
    return write_spec(
        demo_data,
        work,
        batches={"path": str(batches / "{batch}.parquet")},
        checks=["drift.numeric"],
        store_url=f"sqlite:///{tmp_path / 'history.db'}",
        retrain=None,
    )


def _refused(result, batch_id: str) -> None:
    assert result.exit_code == EXIT_USAGE, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: batch id") and repr(batch_id) in lines[0]


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_run_refuses_an_id_that_leaves_the_batches_folder(monitor: Path, engine: str) -> None:
    """The planted file is not read, no report lands outside `.driftline/reports/`, nothing is stored;
    under Prefect the id is refused before any server starts."""
    result = runner.invoke(app, ["run", str(monitor), "--batch", ESCAPE, "--engine", engine])
    _refused(result, ESCAPE)
    root = monitor.parents[3]
    assert list(root.rglob("report.html")) == []
    assert not (root / "history.db").exists()


@pytest.mark.parametrize("command", [["report"], ["backfill", "--engine", "local"]])
def test_report_and_backfill_refuse_it_too(monitor: Path, command: list[str]) -> None:
    result = runner.invoke(app, [*command, str(monitor), "--batch", "../x"])
    _refused(result, "../x")


def test_an_id_from_a_file_name_is_checked_the_same_way(monitor: Path) -> None:
    """A batch file whose name carries a terminal escape is never run (nor printed raw): it is skipped
    with a warning naming it escaped, and the newest valid batch runs."""
    batches = monitor.parent / "batches"
    (batches / "2016-07\x1b[2J.parquet").write_bytes((batches / "2016-06.parquet").read_bytes())
    result = runner.invoke(app, ["run", str(monitor), "--engine", "local"])
    assert result.exit_code in (0, 1), result.output
    assert "\x1b" not in result.stderr and "2016-07\\x1b[2J.parquet" in result.stderr
    assert list_batch_ids(str(batches / "{batch}.parquet")) == ["2016-06"]


@pytest.mark.parametrize(
    "batch_id",
    ["2024-05-01", "2024-05-01T06:00:00", "date=2024-05-01", "week 1", "données_2024", "b1 (copy)"],
)
def test_ordinary_ids_pass(batch_id: str) -> None:
    assert valid_batch_id(batch_id) == batch_id


@pytest.mark.parametrize(
    "batch_id",
    [
        "..",
        "../x",
        "a/b",
        "a\\b",
        "a..b",
        ".hidden",
        "-rf",
        "",
        "b\x1b[2J",
        "b\n",
        "b\u202e",
        "2024|x",
        "x" * 201,
    ],
)
def test_ids_that_could_escape_are_refused(batch_id: str) -> None:
    with pytest.raises(BatchIdError, match="is not allowed"):
        valid_batch_id(batch_id)


def test_sql_windows_and_report_folders_use_the_same_rule(monitor: Path) -> None:
    """A SQL batch id and a report folder (stored ids, drivers' summaries) go through the same check."""
    with pytest.raises(BatchIdError):
        sql_window("2024-05-01/../../x", 1.0)
    spec = load_spec(monitor)
    with pytest.raises(BatchIdError):
        report_dir(spec, ESCAPE)
    assert report_dir(spec, "2016-06") == spec.base_dir / ".driftline" / "reports" / spec.name / "2016-06"


def test_a_template_without_a_placeholder_names_its_one_batch_safely(tmp_path: Path) -> None:
    """A fixed file keeps its name as the id when that is valid; a glob of partitions is "batch"."""
    (tmp_path / "latest.parquet").write_bytes(b"")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-0.parquet").write_bytes(b"")
    assert list_batch_ids(str(tmp_path / "latest.parquet")) == ["latest"]
    assert list_batch_ids(str(tmp_path / "parts" / "*.parquet")) == ["batch"]
