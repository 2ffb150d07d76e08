"""A real Airflow deployment: the scheduler, the dag-processor and the API server's execution API on a
PostgreSQL metadata database, the example DAGs copied into a dags folder the way the README says, the
`driftline` connection giving the history store and the report link template, and every way a run
starts:

1. a manual run with a logical date (2017-06-01): it monitors that date's batch, and holds the date;
2. `airflow backfill create --max-active-runs 1 --reprocess-behavior completed` over three intervals: the
   intervals run one at a time, oldest first, the date the manual run held included;
3. a trigger as the UI's button makes it (no logical date): the newest batch;
4. a trigger with `batch_id` in its conf;
5. the scoring DAG announcing a batch on the batch asset: an asset-triggered monitor run of that batch.

Each monitor run emits its verdict on the verdict asset; the retraining DAG (scheduled on it, unpaused on
creation) retrains for the failing verdicts only and is skipped for the others. The monitor task's extra
link opens its report, served over HTTP from the report folder.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
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
SCORE_DAG = driftline_monitor.SCORE_DAG_ID
DAGS = (MONITOR_DAG, RETRAIN_DAG, SCORE_DAG)
# Logical dates (interval starts) 2016-12-01, 2017-06-01 and 2017-12-01: two passing batches, then the
# first that fails on the aged data.
FROM_DATE, TO_DATE = "2016-12-01", "2017-12-01"
BATCHES = ["2016-12", "2017-06", "2017-12"]
FAILING = "2017-12"
STRAY_DATE = "2017-06-01T00:00:00+00:00"
NEWEST, CONF_BATCH, SCORED_BATCH = "2018-12", "2016-06", "2017-06"
STARTUP_S, RUNS_S = 120, 600

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
    """Start a server (the whole command line), logging to its own file in `folder`."""
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Server(name, popen, log)


def airflow_env(root: Path, db: URL, api_port: int, report_port: int = 0) -> dict[str, str]:
    """The deployment's configuration, all through environment variables."""
    airflow_db = db.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DRIFTLINE_"))}
    driftline_conn = {
        "conn_type": "driftline",
        "extra": {
            "store_url": f"sqlite:///{root / 'history.db'}",
            "report_url": f"http://127.0.0.1:{report_port}/{{monitor}}/{{batch_id}}/{{file}}",
        },
    }
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
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "DRIFTLINE_DEMO_DIR": str(root / "demo"),
            "AIRFLOW_CONN_DRIFTLINE_DEFAULT": json.dumps(driftline_conn),
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
    found = rows(db, "SELECT dag_id FROM serialized_dag WHERE dag_id = ANY(:ids)", ids=list(DAGS))
    return True if len({r["dag_id"] for r in found}) == len(DAGS) else None


def api_listening(port: int) -> bool | None:
    with socket.socket() as sock:
        return True if sock.connect_ex(("127.0.0.1", port)) == 0 else None


def finished(db: URL, dag_id: str, run_id: str) -> bool | None:
    found = rows(db, "SELECT state FROM dag_run WHERE dag_id = :d AND run_id = :r", d=dag_id, r=run_id)
    return True if found and found[0]["state"] in ("success", "failed") else None


def settled(db: URL, monitor_runs: int) -> bool | None:
    """True once the monitor DAG has `monitor_runs` finished runs, the backfill is complete, and every
    verdict event has been consumed by a finished retraining run."""
    runs = rows(db, "SELECT state FROM dag_run WHERE dag_id = :d", d=MONITOR_DAG)
    done = [r for r in runs if r["state"] in ("success", "failed")]
    unfinished = rows(db, "SELECT 1 FROM dag_run WHERE state NOT IN ('success', 'failed')")
    queued = rows(db, "SELECT 1 FROM asset_dag_run_queue")
    backfill = rows(db, "SELECT 1 FROM backfill WHERE completed_at IS NULL")
    ok = len(done) == len(runs) == monitor_runs and not unfinished and not queued and not backfill
    return True if ok else None


def monitored(db: URL, run_id: str) -> dict[str, Any]:
    """The monitor task's XCom summary of a run."""
    found = rows(
        db,
        "SELECT value FROM xcom WHERE dag_id = :d AND run_id = :r AND task_id = 'monitor' "
        "AND key = 'return_value'",
        d=MONITOR_DAG,
        r=run_id,
    )
    assert found, f"no monitor summary for run {run_id}"
    value = found[0]["value"]
    return json.loads(value) if isinstance(value, str) else value


