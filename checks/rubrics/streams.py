"""Reading Arrow inputs batch by batch, and looking rows of the task data up by `_index_`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from driftline.checks.errors import CheckInputError

INDEX, REPLICATION = "_index_", "_replication_"


def batches(data: Any, what: str) -> Iterator[pa.RecordBatch]:
    """Record batches of a dataset, table, record batch or iterable of batches."""
    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table) or hasattr(data, "to_batches"):
        yield from data.to_batches()
    elif isinstance(data, Iterable):
        for batch in data:
            if isinstance(batch, pa.Table):
                yield from batch.to_batches()
            elif isinstance(batch, pa.RecordBatch):
                yield batch
            else:
                raise CheckInputError(f"{what}: expected Arrow record batches, got {type(batch).__name__}")
    else:
        raise CheckInputError(f"{what}: expected an Arrow dataset, table or record batches, got {type(data)}")


def column(batch: pa.RecordBatch, name: str, what: str) -> pa.Array:
    if name not in batch.schema.names:
        raise CheckInputError(f"{what} has no column {name!r} (columns: {batch.schema.names})")
    return batch.column(name)


class TruthBuffer:
    """One column of the task data (the truths) looked up by `_index_`, merged with the predictions.

    When the task data and the predictions are both sorted by `_index_`, only the window of rows the
    current prediction batch needs is held (memory does not grow with the number of documents); a
    request for an index already dropped re-reads the whole task data once (a table or dataset only).
    """

    def __init__(self, task_data: Any, name: str) -> None:
        self.source, self.name = task_data, name
        self.stream = batches(task_data, "task_data")
        self.index = np.zeros(0, dtype=np.int64)
        self.values: pa.Array | None = None
        self.floor = np.iinfo(np.int64).min
        self.done = False
        self.full = False
        self.sorted = True

    def _append(self, batch: pa.RecordBatch) -> None:
        index = column(batch, INDEX, "task_data").to_numpy(zero_copy_only=False).astype(np.int64)
        values = column(batch, self.name, "task_data")
        if len(index) and (np.any(np.diff(index) <= 0) or (len(self.index) and index[0] <= self.index[-1])):
            self.sorted = False
        self.index = np.concatenate([self.index, index])
        self.values = values if self.values is None else pa.concat_arrays([self.values, values])

    def _load_all(self) -> None:
        if isinstance(self.source, Iterator):
            raise CheckInputError(
                "task_data: its rows are not in _index_ order with the predictions and it cannot be "
                "re-read (pass a table or dataset, or sort both by _index_)"
            )
        self.index, self.values, self.done = np.zeros(0, dtype=np.int64), None, True
        for batch in batches(self.source, "task_data"):
            self._append(batch)
        order = np.argsort(self.index, kind="stable")
        self.index = self.index[order]
        self.values = self.values.take(pa.array(order)) if self.values is not None else None
        if len(self.index) and np.any(np.diff(self.index) == 0):
            raise CheckInputError("task_data: _index_ values repeat")
        self.floor, self.sorted, self.full = np.iinfo(np.int64).min, True, True

    def lookup(self, wanted: np.ndarray) -> pa.Array:
        """The column's values for the `_index_` values `wanted`, in that order."""
        if len(wanted) and wanted.min() < self.floor:
            self._load_all()
        while not self.done and (len(self.index) == 0 or self.index[-1] < wanted.max()) and self.sorted:
            batch = next(self.stream, None)
            if batch is None:
                self.done = True
            else:
                self._append(batch)
        if not self.sorted:
            self._load_all()
        pos = np.searchsorted(self.index, wanted)
        if len(self.index) == 0 or self.values is None:
            raise CheckInputError(
                f"predictions: _index_ {wanted[:5].tolist()} not in task_data (it is empty)"
            )
        found = (pos < len(self.index)) & (self.index[np.minimum(pos, len(self.index) - 1)] == wanted)
        if not found.all():
            raise CheckInputError(f"predictions: _index_ {wanted[~found][:5].tolist()} not in task_data")
        taken = self.values.take(pa.array(pos))
        dropped = 0 if self.full else int(np.searchsorted(self.index, wanted.min()))
        if dropped:
            self.floor = int(wanted.min())
            self.index = self.index[dropped:]
            self.values = self.values.slice(dropped)
        return taken
