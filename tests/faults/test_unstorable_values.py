"""A batch carrying values the history database would refuse (a NUL in a category, a column name longer
than the target column, a right-to-left override in a name) is stored, and the monitor's next run is
stored after it: nothing waits in the spool. A record the database still refuses is set aside, live or
spooled, and never holds back the runs after it; only an outage makes a run wait."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sqlalchemy import create_engine, select

from driftline import load_spec, run_monitor
from driftline.tasks.history.db import StoreUnavailable, open_store
from driftline.tasks.history.failures import failure_kind
from driftline.tasks.history.models import Incident, ResultRow, Run
from driftline.tasks.run.context import RunContext
from driftline.tasks.run.persist import persist_run
from driftline.tasks.run.spool import spool_run

LONG = "x" * 400
BIDI = "amount\u202egpj.exe"
NUL_CATEGORY = "lyon\x00evil"


def frame(n: int, seed: int, *, nasty: bool) -> pd.DataFrame:
    """A small labelled table; `nasty` puts a NUL category in `city` for a third of the rows."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    city = rng.choice(["paris", "rome", "oslo"], n).astype(object)
    if nasty:
        city[: n // 3] = NUL_CATEGORY
    return pd.DataFrame(
        {
            "city": city,
            LONG: rng.normal(0.0, 1.0, n) + (3.0 if nasty else 0.0),
            BIDI: rng.normal(10.0, 2.0, n),
            "label": label,
            "prediction": np.where(rng.random(n) < 0.8, label, 1 - label),
        }
    )


@pytest.fixture
def monitor(tmp_path: Path, database_url: str) -> Path:
    (tmp_path / "batches").mkdir()
    frame(800, 0, nasty=False).to_parquet(tmp_path / "reference.parquet")
    frame(600, 1, nasty=True).to_parquet(tmp_path / "batches" / "b1.parquet")
    frame(600, 2, nasty=False).to_parquet(tmp_path / "batches" / "b2.parquet")
    spec = {
        "name": "nasty",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric", "drift.categorical", "abnormal.nulls", "performance.overall"],
        "execution": {"isolation": "thread"},
        "store_url": database_url,
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "monitor.yaml"


def test_unstorable_values_are_stored_and_the_next_run_follows(monitor: Path, database_url: str) -> None:
    spec = load_spec(monitor)
    first = run_monitor(spec, "b1", retrain=False)
    assert first.stored.startswith("stored run"), first.stored
    second = run_monitor(spec, "b2", retrain=False)
    assert second.stored.startswith("stored run"), second.stored
    assert not list((monitor.parent / ".driftline" / "spool").glob("*"))

    engine = open_store(database_url)
    with engine.connect() as conn:
        runs = dict(conn.execute(select(Run.batch_id, Run.status)).all())
        rows = conn.execute(select(ResultRow).where(ResultRow.batch_id == "b1")).all()
        incidents = conn.execute(select(Incident.target)).scalars().all()
    engine.dispose()
    assert set(runs) == {"b1", "b2"} and "running" not in runs.values()
    targets = {row.target for row in rows}
    assert BIDI in targets  # stays data, unchanged
    long_rows = [row for row in rows if row.target.startswith("xxx")]
    assert long_rows and all(len(row.target) <= 300 for row in long_rows)
    assert any(row.details.get("target_full") == LONG for row in long_rows)
    stored_text = repr([(row.reason, row.details) for row in rows])
    assert "lyonevil" in stored_text and "\x00" not in stored_text and "\\x00" not in stored_text
    assert incidents and all(len(target) <= 300 for target in incidents)
    assert {r.target for r in first.results} >= {LONG, BIDI}  # the summary keeps the names as read


def overflowing(batch_id: str) -> dict:
    """A run record with a count no integer column takes: refused on PostgreSQL and on SQLite alike."""
    result = {"check": "abnormal.nulls", "target": "city", "metrics": {"null_share": 0.1}}
    return {
        "monitor": "nasty",
        "batch_id": batch_id,
        "batch_time": datetime(2026, 1, 1, tzinfo=UTC),
        "results": [{**result, "rows": 2**70, "reason": "nul \x00 here"}],
        "status": "passed",
        "worst_severity": "none",
        "rows": 10,
        "details": {},
    }


def stored_runs(url: str) -> dict[str, tuple[str, dict]]:
    engine = open_store(url)
    with engine.connect() as conn:
        rows = conn.execute(select(Run.batch_id, Run.status, Run.details)).all()
    engine.dispose()
    return {row.batch_id: (row.status, row.details) for row in rows}


def test_a_refused_run_is_set_aside_with_its_reason_and_the_next_one_is_stored(
    monitor: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    spec = load_spec(monitor)
    persisted = persist_run(RunContext.open(spec), overflowing("b0"))
    assert persisted.stored.startswith("set aside as"), persisted.stored
    spool = monitor.parent / ".driftline" / "spool"
    [rejected] = spool.iterdir()
    assert rejected.suffix == ".rejected" and "\\u0000" not in rejected.read_text()
    [line] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "monitor nasty batch b0" in line and str(rejected) in line and "\n" not in line
    status, details = stored_runs(database_url)["b0"]
    assert status == "error" and details["reason"].startswith("results refused by the history database")

    assert run_monitor(spec, "b2", retrain=False).stored.startswith("stored run")
    assert [p.suffix for p in spool.iterdir()] == [".rejected"]


def test_a_spooled_run_is_replayed_storable_or_set_aside_never_blocking(
    monitor: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Spooled by an earlier version: one record with a NUL (now storable) and one the database refuses."""
    spool = monitor.parent / ".driftline" / "spool"
    waiting = {**overflowing("b0"), "results": [{"check": "x", "target": "city\x00", "reason": "a\x00b"}]}
    spool_run(waiting, spool, database_url)
    spool_run(overflowing("b00"), spool, database_url)
    assert run_monitor(load_spec(monitor), "b2", retrain=False).stored.startswith("stored run")
    assert [p.name.split("__")[1] for p in spool.iterdir()] == ["b00"]
    assert {p.suffix for p in spool.iterdir()} == {".rejected"}
    runs = stored_runs(database_url)
    assert runs["b0"][0] == "passed" and runs["b2"][0] != "running" and "b00" not in runs
    [line] = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert line.startswith("monitor nasty batch b00: ")


def test_a_refused_value_is_rejected_and_a_lost_connection_is_transient(database_url: str) -> None:
    """Classified from what the databases really raise."""
    from sqlalchemy import text
    from sqlalchemy.exc import DataError, IntegrityError, OperationalError

    mute = text(
        'INSERT INTO alert_mutes (monitor, "check", target, until, created_at) '
        "VALUES ('m', :check, 't', '2026-01-01', '2026-01-01')"
    )
    engine = open_store(database_url)
    with engine.connect() as conn:
        with pytest.raises(Exception) as refused:
            conn.execute(text("UPDATE runs SET rows = :rows"), {"rows": 2**70})
        conn.rollback()
        conn.execute(mute, {"check": "c"})
        with pytest.raises(IntegrityError) as same_key:
            conn.execute(mute, {"check": "c"})
        conn.rollback()
        with pytest.raises(IntegrityError) as missing:
            conn.execute(mute, {"check": None})
    engine.dispose()
    assert failure_kind(refused.value) == "rejected"
    if database_url.startswith("postgresql"):
        assert isinstance(refused.value, DataError)
    assert failure_kind(same_key.value) == "transient"  # another writer of the key: the retry updates it
    assert failure_kind(missing.value) == "rejected"
    down = create_engine(
        "postgresql+psycopg://postgres@127.0.0.1:1/none", connect_args={"connect_timeout": 2}
    )
    with pytest.raises(OperationalError) as lost:
        down.connect()
    assert failure_kind(lost.value) == "transient"
    assert failure_kind(StoreUnavailable("history database is unavailable")) == "transient"
    assert failure_kind(ValueError("result x/y: rows = 'a' is not a number")) == "rejected"


def test_a_long_metric_name_is_cut_in_every_field_keyed_by_it_the_same_way_each_time() -> None:
    from driftline.tasks.history.storable import storable_result

    name = "m" * 150
    result = {
        "check": "c",
        "target": "t",
        "metrics": {name: 1.0, "psi": 2.0},
        "thresholds": {name: [1, 2, 3]},
    }
    first, again = storable_result(result), storable_result(result)
    [short] = [m for m in first["metrics"] if m != "psi"]
    assert first == again and len(short) == 100 and short.startswith("m" * 80)
    assert first["thresholds"] == {short: [1, 2, 3]} and first["details"]["metric_full"] == {short: name}
    assert storable_result({**result, "reason": "a\x00b\ud800"})["reason"] == "ab?"
