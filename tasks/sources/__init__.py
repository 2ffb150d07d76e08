"""Where a monitor's data comes from: the `DataSource` protocol and its registry (`registry`), the file
source for local paths and object storage (`files`, over `storage` and `tables`), the SQL source
(`sql`), and what they share (`base`). docs/sources.md shows each source's spec and how to add one.

The names below are the ones the rest of driftline imports."""

from driftline.tasks.sources.base import (
    BATCH_ID,
    BATCH_ID_RULE,
    BATCH_PLACEHOLDER,
    Batch,
    BatchIdError,
    SourceError,
    batch_time_from_id,
    valid_batch_id,
)
from driftline.tasks.sources.files import (
    FileSource,
    batch_file,
    batch_partitions,
    is_parquet_file,
    is_partitioned,
    list_batch_ids,
    load_file_batch,
    partition_paths,
    partitions_time,
)
from driftline.tasks.sources.registry import DataSource, open_source, register_source
from driftline.tasks.sources.sql import (
    SQL_CHUNK_ROWS,
    QuerySource,
    load_sql_batch,
    read_sql,
    sql_connection,
    sql_window,
    streamed_frame,
)
from driftline.tasks.sources.storage import StorageError
from driftline.tasks.sources.tables import (
    PARQUET_SUFFIXES,
    RepeatedColumns,
    distinct_columns,
    parquet_shape,
    read_parquet_columns,
    read_parquet_head,
    read_table,
    within_limits,
)

__all__ = [
    "BATCH_ID",
    "BATCH_ID_RULE",
    "BATCH_PLACEHOLDER",
    "PARQUET_SUFFIXES",
    "SQL_CHUNK_ROWS",
    "Batch",
    "BatchIdError",
    "DataSource",
    "FileSource",
    "QuerySource",
    "RepeatedColumns",
    "SourceError",
    "StorageError",
    "batch_file",
    "batch_partitions",
    "batch_time_from_id",
    "distinct_columns",
    "is_parquet_file",
    "is_partitioned",
    "list_batch_ids",
    "load_file_batch",
    "load_sql_batch",
    "open_source",
    "parquet_shape",
    "partition_paths",
    "partitions_time",
    "read_parquet_columns",
    "read_parquet_head",
    "read_sql",
    "read_table",
    "register_source",
    "sql_connection",
    "sql_window",
    "streamed_frame",
    "valid_batch_id",
    "within_limits",
]
