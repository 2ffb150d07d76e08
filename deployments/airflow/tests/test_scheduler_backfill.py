"""A real Airflow deployment: the scheduler, the dag-processor and the API server's execution API on a
PostgreSQL metadata database, the example DAG copied into a dags folder the way the README says, and
`airflow backfill create --max-active-runs 1` over three intervals.

The backfill must run the intervals one at a time, oldest first, store one driftline run per batch, and
start the retraining DAG (unpaused on creation) for the batch that fails, with nobody unpausing
anything by hand.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError

from driftline_airflow.example_dags import driftline_monitor

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

POSTGRES_ADMIN_URL = os.environ.get(
    "DRIFTLINE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
AIRFLOW = str(Path(sys.executable).with_name("airflow"))
MONITOR_DAG, RETRAIN_DAG = driftline_monitor.MONITOR_DAG_ID, driftline_monitor.RETRAIN_DAG_ID
# Logical dates (interval starts) 2016-12-01, 2017-06-01 and 2017-12-01: two passing batches, then the
# first that fails on the aged data.
FROM_DATE, TO_DATE = "2016-12-01", "2017-12-01"
BATCHES = ["2016-12", "2017-06", "2017-12"]
FAILING = "2017-12"
STARTUP_S, BACKFILL_S = 120, 300

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, procs: list[Server]) -> T:
    """Poll `probe` until it returns a value, failing after `timeout_s` or when a server has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value is not None:
            return value
        dead = [p.name for p in procs if p.popen.poll() is not None]
        assert not dead, f"{', '.join(dead)} exited while waiting for {what}: {procs[0].log.parent}"
        time.sleep(1)
    raise AssertionError(f"no {what} within {timeout_s:.0f} s (server logs under {procs[0].log.parent})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def metadata_db() -> Iterator[URL]:
    """A fresh PostgreSQL database for Airflow's metadata; skipped when PostgreSQL is unreachable
    (failed under CI=true)."""
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"driftline_airflow_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        message = f"PostgreSQL at {POSTGRES_ADMIN_URL} is unreachable: {exc.orig}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield make_url(POSTGRES_ADMIN_URL).set(database=name)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@dataclass
class Server:
    """An Airflow component started by the test, with its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """End it and every process it started (LocalExecutor workers, task supervisors)."""
        try:
            family = [
                psutil.Process(self.popen.pid),
                *psutil.Process(self.popen.pid).children(recursive=True),
            ]
        except psutil.NoSuchProcess:
            family = []
        for proc in family:
            proc.terminate()
        _, alive = psutil.wait_procs(family, timeout=20)
        for proc in alive:
            proc.kill()
        self.popen.wait(timeout=10)


def start(name: str, args: list[str], env: dict[str, str], folder: Path) -> Server:
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [AIRFLOW, *args], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Server(name, popen, log)


def airflow_env(root: Path, db: URL, api_port: int) -> dict[str, str]:
    """The deployment's configuration, all through environment variables."""
    airflow_db = db.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DRIFTLINE_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(root / "airflow"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": airflow_db,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
            "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "DRIFTLINE_DEMO_DIR": str(root / "demo"),
            "AIRFLOW_CONN_DRIFTLINE_DB": f'{{"conn_type": "sqlite", "host": "{root / "history.db"}"}}',
        }
    )
    return env


def install_example_dag(dags: Path) -> None:
    """What the README tells users: copy the example DAG module into the dags folder."""
    dags.mkdir(parents=True)
    shutil.copy(driftline_monitor.__file__, dags)