@pytest.fixture(scope="module")
def deployment(metadata_db: URL, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Migrate, start the servers, then start runs every way in turn; wait for all of them."""
    root = tmp_path_factory.mktemp("airflow-deployment")
    install_example_dag(root / "dags")
    api_port, report_port = free_port(), free_port()
    env = airflow_env(root, metadata_db, api_port, report_port)
    run_airflow(["db", "migrate"], env)
    reports = root / "demo" / ".driftline" / "reports"
    reports.mkdir(parents=True)
    servers: list[Server] = []
    try:
        for name, args in (
            ("api-server", ["api-server", "--apps", "execution", "-H", "127.0.0.1", "-p", str(api_port)]),
            ("dag-processor", ["dag-processor"]),
            ("scheduler", ["scheduler", "--skip-serve-logs"]),
        ):
            servers.append(start(name, [AIRFLOW, *args], env, root))
        # what the report link template points at: the report folder, served over HTTP
        report_server = [sys.executable, "-m", "http.server", "-b", "127.0.0.1", "-d", str(reports)]
        servers.append(start("report-server", [*report_server, str(report_port)], env, root))
        wait_for("API server", lambda: api_listening(api_port), STARTUP_S, servers)
        wait_for("parsed example DAGs", lambda: dags_parsed(metadata_db), STARTUP_S, servers)
        # 1. the stray run: a manual run with a logical date
        run_airflow(["dags", "trigger", MONITOR_DAG, "--logical-date", STRAY_DATE], env)
        (stray_run,) = [r["run_id"] for r in monitor_runs(metadata_db, "manual", tasks=False)]
        wait_for("the manual run", lambda: finished(metadata_db, MONITOR_DAG, stray_run), RUNS_S, servers)
        stray = {"run_id": stray_run, **monitored(metadata_db, stray_run)}
        # 2. the backfill over its date, reprocessing it
        run_airflow(
            [
                "backfill", "create", "--dag-id", MONITOR_DAG, "--from-date", FROM_DATE, "--to-date", TO_DATE,
                "--max-active-runs", "1", "--reprocess-behavior", "completed",
            ],
            env,
        )  # fmt: skip
        wait_for("finished backfill", lambda: settled(metadata_db, 3), RUNS_S, servers)
        # 3-5. the UI's Trigger button, a conf batch_id, a scored batch's asset event
        run_airflow(["dags", "trigger", MONITOR_DAG, "--run-id", "ui_newest"], env)
        conf = json.dumps({"batch_id": CONF_BATCH})
        run_airflow(["dags", "trigger", MONITOR_DAG, "--run-id", "conf_batch", "--conf", conf], env)
        scored = json.dumps({"batch_id": SCORED_BATCH})
        run_airflow(["dags", "trigger", SCORE_DAG, "--run-id", "scored", "--conf", scored], env)
        wait_for("every run", lambda: settled(metadata_db, 6), RUNS_S, servers)
        yield {"db": metadata_db, "root": root, "stray": stray}
    finally:
        for server in reversed(servers):
            server.stop()


def monitor_runs(db: URL, run_type: str = "backfill", tasks: bool = True) -> list[dict[str, Any]]:
    """The monitor DAG's runs of a type, oldest logical date first, with when their tasks started and
    ended (`tasks`)."""
    if not tasks:
        query = "SELECT run_id FROM dag_run WHERE dag_id = :d AND run_type = :t ORDER BY logical_date"
        return rows(db, query, d=MONITOR_DAG, t=run_type)
    return rows(
        db,
        "SELECT r.run_id, r.run_type, r.state, r.data_interval_start, r.logical_date, "
        "min(ti.start_date) AS first_start, max(ti.end_date) AS last_end "
        "FROM dag_run r JOIN task_instance ti ON ti.dag_id = r.dag_id AND ti.run_id = r.run_id "
        "WHERE r.dag_id = :d AND r.run_type = :t GROUP BY r.id ORDER BY r.logical_date",
        d=MONITOR_DAG,
        t=run_type,
    )


def batch(run: dict[str, Any]) -> str:
    start: datetime = run["logical_date"]
    return start.strftime("%Y-%m")


def test_a_manual_run_with_a_logical_date_monitors_that_dates_batch(deployment: dict[str, Any]) -> None:
    assert deployment["stray"]["batch_id"] == "2017-06"


def test_the_backfill_reprocesses_the_date_a_manual_run_took(deployment: dict[str, Any]) -> None:
    runs = monitor_runs(deployment["db"])
    assert [batch(r) for r in runs] == BATCHES
    # Airflow names a backfill run after its interval's end; the reprocessed manual run keeps its id
    assert [r["run_id"] for r in runs] == [
        "backfill__2017-06-01T00:00:00+00:00",
        deployment["stray"]["run_id"],
        "backfill__2018-06-01T00:00:00+00:00",
    ]
    states = {batch(r): r["state"] for r in runs}
    assert states == {"2016-12": "success", "2017-06": "success", FAILING: "failed"}
    # the reprocessed run monitored its date's batch, not the interval Airflow inferred for it
    assert [monitored(deployment["db"], r["run_id"])["batch_id"] for r in runs] == BATCHES
    assert not monitor_runs(deployment["db"], "scheduled")  # unpaused on creation, yet nothing scheduled


def test_intervals_ran_one_at_a_time_oldest_first(deployment: dict[str, Any]) -> None:
    runs = monitor_runs(deployment["db"])
    for earlier, later in itertools.pairwise(runs):
        assert earlier["last_end"] <= later["first_start"], (batch(earlier), batch(later))
    starts = [r["first_start"] for r in runs]
    assert starts == sorted(starts)


def test_each_trigger_monitors_the_batch_it_means(deployment: dict[str, Any]) -> None:
    db = deployment["db"]
    assert monitored(db, "ui_newest")["batch_id"] == NEWEST  # no logical date: the newest batch
    assert monitored(db, "conf_batch")["batch_id"] == CONF_BATCH
    (asset_run,) = monitor_runs(db, "asset_triggered")
    assert monitored(db, asset_run["run_id"])["batch_id"] == SCORED_BATCH
    assert asset_run["logical_date"] is None


def test_one_stored_run_per_batch(deployment: dict[str, Any]) -> None:
    history = f"sqlite:///{deployment['root'] / 'history.db'}"
    stored = rows(make_url(history), "SELECT batch_id, status FROM runs ORDER BY batch_id")
    assert [(r["batch_id"], r["status"]) for r in stored] == [
        (CONF_BATCH, "passed"),
        ("2016-12", "passed"),
        ("2017-06", "passed"),
        (FAILING, "failed"),
        (NEWEST, "failed"),
    ]


def verdict_runs(db: URL) -> list[dict[str, Any]]:
    """Every verdict event with the retraining run that consumed it and that run's task state."""
    return rows(
        db,
        "SELECT e.extra, r.run_id, ti.state FROM asset_event e JOIN asset a ON a.id = e.asset_id "
        "JOIN dagrun_asset_event l ON l.event_id = e.id JOIN dag_run r ON r.id = l.dag_run_id "
        "JOIN task_instance ti ON ti.dag_id = r.dag_id AND ti.run_id = r.run_id "
        "WHERE a.uri = :uri AND r.dag_id = :d ORDER BY e.timestamp",
        uri=driftline_monitor.VERDICTS.uri,
        d=RETRAIN_DAG,
    )


def test_verdict_events_retrain_the_failing_batches_only(deployment: dict[str, Any]) -> None:
    found = verdict_runs(deployment["db"])
    verdicts = {(r["extra"]["batch_id"], r["extra"]["verdict"]) for r in found}
    assert verdicts == {
        (CONF_BATCH, "passed"),
        ("2016-12", "passed"),
        ("2017-06", "passed"),
        (FAILING, "failed"),
        (NEWEST, "failed"),
    }
    for run in found:
        extra = run["extra"]
        assert extra["monitor"] == "acs-employment" and Path(extra["report_path"]).is_file()
        if extra["verdict"] == "failed":
            assert run["state"] == "success", extra["batch_id"]
            assert extra["failing_checks"] and extra["retrain"]["batch_id"] == extra["batch_id"]
        else:
            assert extra["failing_checks"] == []
    retrained = {r["extra"]["batch_id"] for r in found if r["state"] == "success"}
    assert retrained == {FAILING, NEWEST}
    paused = rows(deployment["db"], "SELECT dag_id FROM dag WHERE is_paused")
    assert paused == []


def test_the_notifier_sent_the_failing_verdict(deployment: dict[str, Any]) -> None:
    """The monitor's failure callback: no Slack in the connection, so the verdict is in the task log."""
    logs = deployment["root"] / "airflow" / "logs" / f"dag_id={MONITOR_DAG}"
    failing = logs / "run_id=backfill__2018-06-01T00:00:00+00:00" / "task_id=monitor"
    text = "".join(path.read_text() for path in failing.glob("attempt=*.log"))
    assert f"acs-employment* batch {FAILING}: failed (worst severity high)" in text
    passing = logs / "run_id=conf_batch" / "task_id=monitor"
    # the message's bold monitor name (Slack mrkdwn) is the notifier's own; the core logs "passed (...)"
    assert "acs-employment* batch" not in "".join(path.read_text() for path in passing.glob("attempt=*.log"))


def test_the_extra_link_opens_the_runs_report(deployment: dict[str, Any]) -> None:
    found = rows(
        deployment["db"],
        "SELECT run_id, value FROM xcom WHERE dag_id = :d AND task_id = 'monitor' "
        "AND key = '_link_DriftlineReportLink'",
        d=MONITOR_DAG,
    )
    links = {r["run_id"]: r["value"] if isinstance(r["value"], str) else str(r["value"]) for r in found}
    url = links["backfill__2018-06-01T00:00:00+00:00"]  # the failing run's link too
    assert url.startswith("http://127.0.0.1:") and url.endswith(f"/acs-employment/{FAILING}/report.html")
    with urllib.request.urlopen(url, timeout=10) as response:
        page = response.read().decode()
    assert FAILING in page and "acs-employment" in page
    assert links["ui_newest"].endswith(f"/{NEWEST}/report.html")
