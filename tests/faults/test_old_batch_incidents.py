"""Incidents follow batch time: re-running an older batch updates its history, never today's incidents."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from driftline import load_spec, run_monitor
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox, Incident
from tests.demo import write_spec


def incidents(url: str) -> list[tuple[str, str, str, str]]:
    """(check, target, status, last batch) of every incident, in id order."""
    engine = open_store(url)
    try:
        with Session(engine) as session:
            rows = session.scalars(select(Incident).order_by(Incident.id))
            return [(r.check, r.target, r.status, r.last_batch) for r in rows]
    finally:
        engine.dispose()


def outbox(url: str) -> list[str]:
    """Batch id of every queued or sent alert message, in id order."""
    engine = open_store(url)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(AlertOutbox.batch_id).order_by(AlertOutbox.id)))
    finally:
        engine.dispose()


def test_rerunning_an_older_passing_batch_leaves_the_newer_batch_incidents_open(
    demo_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2016-06 passes, 2018-12 opens incidents; re-running 2016-06 resolves none and alerts nothing."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = load_spec(write_spec(demo_data, tmp_path, store_url=url, retrain=None, alerts={"console": True}))
    assert run_monitor(spec, "2016-06").status == "passed"
    assert run_monitor(spec, "2018-12").status == "failed"
    opened = incidents(url)
    assert opened and {status for *_, status, _ in opened} == {"open"}
    assert outbox(url) == ["2018-12"]

    rerun = run_monitor(spec, "2016-06")
    assert rerun.status == "passed"
    assert incidents(url) == opened
    assert outbox(url) == ["2018-12"]
    assert "older than batch 2018-12" in " ".join(rerun.alerts.get("reasons", []))


def test_a_newer_passing_batch_still_resolves_what_an_older_one_opened(
    demo_data: Path, tmp_path: Path
) -> None:
    """In batch order, incidents open on the failing batch and resolve on the next passing one (with
    `resolve_after: 1`)."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    alerts = {"console": True, "resolve_after": 1}
    spec = load_spec(write_spec(demo_data, tmp_path, store_url=url, retrain=None, alerts=alerts))
    run_monitor(spec, "2018-12")
    opened = incidents(url)
    assert opened
    # A later batch: the passing 2016-06 data under a newer batch id.
    newest = demo_data.parent / "data" / "batches"
    (newest / "2019-06.parquet").write_bytes((newest / "2016-06.parquet").read_bytes())
    try:
        run_monitor(spec, "2019-06")
    finally:
        (newest / "2019-06.parquet").unlink()
    assert {status for *_, status, _ in incidents(url)} == {"resolved"}
    assert outbox(url) == ["2018-12", "2019-06"]
