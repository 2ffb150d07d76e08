"""The plain engine and the Prefect engine run the same core: same stored rows, alerts and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_FAILED, app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import AlertOutbox, Incident, ResultRow, Run
from tests.demo import write_spec

pytestmark = pytest.mark.usefixtures("prefect_server")

RESULT_COLUMNS = (
    "check",
    "target",
    "metric",
    "value",
    "status",
    "severity",
    "rows",
    "failing_rows",
    "reason",
)


def stored(url: str) -> dict[str, Any]:
    """Everything a run leaves in the history store, without ids, times and the engine's run id."""
    engine = open_store(url)
    try:
        with engine.connect() as conn:
            runs = conn.execute(select(Run.batch_id, Run.status, Run.worst_severity, Run.rows)).all()
            results = conn.execute(select(*(getattr(ResultRow, c) for c in RESULT_COLUMNS))).all()
            incidents = conn.execute(select(Incident.check, Incident.target, Incident.severity)).all()
            outbox = conn.execute(select(AlertOutbox.dedupe_key, AlertOutbox.destination)).all()
    finally:
        engine.dispose()
    return {
        "runs": sorted(map(tuple, runs)),
        "results": sorted(map(tuple, results), key=repr),
        "incidents": sorted(map(tuple, incidents)),
        "outbox": sorted(map(tuple, outbox)),
    }


def test_the_same_batch_run_by_both_engines_stores_the_same_history(demo_data: Path, tmp_path: Path) -> None:
    """`driftline run --engine local` and `--engine prefect` give identical rows, alerts and exit codes."""
    runner = CliRunner()
    outputs, histories = {}, {}
    for engine in ("local", "prefect"):
        folder = tmp_path / engine
        folder.mkdir()
        url = f"sqlite:///{folder / 'history.db'}"
        spec = write_spec(demo_data, folder, store_url=url, retrain=None)
        codes = []
        for batch in ("2016-06", "2018-12"):
            result = runner.invoke(app, ["run", str(spec), "--batch", batch, "--engine", engine, "--json"])
            codes.append(result.exit_code)
            outputs[engine, batch] = json.loads(result.stdout)
        assert codes == [0, EXIT_FAILED], engine
        histories[engine] = stored(url)

    assert histories["local"] == histories["prefect"]
    assert len(histories["local"]["results"]) > 100 and histories["local"]["incidents"]
    for batch in ("2016-06", "2018-12"):
        local, prefect = outputs["local", batch], outputs["prefect", batch]
        assert (local["engine"], prefect["engine"]) == ("local", "prefect")
        assert local["results"] == prefect["results"]
        assert local["alerts"] == prefect["alerts"]


def test_the_prefect_engine_without_an_api_uses_a_server_of_its_own_and_exits(
    demo_data: Path, tmp_path: Path
) -> None:
    """With no PREFECT_API_URL, `--engine prefect` starts a temporary server, runs the flow on it,
    hands its logs over before stopping it, and exits without lingering (and without orphans)."""
    import os
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    command = [
        sys.executable,
        "-m",
        "driftline",
        "run",
        str(spec),
        "--batch",
        "2016-06",
        "--engine",
        "prefect",
    ]
    # A temporary server's start-up alone takes 12-18 s on a quiet machine, far more on a loaded one.
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Error logging to API" not in done.stderr
    [(batch, status, _, rows)] = stored(url)["runs"]
    assert (batch, status, rows) == ("2016-06", "passed", 6000)
