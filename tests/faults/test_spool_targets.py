"""Database down: runs are spooled for their own store, listed by `driftline spool`, and replayed only
into that store, alerts included, once it is back."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_FAILED, app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox, Run
from tests.demo import count, write_spec

runner = CliRunner()


def run(spec: Path, batch: str) -> int:
    return runner.invoke(app, ["run", str(spec), "--batch", batch, "--engine", "local"]).exit_code


def waiting(spec: Path) -> list[dict]:
    return json.loads(runner.invoke(app, ["spool", str(spec), "--json"]).stdout)


def test_a_run_spooled_for_one_store_is_replayed_only_into_that_store(
    demo_data: Path, tmp_path: Path
) -> None:
    """The store is away (its folder does not exist yet): the failing run is spooled with its alert and
    listed; a run against another store leaves it alone; once the store is back, it gets both, first."""
    later = tmp_path / "later"
    home = f"sqlite:///{later / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=home, retrain=None)
    assert run(spec, "2018-12") == EXIT_FAILED  # the verdict stands; the run waits in the spool
    [queued] = waiting(spec)
    assert (queued["batch_id"], queued["alerts_due"], queued["store"]) == ("2018-12", True, home)

    other = f"sqlite:///{tmp_path / 'other.db'}"
    write_spec(demo_data, tmp_path, store_url=other, retrain=None)
    assert run(spec, "2016-06") == 0
    assert count(other, Run) == 1 and count(other, AlertOutbox) == 0  # nothing misrouted
    assert len(waiting(spec)) == 1

    later.mkdir()
    write_spec(demo_data, tmp_path, store_url=home, retrain=None)
    assert run(spec, "2016-06") == 0
    assert count(home, Run) == 2 and waiting(spec) == []
    engine = open_store(home)
    with engine.connect() as conn:
        outbox = conn.execute(select(AlertOutbox.batch_id).order_by(AlertOutbox.id)).scalars().all()
    engine.dispose()
    assert outbox[0] == "2018-12"  # the spooled failing batch's alert was kept and went first
