"""Loading files, batch templates and SQL windows; unreadable input names the file."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy import create_engine

from driftline.tasks.sources import (
    SourceError,
    batch_time_from_id,
    list_batch_ids,
    load_file_batch,
    load_sql_batch,
    read_sql,
    read_table,
    sql_window,
)


def test_read_csv_and_parquet(tmp_path) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    frame.to_csv(tmp_path / "f.csv", index=False)
    frame.to_parquet(tmp_path / "f.parquet")
    assert read_table(tmp_path / "f.csv").equals(read_table(tmp_path / "f.parquet"))


def test_bad_files_are_named(tmp_path) -> None:
    with pytest.raises(SourceError, match=r"missing\.csv: no such file"):
        read_table(tmp_path / "missing.csv")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(SourceError, match=r"bad\.parquet: cannot parse as parquet"):
        read_table(tmp_path / "bad.parquet")
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(SourceError, match=r"unsupported file type '\.xlsx'"):
        read_table(tmp_path / "data.xlsx")


def test_batch_template_lists_in_natural_order_and_loads_newest(tmp_path) -> None:
    for name in ("batch-2", "batch-10", "batch-1"):
        pd.DataFrame({"v": [len(name)]}).to_csv(tmp_path / f"{name}.csv", index=False)
    template = str(tmp_path / "{batch}.csv")
    assert list_batch_ids(template) == ["batch-1", "batch-2", "batch-10"]
    batch = load_file_batch(template, None)
    assert batch.batch_id == "batch-10" and batch.frame["v"].tolist() == [8]
    with pytest.raises(SourceError, match="no batch file matches"):
        load_file_batch(str(tmp_path / "{batch}.parquet"), None)


def test_batch_time_from_id() -> None:
    assert batch_time_from_id("2024-05") == datetime(2024, 5, 1, tzinfo=UTC)
    assert batch_time_from_id("20240502") == datetime(2024, 5, 2, tzinfo=UTC)
    assert batch_time_from_id("week-3") is None


def test_sql_window_defaults_to_latest_complete_day() -> None:
    batch_id, start, end = sql_window(None, 1, now=datetime(2024, 5, 3, 14, 0, tzinfo=UTC))
    assert (batch_id, start, end) == (
        "2024-05-02",
        datetime(2024, 5, 2, tzinfo=UTC),
        datetime(2024, 5, 3, tzinfo=UTC),
    )
    with pytest.raises(SourceError, match="must be a date"):
        sql_window("latest", 1)


def test_sql_batch_binds_the_window(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'prod.db'}"
    engine = create_engine(url)
    pd.DataFrame({"day": ["2024-05-01", "2024-05-02", "2024-05-02"], "v": [1, 2, 3]}).to_sql("events", engine)
    engine.dispose()
    query = "select v from events where day >= date(:start) and day < date(:end)"
    batch = load_sql_batch(url, query, "2024-05-02", 1)
    assert batch.frame["v"].tolist() == [2, 3]


def test_a_query_returning_no_rows_is_a_source_error(tmp_path) -> None:
    """SQLAlchemy's own errors (here ResourceClosedError) carry no driver error in `.orig`."""
    url = f"sqlite:///{tmp_path / 'prod.db'}"
    with pytest.raises(
        SourceError, match=r"failed: ResourceClosedError: This result object does not return rows"
    ):
        read_sql(url, "create table events (v int)")


def test_sql_errors_hide_the_password() -> None:
    with pytest.raises(SourceError) as info:
        load_sql_batch("postgresql+psycopg://user:s3cret@127.0.0.1:1/db", "select 1", "2024-05-01", 1)
    assert "s3cret" not in str(info.value) and "127.0.0.1:1" in str(info.value)


@pytest.mark.parametrize("url", ["not a url", "nosuchdb+driver://user:s3cret@host/db"])
def test_malformed_sql_urls_are_source_errors_without_secrets(url: str) -> None:
    with pytest.raises(SourceError, match="cannot use the SQL source URL") as info:
        load_sql_batch(url, "select 1", "2024-05-01", 1)
    assert "s3cret" not in str(info.value)
