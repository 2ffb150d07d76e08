"""Reading one table file, local or remote: CSV with its dialect sniffed, or Parquet within the read
limits, with one-line errors naming the file; and the first rows or a few columns of a wide Parquet
file."""

from __future__ import annotations

import codecs
import csv
import gzip
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pandas as pd

from driftline.tasks.sources import storage
from driftline.tasks.sources.base import SourceError
from driftline.tasks.sources.read_limits import (
    DEFAULT_LIMITS,
    ReadLimitError,
    ReadLimits,
    read_parquet_within,
    refuse_bytes,
)
from driftline.tasks.sources.storage import Location
from driftline.tasks.tools.safe_text import first_line

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".gz", ".txt")


@storage.retrying
def read_table(path: Location, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
    """Read a CSV (separator and byte-order mark sniffed) or Parquet file, a local path or a URL, within
    `limits`; a missing, unreadable, too wide or too large file is a one-line `SourceError` naming it
    (a URL with its credentials masked). A read that fails transiently is read again whole."""
    shown = storage.masked(path)
    if not storage.exists(path):
        raise SourceError(f"{shown}: {'no such object' if storage.is_remote(path) else 'no such file'}")
    suffix = storage.suffix(path)
    try:
        if suffix in PARQUET_SUFFIXES:
            return distinct_columns(_read_parquet(path, limits), shown)
        if suffix in CSV_SUFFIXES:
            return within_limits(_read_csv(path, limits), shown, limits)
    except SourceError:
        raise
    except ReadLimitError as exc:
        raise SourceError(str(exc)) from None
    except Exception as exc:
        raise SourceError(_unreadable(path, exc)) from exc
    raise SourceError(f"{shown}: unsupported file type {suffix!r} (use .csv or .parquet)")


@contextmanager
def parquet_input(path: Location) -> Iterator[Path | IO[bytes]]:
    """What pyarrow opens a Parquet file from: a local path (read natively), or an object open through
    its filesystem (its footer first, then only the byte ranges asked for)."""
    if not storage.is_remote(path):
        yield storage.local_path(path)
        return
    with storage.opened(path) as file:
        yield file


def _read_parquet(path: Location, limits: ReadLimits) -> pd.DataFrame:
    """A Parquet file within `limits`."""
    with parquet_input(path) as source:
        return read_parquet_within(source, limits, storage.masked(path))


def _read_csv(path: Location, limits: ReadLimits) -> pd.DataFrame:
    """A CSV file with its dialect sniffed; a remote object larger than the read budget is refused
    before it is downloaded (it is parsed whole)."""
    encoding, separator = csv_dialect(path)
    if not storage.is_remote(path):
        return pd.read_csv(storage.local_path(path), sep=separator, encoding=encoding)
    refuse_bytes(storage.masked(path), limits.memory_mb, storage.size(path))
    compression = "gzip" if storage.suffix(path) == ".gz" else None
    with storage.opened(path) as file:
        return pd.read_csv(file, sep=separator, encoding=encoding, compression=compression)


class RepeatedColumns(SourceError):
    """A table that gives one column name to several columns (a file's schema or its pandas metadata,
    a query's aliases): no check could tell them apart."""


def _repeated(origin: str, names: list[str]) -> str:
    return f"{origin}: column name(s) {names} appear more than once (each column needs its own name)"


def within_limits(frame: pd.DataFrame, origin: str, limits: ReadLimits) -> pd.DataFrame:
    """`frame` when it has at most `limits.max_columns` columns, else a `SourceError` naming `origin`."""
    try:
        limits.check_columns(origin, len(frame.columns))
    except ReadLimitError as exc:
        raise SourceError(str(exc)) from None
    return frame


def distinct_columns(frame: pd.DataFrame, origin: str) -> pd.DataFrame:
    """`frame` when each of its columns has its own name, else a `RepeatedColumns` naming `origin` (the
    file or database) and the repeated names."""
    if frame.columns.is_unique:
        return frame
    repeated = sorted({str(name) for name in frame.columns[frame.columns.duplicated()]})
    raise RepeatedColumns(_repeated(origin, repeated))


def _unreadable(path: Location, exc: Exception) -> str:
    """One line on why a file cannot be read: its repeated column names, else the reader's first line."""
    shown, suffix = storage.masked(path), storage.suffix(path)
    repeated = _repeated_parquet_columns(path) if suffix in PARQUET_SUFFIXES else []
    if repeated:
        return _repeated(shown, repeated)
    reason = storage.masked(first_line(str(exc)))
    return f"{shown}: cannot parse as {suffix.lstrip('.')} ({type(exc).__name__}: {reason})"


def _repeated_parquet_columns(path: Location) -> list[str]:
    """Column names a Parquet file's schema gives more than once (none when the footer is unreadable)."""
    import pyarrow.parquet as pq

    try:
        with storage.opened(path) as file:
            names = pq.read_schema(file).names
    except Exception:
        return []
    return sorted(name for name, n in Counter(names).items() if n > 1)


# Separators a CSV file may use (`;` where the decimal mark is a comma, tab in Excel's Unicode text),
# sniffed from the file's first `SNIFF_BYTES`.
CSV_SEPARATORS = ",;\t|"
SNIFF_BYTES = 64 * 1024


def csv_dialect(path: Location) -> tuple[str, str]:
    """The encoding (from a byte-order mark, else UTF-8) and the separator of a CSV file (a comma
    unless its first lines, header included, are consistently split by another of `CSV_SEPARATORS`)."""
    with storage.opened(path) as raw:
        file = gzip.GzipFile(fileobj=raw) if storage.suffix(path) == ".gz" else raw
        head = file.read(SNIFF_BYTES)
    encoding = "utf-16" if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    lines = head.decode(encoding, errors="ignore").splitlines()
    whole = lines[:-1] if len(head) == SNIFF_BYTES and len(lines) > 1 else lines
    try:
        separator = csv.Sniffer().sniff("\n".join(whole), delimiters=CSV_SEPARATORS).delimiter
    except csv.Error:
        return encoding, ","
    return encoding, separator if whole and separator in whole[0] else ","


# --- Parquet read a few columns at a time (wide tables) -------------------------------------------------

# Columns decoded together when the first rows of a Parquet file are read: the reader holds a page or
# two of each column it decodes whatever the rows asked for, so a wide file's head is read in slices.
HEAD_COLUMNS_AT_A_TIME = 50
# Read buffer of the head's column slices: without one the reader fetches whole column chunks.
HEAD_BUFFER_BYTES = 64 * 1024


@contextmanager
def _parquet_errors(path: Path) -> Iterator[None]:
    """A missing file, and any failure to read it, as the one-line `SourceError` `read_table` gives."""
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    try:
        yield
    except RepeatedColumns:
        raise
    except Exception as exc:
        raise SourceError(_unreadable(path, exc)) from exc


def parquet_shape(path: Path) -> tuple[pd.DataFrame, int]:
    """An empty frame with a Parquet file's columns and dtypes (as `read_table` gives them), and its
    row count, both from the file's footer."""
    import pyarrow.parquet as pq

    with _parquet_errors(path):
        file = pq.ParquetFile(path)
        return distinct_columns(
            file.schema_arrow.empty_table().to_pandas(), str(path)
        ), file.metadata.num_rows


def read_parquet_columns(path: Path, columns: list[str]) -> pd.DataFrame:
    """Only `columns` of a Parquet file, with the dtypes `read_table` gives (float32 stays float32),
    each column held once: read without fetching ahead and handed to pandas without a copy."""
    import pyarrow.parquet as pq

    with _parquet_errors(path):
        table = pq.read_table(path, columns=columns, pre_buffer=False, use_pandas_metadata=True)
        return distinct_columns(table.to_pandas(split_blocks=True, self_destruct=True), str(path))


def read_parquet_head(path: Path, rows: int) -> pd.DataFrame:
    """The first `rows` rows of a Parquet file (all of them when it has fewer), as `read_table` gives
    them, decoded `HEAD_COLUMNS_AT_A_TIME` columns at a time so that it costs its rows, not the file.
    The pages decoded are handed back to the system, not kept for reuse by processes forked later."""
    import pyarrow as pa

    with _parquet_errors(path):
        frame = distinct_columns(_head_table(path, rows).to_pandas(), str(path))
    pa.default_memory_pool().release_unused()
    return frame


def _head_table(path: Path, rows: int) -> Any:
    """The first `rows` rows of a Parquet file as one Arrow table, read in slices of columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path, pre_buffer=False, buffer_size=HEAD_BUFFER_BYTES)
    names = file.schema_arrow.names
    slices = [
        _first_rows(file, names[start : start + HEAD_COLUMNS_AT_A_TIME], rows)
        for start in range(0, len(names), HEAD_COLUMNS_AT_A_TIME)
    ]
    columns = [column for piece in slices for column in piece.columns]
    return pa.Table.from_arrays(columns, schema=file.schema_arrow)


def _first_rows(file: Any, names: list[str], rows: int) -> Any:
    """The first `rows` rows of the columns `names` of an open Parquet file, as one Arrow table."""
    import pyarrow as pa

    batches, have = [], 0
    for batch in file.iter_batches(batch_size=max(rows, 1), columns=names, use_pandas_metadata=False):
        batches.append(batch.slice(0, rows - have))
        have += batches[-1].num_rows
        if have >= rows:
            break
    return pa.Table.from_batches(batches, schema=pa.schema([file.schema_arrow.field(n) for n in names]))
