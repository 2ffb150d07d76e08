"""Loading the reference snapshot and production batches from files or SQL, with clear errors."""

from __future__ import annotations

import codecs
import csv
import glob
import gzip
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.tasks.read_limits import DEFAULT_LIMITS, ReadLimitError, ReadLimits, read_parquet_within
from driftline.tasks.safe_text import first_line

log = logging.getLogger(__name__)

BATCH_PLACEHOLDER = "{batch}"
PARQUET_SUFFIXES = (".parquet", ".pq")
# A batch id names a file (through `{batch}`), a report folder and the runs of the history, so it is one
# plain path component: a letter, digit or `_` first, then letters, digits and `_ . - : = + @ , ~ ( )`
# or spaces, at most 200 characters, never `..`. Path separators and control characters are refused.
BATCH_ID = re.compile(r"(?!.*\.\.)\w[\w.:=+@,~() -]{0,199}")
BATCH_ID_RULE = (
    "use letters, digits, spaces and _.-:=+@,~() (a letter, digit or _ first; no '..'; at most 200)"
)


class SourceError(ValueError):
    """A source that cannot be read: the message names the file, query or batch."""


class BatchIdError(SourceError):
    """A batch id (given, listed from file names or stored) that could escape its folder or the terminal."""


def valid_batch_id(batch_id: str, origin: str = "") -> str:
    """`batch_id` when it matches `BATCH_ID`, else a `BatchIdError` naming it (and `origin`, the file
    it came from) so that it never reaches a path template, a report folder or the history."""
    if BATCH_ID.fullmatch(batch_id):
        return batch_id
    where = f"{origin}: " if origin else ""
    raise BatchIdError(f"{where}batch id {batch_id!r} is not allowed: {BATCH_ID_RULE}")


@dataclass(frozen=True)
class Batch:
    """One production batch: its id, its frame and the time it stands for."""

    batch_id: str
    frame: pd.DataFrame
    batch_time: datetime


def read_table(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
    """Read a CSV (separator and byte-order mark sniffed) or Parquet file within `limits`; a missing,
    unreadable, too wide or too large file is a one-line `SourceError` naming it."""
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix in PARQUET_SUFFIXES:
            return distinct_columns(read_parquet_within(path, limits), str(path))
        if suffix in (".csv", ".gz", ".txt"):
            encoding, separator = csv_dialect(path)
            return within_limits(pd.read_csv(path, sep=separator, encoding=encoding), str(path), limits)
    except RepeatedColumns:
        raise
    except ReadLimitError as exc:
        raise SourceError(str(exc)) from None
    except Exception as exc:
        raise SourceError(_unreadable(path, exc)) from exc
    raise SourceError(f"{path}: unsupported file type {suffix!r} (use .csv or .parquet)")


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


def _unreadable(path: Path, exc: Exception) -> str:
    """One line on why a file cannot be read: its repeated column names, else the reader's first line."""
    repeated = _repeated_parquet_columns(path) if path.suffix.lower() in PARQUET_SUFFIXES else []
    if repeated:
        return _repeated(str(path), repeated)
    kind = path.suffix.lower().lstrip(".")
    return f"{path}: cannot parse as {kind} ({type(exc).__name__}: {first_line(str(exc))})"


def _repeated_parquet_columns(path: Path) -> list[str]:
    """Column names a Parquet file's schema gives more than once (none when the footer is unreadable)."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception:
        return []
    return sorted(name for name, n in Counter(names).items() if n > 1)


# Separators a CSV file may use (`;` where the decimal mark is a comma, tab in Excel's Unicode text),
# sniffed from the file's first `SNIFF_BYTES`.
CSV_SEPARATORS = ",;\t|"
SNIFF_BYTES = 64 * 1024


def csv_dialect(path: Path) -> tuple[str, str]:
    """The encoding (from a byte-order mark, else UTF-8) and the separator of a CSV file (a comma
    unless its first lines, header included, are consistently split by another of `CSV_SEPARATORS`)."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rb") as file:
        head = file.read(SNIFF_BYTES)
    encoding = "utf-16" if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    lines = head.decode(encoding, errors="ignore").splitlines()
    whole = lines[:-1] if len(head) == SNIFF_BYTES and len(lines) > 1 else lines
    try:
        separator = csv.Sniffer().sniff("\n".join(whole), delimiters=CSV_SEPARATORS).delimiter
    except csv.Error:
        return encoding, ","
    return encoding, separator if whole and separator in whole[0] else ","


def list_batch_ids(template: str) -> list[str]:
    """Batch ids matching a path template with a `{batch}` placeholder, sorted (oldest first)."""
    if is_partitioned(template):
        return _partitioned_batch_ids(template)
    if BATCH_PLACEHOLDER not in template:
        return [_fixed_batch_id(Path(template).stem)] if Path(template).exists() else []
    prefix, suffix = template.split(BATCH_PLACEHOLDER, 1)
    pattern = re.compile(re.escape(prefix) + "(.+?)" + re.escape(suffix) + "$")
    found = {m.group(1): p for p in glob.glob(prefix + "*" + suffix) if (m := pattern.match(p))}
    return _listed_ids(found)


def _listed_ids(found: dict[str, str]) -> list[str]:
    """The valid batch ids of `found` (id: the file or folder it came from), sorted; the others are
    stray files, skipped with one warning naming the first of them (an explicit `--batch` still
    refuses an id that is not valid)."""
    stray = sorted(path for batch_id, path in found.items() if not BATCH_ID.fullmatch(batch_id))
    if stray:
        log.warning(
            "skipped %d file(s) whose name is not a batch id, such as %r: %s",
            len(stray),
            stray[0],
            BATCH_ID_RULE,
        )
    return sorted((batch_id for batch_id in found if BATCH_ID.fullmatch(batch_id)), key=_natural_key)