def run_airflow(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([AIRFLOW, *args], env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"airflow {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def rows(db: URL, query: str, **params: Any) -> list[dict[str, Any]]:
    engine = create_engine(db)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(text(query), params).mappings()]
    finally:
        engine.dispose()


def dags_parsed(db: URL) -> bool | None:
    found = rows(
        db, "SELECT dag_id FROM serialized_dag WHERE dag_id IN (:a, :b)", a=MONITOR_DAG, b=RETRAIN_DAG
    )
    return True if len({r["dag_id"] for r in found}) == 2 else None


def api_listening(port: int) -> bool | None:
    with socket.socket() as sock:
        return True if sock.connect_ex(("127.0.0.1", port)) == 0 else None


def backfill_done(db: URL) -> bool | None:
    """True once the backfill is complete and the retraining run it triggered has finished."""
    done = rows(db, "SELECT id FROM backfill WHERE completed_at IS NOT NULL")
    retrain = rows(
        db,
        "SELECT state FROM dag_run WHERE dag_id = :d AND state NOT IN ('success', 'failed')",
        d=RETRAIN_DAG,
    )
    started = rows(db, "SELECT 1 FROM dag_run WHERE dag_id = :d", d=RETRAIN_DAG)
    return True if done and started and not retrain else None


@pytest.fixture(scope="module")
def deployment(metadata_db: URL, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Migrate, start the servers, backfill three intervals, wait for the retraining run, stop."""
    root = tmp_path_factory.mktemp("airflow-deployment")
    install_example_dag(root / "dags")
    api_port = free_port()
    env = airflow_env(root, metadata_db, api_port)
    run_airflow(["db", "migrate"], env)
    servers: list[Server] = []
    try:
        for name, args in (
            ("api-server", ["api-server", "--apps", "execution", "-H", "127.0.0.1", "-p", str(api_port)]),
            ("dag-processor", ["dag-processor"]),
            ("scheduler", ["scheduler", "--skip-serve-logs"]),
        ):
            servers.append(start(name, args, env, root))
        wait_for("API server", lambda: api_listening(api_port), STARTUP_S, servers)
        wait_for("parsed example DAGs", lambda: dags_parsed(metadata_db), STARTUP_S, servers)
        run_airflow(
            [
                "backfill", "create", "--dag-id", MONITOR_DAG,
                "--from-date", FROM_DATE, "--to-date", TO_DATE, "--max-active-runs", "1",
            ],
            env,
        )  # fmt: skip
        wait_for("finished backfill", lambda: backfill_done(metadata_db), BACKFILL_S, servers)
        yield {"db": metadata_db, "root": root}
    finally:
        for server in reversed(servers):
            server.stop()


def monitor_runs(db: URL) -> list[dict[str, Any]]:
    """The monitor DAG's runs, oldest interval first, with when their tasks started and ended."""
    return rows(
        db,
        "SELECT r.run_id, r.run_type, r.state, r.data_interval_start, "
        "min(ti.start_date) AS first_start, max(ti.end_date) AS last_end "
        "FROM dag_run r JOIN task_instance ti ON ti.dag_id = r.dag_id AND ti.run_id = r.run_id "
        "WHERE r.dag_id = :d GROUP BY r.id ORDER BY r.data_interval_start",
        d=MONITOR_DAG,
    )


def batch(run: dict[str, Any]) -> str:
    start: datetime = run["data_interval_start"]
    return start.strftime("%Y-%m")


def test_backfill_creates_one_run_per_interval_and_nothing_else(deployment: dict[str, Any]) -> None:
    runs = monitor_runs(deployment["db"])
    assert [batch(r) for r in runs] == BATCHES
    assert {r["run_type"] for r in runs} == {"backfill"}  # unpaused on creation, yet nothing scheduled
    # Airflow names a run after its interval's end; the batch is the month the interval starts.
    assert [r["run_id"] for r in runs] == [
        "backfill__2017-06-01T00:00:00+00:00",
        "backfill__2017-12-01T00:00:00+00:00",
        "backfill__2018-06-01T00:00:00+00:00",
    ]
    states = {batch(r): r["state"] for r in runs}
    assert states == {"2016-12": "success", "2017-06": "success", FAILING: "failed"}


def test_intervals_ran_one_at_a_time_oldest_first(deployment: dict[str, Any]) -> None:
    runs = monitor_runs(deployment["db"])
    for earlier, later in itertools.pairwise(runs):
        assert earlier["last_end"] <= later["first_start"], (batch(earlier), batch(later))
    starts = [r["first_start"] for r in runs]
    assert starts == sorted(starts)


def test_one_stored_run_per_batch(deployment: dict[str, Any]) -> None:
    history = f"sqlite:///{deployment['root'] / 'history.db'}"
    stored = rows(make_url(history), "SELECT batch_id, status FROM runs ORDER BY id")
    assert [(r["batch_id"], r["status"]) for r in stored] == [
        ("2016-12", "passed"),
        ("2017-06", "passed"),
        (FAILING, "failed"),
    ]


def test_the_failing_batch_retrained_without_unpausing(deployment: dict[str, Any]) -> None:
    retrain = rows(deployment["db"], "SELECT run_id, state FROM dag_run WHERE dag_id = :d", d=RETRAIN_DAG)
    assert [(r["run_id"], r["state"]) for r in retrain] == [(f"driftline__{FAILING}", "success")]
    paused = rows(deployment["db"], "SELECT dag_id FROM dag WHERE is_paused")
    assert paused == []
