"""The SQL source: a query run through SQLAlchemy, streamed in chunks, its batch the rows of one time
window (`:start`, `:end`); connection and query errors name the database with its password masked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from driftline.tasks.sources.base import Batch, SourceError, batch_time_from_id, valid_batch_id
from driftline.tasks.sources.read_limits import DEFAULT_LIMITS, ReadLimits
from driftline.tasks.sources.tables import distinct_columns, within_limits
from driftline.tasks.tools.safe_text import first_line

# Rows fetched at a time from a SQL cursor: a SQL read holds typed columns, never the whole result as
# Python tuples.
SQL_CHUNK_ROWS = 50_000


def read_sql(url: str, query: str, params: dict[str, object] | None = None) -> pd.DataFrame:
    """Run a query through SQLAlchemy, streaming it in chunks; connection and SQL errors name the
    database (password hidden)."""
    with sql_connection(url) as conn:
        frame = streamed_frame(conn, query, params or {})
    from driftline.tasks.history.db import masked_url

    return distinct_columns(frame, f"query on {masked_url(url)}")


def streamed_frame(conn: Any, query: str, params: dict[str, Any]) -> pd.DataFrame:
    """The result of `query` on `conn`, fetched `SQL_CHUNK_ROWS` rows at a time from a server-side
    cursor, with the dtypes one whole read gives."""
    from sqlalchemy import text

    streamed = conn.execution_options(stream_results=True)
    return concat_chunks(list(pd.read_sql(text(query), streamed, params=params, chunksize=SQL_CHUNK_ROWS)))


@contextmanager
def sql_connection(url: str) -> Iterator[Any]:
    """A connection to `url`; a bad URL or a failing statement is a `SourceError` naming the database
    with its credentials masked."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError, StatementError

    from driftline.tasks.history.db import masked_url, scrubbed

    try:
        shown = masked_url(url)
        engine = create_engine(url)
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        raise SourceError(f"cannot use the SQL source URL: {type(exc).__name__}") from None
    try:
        with engine.connect() as conn:
            yield conn
    except SQLAlchemyError as exc:
        cause = exc.orig if isinstance(exc, StatementError) else None  # the driver's own error, if any
        reason = scrubbed(first_line(str(cause or exc)), url)
        raise SourceError(f"query on {shown} failed: {type(exc).__name__}: {reason}") from exc
    finally:
        engine.dispose()


def concat_chunks(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    """Chunks of one result as one frame with the dtypes a single read gives: a column whose chunks
    disagree (say, all null in one chunk, integers in another) is inferred again from its values."""
    if len(chunks) == 1:
        return chunks[0]
    frame = pd.concat(chunks, ignore_index=True)
    for column in frame.columns:
        if len({str(chunk[column].dtype) for chunk in chunks}) > 1:
            values = np.concatenate([chunk[column].to_numpy(dtype=object) for chunk in chunks])
            frame[column] = pd.Series(values, index=frame.index).infer_objects()
    return frame


def sql_window(
    batch_id: str | None, window_days: float, now: datetime | None = None
) -> tuple[str, datetime, datetime]:
    """Batch id and [start, end) window: the named day, or the latest complete window before `now`."""
    start: datetime | None
    if batch_id is None:
        now = now or datetime.now(UTC)
        end = now.replace(hour=0, minute=0, second=0, microsecond=0)
        start = end - timedelta(days=window_days)
        return start.strftime("%Y-%m-%d"), start, end
    start = batch_time_from_id(valid_batch_id(batch_id))
    if start is None:
        raise SourceError(f"batch id {batch_id!r} of a SQL source must be a date such as 2024-05-01")
    return batch_id, start, start + timedelta(days=window_days)


def load_sql_batch(
    url: str, query: str, batch_id: str | None, window_days: float, limits: ReadLimits = DEFAULT_LIMITS
) -> Batch:
    """The batch of one window from a SQL source (at most `limits.max_columns` columns); the query binds
    `:start` and `:end`."""
    batch_id, start, end = sql_window(batch_id, window_days)
    frame = read_sql(url, query, {"start": start, "end": end})
    return Batch(batch_id, within_limits(frame, "the batches query", limits), start)


@dataclass(frozen=True)
class QuerySource:
    """A spec's `sql:` source: the reference is the query's rows, a batch those of one window; the
    `page_by` key lets a partitioned run read a batch in pages."""

    url: str
    query: str
    window_days: float = 1.0
    page_by: str | None = None
    page_rows: int | None = None

    def describe(self) -> str:
        """The database, its password masked."""
        from driftline.tasks.history.db import masked_url

        return f"query on {masked_url(self.url)}"

    def require(self) -> None:
        """Nothing to look for before the run: the query names its own errors when it runs."""

    def identity(self) -> str | None:
        """None: a query's rows have no identity short of reading them, so a SQL reference is always read."""
        return None

    def list_batches(self) -> list[str]:
        """A SQL source's batches are windows named by their dates: nothing to list."""
        raise SourceError("a SQL batch source needs explicit batch ids (--batch 2024-05-01)")

    def read(self, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
        """Every row of the query (no window), within `limits`."""
        return within_limits(read_sql(self.url, self.query), "the reference query", limits)

    def read_batch(self, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
        """The rows of one window (the latest complete one when `batch_id` is None)."""
        return load_sql_batch(self.url, self.query, batch_id, self.window_days, limits)

    def read_labels(self, batch_id: str, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame | None:
        """The labels of one batch's window, None when no row has landed yet."""
        frame = self.read_batch(batch_id, limits).frame
        return frame if len(frame) else None