def _fixed_batch_id(name: str) -> str:
    """The id of the one batch a template without `{batch}` names: its file or folder name when that is
    a valid batch id (`data/parts/*.parquet` is not), else "batch"."""
    return name if BATCH_ID.fullmatch(name) else "batch"


# --- partitioned batches: a directory or a glob of Parquet files per batch -----------------------------

GLOB_CHARACTERS = frozenset("*?[")


def is_partitioned(template: str) -> bool:
    """Whether a batch path template names a set of Parquet partitions rather than one file: it has
    glob characters (`data/{batch}/*.parquet`) or ends with a slash (`data/{batch}/`)."""
    return bool(GLOB_CHARACTERS & set(template)) or template.endswith(("/", "\\"))


def is_parquet_file(template: str) -> bool:
    """Whether a batch path template names one Parquet file a batch (`data/{batch}.parquet`), which a
    partitioned run reads by row groups."""
    return not is_partitioned(template) and Path(template).suffix.lower() in PARQUET_SUFFIXES


def _partitioned_batch_ids(template: str) -> list[str]:
    """Batch ids of a partitioned template: the values of `{batch}` for which a partition exists."""
    if BATCH_PLACEHOLDER not in template:
        return [_fixed_batch_id(Path(template.rstrip("/")).name)] if partition_paths(template) else []
    prefix, suffix = template.split(BATCH_PLACEHOLDER, 1)
    head = suffix.partition("/")[0]
    if "/" not in suffix or GLOB_CHARACTERS & set(head):
        raise SourceError(f"{template!r}: in a partitioned batch path, {BATCH_PLACEHOLDER} names a folder")
    pattern = re.compile(re.escape(prefix) + "([^/]+?)" + re.escape(head) + "$")
    found = {
        m.group(1): p
        for p in glob.glob(prefix + "*" + head)
        if (m := pattern.match(p)) and partition_paths(template.replace(BATCH_PLACEHOLDER, m.group(1)))
    }
    return _listed_ids(found)


def partition_paths(pattern: str) -> list[Path]:
    """The Parquet files of one batch (a glob, or every Parquet file under a directory), in natural
    order of their paths."""
    if pattern.endswith(("/", "\\")) or Path(pattern).is_dir():
        root = Path(pattern)
        found = [p for p in root.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES and p.is_file()]
    else:
        found = [Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file()]
    return sorted(found, key=lambda p: _natural_key(str(p)))


def named_or_newest(template: str, batch_id: str | None, nothing: str) -> str:
    """`batch_id` (validated), or when None the newest batch `template` lists; none is a `SourceError`
    that says `nothing` (such as "no batch file matches") of the template."""
    if batch_id is not None:
        return valid_batch_id(batch_id)
    ids = list_batch_ids(template)
    if not ids:
        raise SourceError(f"{nothing} {template!r}")
    return ids[-1]


def batch_partitions(template: str, batch_id: str | None) -> tuple[str, list[Path]]:
    """The batch id (the newest when None) and its partition files; none found is a `SourceError`."""
    batch_id = named_or_newest(template, batch_id, "no batch partitions match")
    paths = partition_paths(template.replace(BATCH_PLACEHOLDER, batch_id))
    if not paths:
        raise SourceError(f"batch {batch_id!r}: no Parquet partition matches {template!r}")
    unsupported = [p for p in paths if p.suffix.lower() not in PARQUET_SUFFIXES]
    if unsupported:
        raise SourceError(f"{unsupported[0]}: partitions must be Parquet files (.parquet)")
    return batch_id, paths


def partitions_time(batch_id: str, paths: list[Path]) -> datetime:
    """The time a partitioned batch stands for: its id's date, else its newest partition's mtime."""
    return batch_time_from_id(batch_id) or max(_file_time(p) for p in paths)


def load_partitioned_batch(template: str, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
    """Every partition of one batch read (each within `limits`) and concatenated in order (the
    single-process path)."""
    batch_id, paths = batch_partitions(template, batch_id)
    frames = [read_table(p, limits) for p in paths]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return Batch(batch_id, frame, partitions_time(batch_id, paths))


def _natural_key(text: str) -> list[object]:
    """`text` split into its runs of decimal digits (as numbers) and the text between, so that `b2`
    sorts before `b10`; digit-like characters that are not decimal digits (`²`, `①`) stay text."""
    return [int(part) if part.isdecimal() else part for part in re.split(r"(\d+)", text)]


def batch_time_from_id(batch_id: str) -> datetime | None:
    """The date a batch id names (`2024-05-01`, `2024-05`, `20240501`), or None."""
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d", "%Y-%m", "%Y%m%d"):
        try:
            return datetime.strptime(batch_id, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load_file_batch(template: str, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
    """The batch `batch_id` (the newest when None) from a path template, read within `limits`."""
    if is_partitioned(template):
        return load_partitioned_batch(template, batch_id, limits)
    batch_id, path = batch_file(template, batch_id)
    frame = read_table(path, limits)
    return Batch(batch_id, frame, batch_time_from_id(batch_id) or _file_time(path))


def batch_file(template: str, batch_id: str | None) -> tuple[str, Path]:
    """The batch id (the newest when None) and the file a single-file template names for it."""
    batch_id = named_or_newest(template, batch_id, "no batch file matches")
    return batch_id, Path(template.replace(BATCH_PLACEHOLDER, batch_id))


def _file_time(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


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
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

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
        reason = scrubbed(first_line(str(exc.orig or exc)), url)
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
