"""A SQL batch read in pages of a key column: the planner's page bounds (ties, NULL keys), a
partitioned run on SQLite and PostgreSQL through the process pool and the Dask mapper, whose stored
rows equal a single-process run on the same query, and chunked plain SQL reads keeping their dtypes."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sqlalchemy import create_engine, text

from driftline.checks.columns import Columns
from driftline.tasks.config.spec import SpecError, load_spec, parse_spec
from driftline.tasks.run.partitioned import read_partition, run_partitioned
from driftline.tasks.run.pipeline import run_monitor
from driftline.tasks.run.sql_pages import plan_sql_pages
from driftline.tasks.sources import SourceError, read_sql
from driftline.tasks.sources import sql as sql_source
from tests.scale.conftest import BATCH, ROLES, write_monitor
from tests.scale.helpers import assert_same_history, mixed_frame, stored

ROWS = 3000
# The batch's day and the day after (rows of the next day must stay out of the batch window).
DAYS = (datetime(2024, 5, 1, 8, tzinfo=UTC), datetime(2024, 5, 2, 8, tzinfo=UTC))
COLUMNS = "id, k, x, ties, wide, cat, label, score, prediction"
QUERY = f"SELECT {COLUMNS} FROM events WHERE ts >= :start AND ts < :end ORDER BY id"


def batch_frame() -> pd.DataFrame:
    """The batch with a unique `id` (rows stored in shuffled order) and a text key `k` with ties
    (40 values) and NULLs, then as many rows of the next day."""
    rng = np.random.default_rng(5)
    frame = mixed_frame(ROWS, seed=12, shift=0.5)
    k = np.array([f"k{v:02d}" for v in rng.integers(0, 40, ROWS)], dtype=object)
    k[rng.random(ROWS) < 0.04] = None
    frame.insert(0, "k", pd.array(k, dtype="str"))
    frame.insert(0, "id", np.arange(ROWS))
    frame["ts"] = DAYS[0]
    later = mixed_frame(ROWS, seed=13).assign(id=np.arange(ROWS, 2 * ROWS), k="k00", ts=DAYS[1])
    whole = pd.concat([frame, later], ignore_index=True)
    return whole.iloc[rng.permutation(len(whole))]


@pytest.fixture
def source_url(database_url: str) -> str:
    """The batch as table `events` in a SQLite file, then in a fresh PostgreSQL database."""
    engine = create_engine(database_url)
    batch_frame().to_sql("events", engine, index=False)
    engine.dispose()
    return database_url


def write_spec(reference: Path, folder: Path, url: str, **sql: object) -> Path:
    """A monitor over the SQL batch, with its own history database in `folder`."""
    return write_monitor(reference.parent, folder, {"sql": {"url": url, "query": QUERY, **sql}}, "sqlpages")


def test_paged_run_on_a_unique_key_stores_the_single_process_rows(
    monitor_data: Path, tmp_path: Path, source_url: str
) -> None:
    """Five pages of at most 700 rows in a pool of two worker processes; failing row ids are batch
    positions, equal to the single read's because both read in `id` order."""
    reference = monitor_data / "reference.parquet"
    paged = write_spec(reference, tmp_path / "paged", source_url, page_by="id", page_rows=700)
    single = write_spec(reference, tmp_path / "single", source_url)
    pages = plan_sql_pages(source_url, QUERY, window(), "id", 700)
    assert [p.rows for p in pages] == [700, 700, 700, 700, 200]
    assert [p.offset for p in pages] == [0, 700, 1400, 2100, 2800]
    one = run_monitor(load_spec(single), BATCH, alerts=False, retrain=False)
    many = run_partitioned(load_spec(paged), BATCH, alerts=False, retrain=False)
    assert many.rows == one.rows == ROWS
    assert (many.status, many.worst_severity) == (one.status, one.worst_severity)
    assert_same_history(paged, single, BATCH)
    out_of_range = [r for r in many.to_dict()["results"] if r["check"] == "abnormal.out_of_range"]
    assert any(r["details"]["failing_ids"] for r in out_of_range)


