"""Item 7: the history database is down and the spool's disk is full. The run is not lost: its summary
is printed as JSON, the exit code (4) names that it was not kept, and no partial file is left."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import app
from driftline.flows.cli_common import EXIT_NOT_KEPT
from driftline.tasks.run import driver
from driftline.tasks.run.steps import RetryPolicy
from tests.demo import write_spec

runner = CliRunner()


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every temporary file driftline writes through lands on a full disk: it is created, and writing
    it fails with ENOSPC (as on a full volume, where the directory entry still fits)."""
    create = tempfile.mkstemp

    def full(*args, **kwargs):
        fd, path = create(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), path

    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    monkeypatch.setattr(tempfile, "mkstemp", full)
    monkeypatch.setattr(driver, "IO_RETRIES", RetryPolicy(delays=()))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and ".tmp" in p.name)


@pytest.mark.parametrize("as_json", [False, True], ids=["plain", "--json"])
def test_a_run_neither_stored_nor_spooled_is_printed_and_exits_4(
    demo_data: Path, tmp_path: Path, disk_full: None, as_json: bool
) -> None:
    away = f"sqlite:///{tmp_path / 'absent' / 'history.db'}"  # the folder does not exist: database down
    spec = write_spec(demo_data, tmp_path, store_url=away, retrain=None)
    command = ["run", str(spec), "--batch", "2018-12", "--engine", "local", *(["--json"] if as_json else [])]
    result = runner.invoke(app, command)
    assert result.exit_code == EXIT_NOT_KEPT, result.output
    printed = json.loads(result.stdout)
    summary = printed["run"] if as_json else printed
    assert (summary["batch_id"], summary["status"], summary["worst_severity"]) == (
        "2018-12",
        "failed",
        "high",
    )
    assert any(r["severity"] == "high" for r in summary["results"])
    error = " ".join(result.stderr.split())
    assert "run not kept" in error and "history database" in error
    assert os.strerror(errno.ENOSPC) in error and "spool" in error
    assert leftovers(tmp_path) == []
    assert not list((tmp_path / ".driftline" / "spool").glob("*.json"))
