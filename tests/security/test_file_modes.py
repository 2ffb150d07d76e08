"""Item 6: every file driftline writes is readable by its owner only (0600, folders 0700), whatever the
umask: the report, the SQLite history (with its WAL files), the spool and the caches."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from driftline import load_spec, run_monitor
from driftline.tasks.history.db import open_store
from tests.tasks.test_reference_cache import write_monitor


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_run_writes_owner_only_files(tmp_path: Path, open_umask: None) -> None:
    spec = load_spec(write_monitor(tmp_path, ["drift.numeric"]))
    summary = run_monitor(spec, "b1")
    state = tmp_path / ".driftline"
    written = [p for p in state.rglob("*") if p.is_file()]
    engine = open_store(spec.database_url())
    with engine.connect() as conn:  # the WAL files exist while a connection is open
        conn.execute(text("SELECT count(*) FROM runs"))
        history = {p.name: oct(mode(p)) for p in tmp_path.glob("h.db*")}
    engine.dispose()
    assert history == {"h.db": "0o600", "h.db-wal": "0o600", "h.db-shm": "0o600"}
    assert Path(summary.report) in written and any(p.suffix == ".npz" for p in written)
    assert {str(p): oct(mode(p)) for p in written if mode(p) != 0o600} == {}
    folders = [p for p in state.rglob("*") if p.is_dir()] + [state]
    assert {str(p): oct(mode(p)) for p in folders if mode(p) != 0o700} == {}


def test_the_spool_is_owner_only(tmp_path: Path, open_umask: None) -> None:
    from driftline.tasks.run.spool import spool_run

    path = spool_run({"monitor": "m", "batch_id": "b"}, tmp_path / "spool", "sqlite:///h.db")
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)