def test_paged_run_on_dask_workers(monitor_data: Path, tmp_path: Path) -> None:
    """The same SQLite batch, each page read by a Dask worker process (the plain driver on a Dask client)."""
    from distributed import Client, LocalCluster

    from driftline.tasks.run.driver import Driver

    url = f"sqlite:///{tmp_path / 'source.db'}"
    engine = create_engine(url)
    batch_frame().to_sql("events", engine, index=False)
    engine.dispose()
    reference = monitor_data / "reference.parquet"
    paged = write_spec(reference, tmp_path / "paged", url, page_by="id", page_rows=1000)
    single = write_spec(reference, tmp_path / "single", url)
    run_monitor(load_spec(single), BATCH, alerts=False, retrain=False)
    with (
        LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        summary = run_partitioned(
            load_spec(paged), BATCH, driver=Driver(dask_client=client), alerts=False, retrain=False
        )
        ran = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert any("evaluate_partition" in prefix for prefix in ran), ran
    assert summary.rows == ROWS
    assert_same_history(paged, single, BATCH)


def window() -> dict[str, datetime]:
    return {"start": datetime(2024, 5, 1, tzinfo=UTC), "end": datetime(2024, 5, 2, tzinfo=UTC)}


def test_pages_keep_ties_together_and_read_null_keys_last(source_url: str) -> None:
    """Pages by the text key `k`: every row read exactly once, no key value split across pages, the
    NULL keys in a last page; the counts are pinned against pandas on the whole window."""
    whole = read_sql(source_url, QUERY, window())
    pages = plan_sql_pages(source_url, QUERY, window(), "k", 500)
    frames = [p.read() for p in pages]
    assert [len(f) for f in frames] == [p.rows for p in pages]
    assert [p.offset for p in pages] == list(np.cumsum([0] + [p.rows for p in pages[:-1]]))
    assert pages[-1].nulls and pages[-1].rows == int(whole["k"].isna().sum()) > 0
    assert sum(p.rows for p in pages) == len(whole) == ROWS
    assert sorted(pd.concat(frames)["id"]) == sorted(whole["id"])
    owners = pd.concat(
        [f["k"].dropna().drop_duplicates().to_frame().assign(page=i) for i, f in enumerate(frames)]
    )
    assert owners["k"].is_unique  # a tied key never straddles two pages
    counts = whole["k"].value_counts()
    assert all(p.rows >= counts[p.lo] for p in pages if not p.nulls)  # a page holds its first key's ties
    assert len(pages) > 4


def test_paged_run_on_a_tied_key_with_nulls(monitor_data: Path, tmp_path: Path, source_url: str) -> None:
    """Paged by `k` (ties, NULLs): the same stored rows as the single read. Failing ids are the `id`
    column here and every failing id is kept, so they compare as sets whatever the order of ties."""
    reference = tmp_path / "reference.parquet"  # the `id` role must be in the reference too
    frame = pd.read_parquet(monitor_data / "reference.parquet")
    frame.assign(id=np.arange(len(frame))).to_parquet(reference, index=False)
    roles = {**ROLES, "id": "id"}
    checks = [
        "drift.numeric",
        "drift.categorical",
        {"check": "abnormal.nulls", "params": {"max_failing_ids": ROWS}},
        {"check": "abnormal.out_of_range", "params": {"max_failing_ids": ROWS}},
        "performance.overall",
    ]
    specs = {}
    for name, sql in (("paged", {"page_by": "k", "page_rows": 400}), ("single", {})):
        path = write_spec(reference, tmp_path / name, source_url, **sql)
        data = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**data, "columns": roles, "checks": checks}))
        specs[name] = path
    run_monitor(load_spec(specs["single"]), BATCH, alerts=False, retrain=False)
    run_partitioned(load_spec(specs["paged"]), BATCH, alerts=False, retrain=False)

    def ids_as_sets(row: dict) -> dict:
        if "failing_ids" in (row.get("details") or {}):
            row["details"]["failing_ids"] = sorted(row["details"]["failing_ids"])
        return row

    single = stored(specs["single"], BATCH)
    assert any(r["details"].get("failing_ids") for r in single if r.get("details"))
    assert_same_history(specs["paged"], specs["single"], BATCH, ids_as_sets)


def test_a_missing_page_column_is_a_source_error_naming_it(
    monitor_data: Path, tmp_path: Path, source_url: str
) -> None:
    paged = write_spec(monitor_data / "reference.parquet", tmp_path, source_url, page_by="no_such_key")
    with pytest.raises(SourceError, match=r"page_by.*'no_such_key'.*its columns: id, k, x"):
        run_partitioned(load_spec(paged), BATCH, alerts=False, retrain=False)


