"""SQL batches in pages: half-open ranges of an orderable key column, planned from the key column
alone, each read by its own worker, so a partitioned run never holds a SQL batch whole."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from driftline.tasks.sources import SQL_CHUNK_ROWS, SourceError, sql_connection, streamed_frame


@dataclass(frozen=True)
class SqlPage:
    """One page of a SQL batch: the rows whose `key` lies in [lo, hi) (no upper bound when `hi` is
    None), or whose key is NULL (`nulls`), with the batch position of its first row and its row count.
    Its worker reads it with the query wrapped as a subquery; rows come in `key` order."""

    url: str = field(repr=False)
    query: str
    params: dict[str, Any]
    key: str
    lo: Any
    hi: Any
    nulls: bool
    offset: int
    rows: int

    @property
    def name(self) -> str:
        """The page as it is named in errors."""
        if self.nulls:
            return f"SQL page {self.key} IS NULL"
        return f"SQL page {self.key} in [{self.lo!r}, {'...' if self.hi is None else repr(self.hi)})"

    def read(self) -> pd.DataFrame:
        """The page's rows; a count other than the planned one (the batch changed since it was
        planned) is a `SourceError`, since the batch positions of later pages would be wrong."""
        with sql_connection(self.url) as conn:
            column = _quoted(conn, self.key)
            params = dict(self.params)
            if self.nulls:
                where = f"{column} IS NULL"
            else:
                where, params["page_lo"] = f"{column} >= :page_lo", self.lo
                if self.hi is not None:
                    where, params["page_hi"] = f"{where} AND {column} < :page_hi", self.hi
            sql = f"SELECT * FROM ({_subquery(self.query)}) AS q WHERE {where} ORDER BY {column}"
            frame = streamed_frame(conn, sql, params)
        if len(frame) != self.rows:
            raise SourceError(
                f"{self.name}: read {len(frame)} rows where {self.rows} were planned; "
                "the batch changed while it was read"
            )
        return frame


def plan_sql_pages(url: str, query: str, params: dict[str, Any], key: str, page_rows: int) -> list[SqlPage]:
    """Pages of about `page_rows` rows in `key` order, planned from a stream of the key column alone
    (no other column is read): a page starts at every `page_rows`-th key, moved back to the first row
    of its key when that key is tied (equal keys are never split), and rows with a NULL key form a last
    page. A `key` that the query does not return is a `SourceError` naming it."""
    from sqlalchemy import text

    with sql_connection(url) as conn:
        column = _require_column(conn, query, params, key)
        source = f"FROM ({_subquery(query)}) AS q"
        nulls = conn.execute(text(f"SELECT COUNT(*) {source} WHERE {column} IS NULL"), params).scalar_one()
        keys = conn.execution_options(stream_results=True).execute(
            text(f"SELECT {column} {source} WHERE {column} IS NOT NULL ORDER BY {column}"), params
        )
        bounds, total = _page_bounds(keys.scalars().partitions(SQL_CHUNK_ROWS), page_rows)
    ends = [*bounds[1:], (None, total)] if bounds else []  # a page ends where the next begins
    pages = [
        SqlPage(url, query, params, key, lo, hi, False, first, end - first)
        for (lo, first), (hi, end) in zip(bounds, ends, strict=True)
    ]
    if nulls or not pages:
        pages.append(SqlPage(url, query, params, key, None, None, True, total, int(nulls)))
    return pages


def _page_bounds(chunks: Iterable[Sequence[Any]], page_rows: int) -> tuple[list[tuple[Any, int]], int]:
    """From sorted keys read in chunks: each page's lower bound and the position of its first row
    (where its key value first occurs), and the number of keys. Equality is all that is compared, so
    the database's collation decides the order."""
    bounds: list[tuple[Any, int]] = []
    seen, run_start, previous = 0, 0, None
    for chunk in chunks:
        values = np.empty(len(chunk), dtype=object)
        values[:] = chunk
        if not len(values):
            continue
        changes = np.empty(len(values), dtype=bool)
        changes[0] = seen == 0 or values[0] != previous
        changes[1:] = values[1:] != values[:-1]
        starts = np.flatnonzero(changes) + seen
        first_candidate = -(-seen // page_rows) * page_rows
        for position in range(first_candidate, seen + len(values), page_rows):
            before = np.searchsorted(starts, position, side="right") - 1
            first = int(starts[before]) if before >= 0 else run_start
            if not bounds or bounds[-1][1] != first:
                bounds.append((values[position - seen], first))
        if len(starts):
            run_start = int(starts[-1])
        previous, seen = values[-1], seen + len(values)
    return bounds, seen


def _subquery(query: str) -> str:
    """A query as it can stand in parentheses (no trailing semicolon)."""
    return query.strip().rstrip(";").rstrip()


def _quoted(conn: Any, column: str) -> str:
    """A column name quoted for the connection's dialect where it needs quoting."""
    return conn.dialect.identifier_preparer.quote(column)


def _require_column(conn: Any, query: str, params: dict[str, Any], key: str) -> str:
    """The key column, quoted, once the query is known to return it; else a `SourceError` naming it."""
    from sqlalchemy import text

    result = conn.execute(text(f"SELECT * FROM ({_subquery(query)}) AS q WHERE 1 = 0"), params)
    columns = list(result.keys())
    result.close()
    if key not in columns:
        raise SourceError(
            f"batches.sql.page_by: the query returns no column {key!r} (its columns: {', '.join(columns)})"
        )
    return _quoted(conn, key)
