"""The limits a data file is read within in the run's own process: a few kilobytes of dictionary-encoded
Parquet text can decode to gigabytes, and every column costs each run its own results, so the decoded
size and the column count are measured before any value is expanded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd

# Megabytes one file may decode to in the driver's process unless `execution.read_memory_mb` says
# otherwise (a spec's default is the larger of this and its workers' `memory_mb`).
READ_MEMORY_MB = 2048
# Columns a batch or reference may have unless `execution.max_columns` says otherwise: each column gets
# its own results from most checks, so a run's time grows with them.
MAX_COLUMNS = 10_000
MB = 1024 * 1024


class ReadLimitError(ValueError):
    """A table past a read limit; the message names the file (or query), the limit and its spec key."""


@dataclass(frozen=True)
class ReadLimits:
    """What one table may take in the run's own process: decoded megabytes and columns."""

    memory_mb: int = READ_MEMORY_MB
    max_columns: int = MAX_COLUMNS

    def check_columns(self, origin: str, count: int) -> None:
        """A `ReadLimitError` when a table from `origin` has more than `max_columns` columns."""
        if count > self.max_columns:
            raise ReadLimitError(
                f"{origin}: {count:,} columns, more than execution.max_columns ({self.max_columns:,}); "
                "select the columns to monitor or raise the limit"
            )


# The limits of a read that is given none (outside a monitor's spec: the example retraining flow).
DEFAULT_LIMITS = ReadLimits()


def read_parquet_within(
    path: Path | IO[bytes], limits: ReadLimits, origin: str | None = None
) -> pd.DataFrame:
    """A Parquet file (a local path, or an open remote object named `origin`) as `pd.read_parquet`
    gives it, refused with a `ReadLimitError` when its footer lists more than `limits.max_columns`
    columns or it would decode past `limits.memory_mb`: first on the footer's page sizes, then with its
    dictionary-encoded text read as dictionaries and measured before they are expanded. The first
    check reads only the footer, so a remote object refused by it costs no column data fetched."""
    import pyarrow.parquet as pq

    origin = origin or str(path)
    file = pq.ParquetFile(path)
    limits.check_columns(origin, len(file.schema_arrow.names))
    _refuse_past(origin, limits.memory_mb, _page_sizes(file.metadata))
    encoded = _dictionary_text_columns(file)
    table = pq.read_table(path, read_dictionary=encoded)
    sizes: dict[str, int] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        sizes[name] = sizes.get(name, 0) + (_decoded_bytes(column) if name in encoded else column.nbytes)
    _refuse_past(origin, limits.memory_mb, sizes)
    for name in encoded:
        table = _decoded_column(table, name, file.schema_arrow.field(name))
    return table.to_pandas()


def refuse_bytes(origin: str, budget_mb: int, size: int) -> None:
    """A `ReadLimitError` when a text file of `size` bytes, read whole before it is parsed, is larger than
    `budget_mb`: its parsed frame takes at least about as much."""
    if size > budget_mb * MB:
        raise ReadLimitError(
            f"{origin}: {size / MB:,.0f} MB to read, more than the read budget of {budget_mb:,} MB "
            "(execution.read_memory_mb)"
        )


def _refuse_past(path: str, budget_mb: int, sizes: dict[str, int]) -> None:
    """A `ReadLimitError` when the columns' `sizes` (bytes) add up to more than `budget_mb`."""
    total = sum(sizes.values())
    if total <= budget_mb * MB:
        return
    largest = max(sizes, key=lambda name: sizes[name])
    raise ReadLimitError(
        f"{path}: decodes to {total / MB:,.0f} MB, more than the read budget of {budget_mb:,} MB "
        f"(execution.read_memory_mb); column {largest!r} alone takes {sizes[largest] / MB:,.0f} MB"
    )


def _page_sizes(metadata: Any) -> dict[str, int]:
    """Bytes of each top-level column's pages once decompressed, from the file's footer: a lower
    bound of its decoded size (dictionary pages count once, not once a row)."""
    sizes: dict[str, int] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            top = chunk.path_in_schema.split(".", 1)[0]
            sizes[top] = sizes.get(top, 0) + chunk.total_uncompressed_size
    return sizes


def _dictionary_text_columns(file: Any) -> list[str]:
    """Top-level text or binary columns stored with a dictionary page in some row group: the ones whose
    values may repeat a long dictionary entry once a row."""
    import pyarrow as pa

    metadata = file.metadata
    text = {
        field.name
        for field in file.schema_arrow
        if pa.types.is_string(field.type)
        or pa.types.is_large_string(field.type)
        or pa.types.is_binary(field.type)
        or pa.types.is_large_binary(field.type)
    }
    encoded = {
        chunk.path_in_schema
        for group in range(metadata.num_row_groups)
        for chunk in map(metadata.row_group(group).column, range(metadata.num_columns))
        if chunk.has_dictionary_page
    }
    return sorted(text & encoded)


def _decoded_bytes(column: Any) -> int:
    """Bytes a column read as dictionaries takes once they are expanded (values and offsets)."""
    import pyarrow.compute as pc

    total = 0
    for chunk in column.chunks:
        lengths = pc.take(pc.binary_length(chunk.dictionary), chunk.indices)
        total += (pc.sum(lengths).as_py() or 0) + 8 * (len(chunk) + 1)
    return total


def _decoded_column(table: Any, name: str, field: Any) -> Any:
    """`table` with its dictionary column `name` expanded back to the file's type `field`."""
    values = table.column(name).cast(field.type)
    return table.set_column(table.column_names.index(name), field, values)