def test_page_keys_in_the_spec() -> None:
    """`page_rows` alone is refused; a SQL batch without `page_by` is refused for a partitioned run."""
    base = {"name": "m", "reference": {"path": "r.parquet"}, "checks": ["drift.numeric"]}
    sql = {"url": "sqlite://", "query": "select 1"}
    with pytest.raises(SpecError, match="page_rows needs page_by"):
        parse_spec({**base, "batches": {"sql": {**sql, "page_rows": 10}}})
    with pytest.raises(SpecError, match="page_rows"):
        parse_spec({**base, "batches": {"sql": {**sql, "page_by": "id", "page_rows": 0}}})
    paged = parse_spec({**base, "batches": {"sql": {**sql, "page_by": "id"}}})
    assert paged.batches.sql is not None and paged.batches.sql.rows_a_page == 500_000
    with pytest.raises(SpecError, match="page_by"):
        run_partitioned(parse_spec({**base, "batches": {"sql": sql}}), "2024-05-01")


def test_an_empty_window_is_one_empty_page_and_an_empty_run(
    monitor_data: Path, tmp_path: Path, source_url: str
) -> None:
    """A window with no rows: one empty page; the run is `empty` with every check skipped, as the
    single-process run of the same window."""
    empty = {"start": datetime(2030, 1, 1, tzinfo=UTC), "end": datetime(2030, 1, 2, tzinfo=UTC)}
    pages = plan_sql_pages(source_url, QUERY, empty, "id", 10)
    assert [(p.nulls, p.rows) for p in pages] == [(True, 0)]
    assert pages[0].read().empty
    reference = monitor_data / "reference.parquet"
    paged = write_spec(reference, tmp_path / "paged", source_url, page_by="id")
    single = write_spec(reference, tmp_path / "single", source_url)
    one = run_monitor(load_spec(single), "2030-01-01", alerts=False, retrain=False)
    many = run_partitioned(load_spec(paged), "2030-01-01", alerts=False, retrain=False)
    assert many.status == one.status == "empty" and many.rows == 0
    assert many.to_dict()["results"] == one.to_dict()["results"]


def test_a_page_of_nulls_takes_the_batch_dtypes(tmp_path: Path) -> None:
    """A later page whose column is all NULL reads as objects; in a partition task it takes the first
    page's dtype (float for integers, as a whole read with NULLs gives)."""
    url = f"sqlite:///{tmp_path / 'source.db'}"
    engine = create_engine(url)
    frame = pd.DataFrame({"id": range(10), "v": [1.5] * 5 + [None] * 5, "n": [1] * 5 + [None] * 5})
    frame.assign(s=["a"] * 5 + [None] * 5).to_sql("t", engine, index=False)
    engine.dispose()
    first, second = plan_sql_pages(url, "SELECT * FROM t", {}, "id", 5)
    schema = first.read().iloc[:0]
    assert second.read()[["v", "n", "s"]].dtypes.tolist() == [object, object, object]
    aligned = read_partition(second, Columns(), None, schema)
    assert aligned["v"].dtype == "float64" and aligned["n"].dtype == "float64"
    assert aligned["s"].dtype == schema["s"].dtype and aligned.index.tolist() == list(range(5, 10))


def test_chunked_reads_keep_the_dtypes_of_one_read(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of 3 rows where nulls sit in some chunks only: integers that gain a null later, a float
    and a text column null for a whole chunk, a column of nulls only, timestamps and decimals."""
    engine = create_engine(database_url)
    postgres = engine.dialect.name == "postgresql"
    n = 10
    with engine.begin() as conn:
        number = "NUMERIC(10, 2)" if postgres else "NUMERIC"
        stamp = "TIMESTAMP WITH TIME ZONE" if postgres else "TIMESTAMP"
        conn.execute(
            text(
                f"CREATE TABLE t (i INTEGER, late INTEGER, f REAL, s TEXT, empty TEXT, "
                f"d {number}, at {stamp}, flag BOOLEAN)"
            )
        )
        rows = [
            {
                "i": j,
                "late": None if j == 8 else j,
                "f": None if j < 3 else j / 4,
                "s": None if 3 <= j < 6 else f"s{j}",
                "empty": None,
                "d": Decimal(j) / 4 if postgres else j / 4,
                "at": None if j < 3 else datetime(2024, 5, 1, j, tzinfo=UTC),
                "flag": None if j == 1 else j % 2 == 0,
            }
            for j in range(n)
        ]
        conn.execute(text("INSERT INTO t VALUES (:i, :late, :f, :s, :empty, :d, :at, :flag)"), rows)
        whole = pd.read_sql(text("SELECT * FROM t ORDER BY i"), conn)
    engine.dispose()
    monkeypatch.setattr(sql_source, "SQL_CHUNK_ROWS", 3)
    chunked = read_sql(database_url, "SELECT * FROM t ORDER BY i")
    pd.testing.assert_frame_equal(chunked, whole)
    assert chunked["late"].dtype == "float64" and chunked["i"].dtype == "int64"
