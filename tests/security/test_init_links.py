"""`driftline init` wrote through a dangling link planted among its files (creating the link's target
wherever it pointed) and left its files at the umask's mode. It now refuses a link among the files and
folders it writes, and writes every file owner-only (0600, folders 0700)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app

runner = CliRunner()


@pytest.mark.parametrize("planted", ["monitor.yaml", "prefect.yaml", "data/batches/2016-06.parquet", "data"])
def test_a_planted_link_is_refused_and_not_written_through(tmp_path: Path, planted: str) -> None:
    project, target = tmp_path / "project", tmp_path / "elsewhere" / "target"
    link = project / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    result = runner.invoke(app, ["init", str(project), "--force"])
    assert result.exit_code == EXIT_USAGE, result.output
    assert f"{link}: is a symbolic link" in result.stderr
    assert not target.parent.exists() and link.is_symlink()


def test_files_are_owner_only_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0o002)
    try:
        result = runner.invoke(app, ["init", str(tmp_path / "project")])
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    written = [p for p in (tmp_path / "project").rglob("*")]
    files = [p for p in written if p.is_file()]
    assert len(files) == 9
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert {stat.S_IMODE(p.stat().st_mode) for p in written if p.is_dir()} == {0o700}
