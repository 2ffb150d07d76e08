"""A process killed just after the run's results were stored left no report: the report is written
before the run is stored, so a stored run always has its report (with the reference's row count)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import Run
from driftline.tasks.run import pipeline
from tests.faults.small_monitor import write_monitor


class Killed(BaseException):
    """Stands in for the signal that ends the process once the run is stored."""


def test_a_run_killed_once_stored_has_its_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(write_monitor(tmp_path))
    stored = pipeline.persist_run

    def store_then_die(context, record):
        stored(context, record)
        raise Killed

    monkeypatch.setattr(pipeline, "persist_run", store_then_die)
    with pytest.raises(Killed):
        pipeline.run_monitor(spec, alerts=False, retrain=False)
    engine = open_store(spec.database_url())
    try:
        with engine.connect() as conn:
            statuses = conn.execute(select(Run.status)).scalars().all()
    finally:
        engine.dispose()
    assert statuses and "running" not in statuses
    report = pipeline.report_dir(spec, "2024-05-01") / "report.html"
    assert report.is_file()
    assert '<span class="label">reference rows</span><b>200</b>' in report.read_text()
